"""Touches: where the generic picture would mislead, a puzzle's scene is adjusted or replaced, as the
puzzle's own records ask (fields of `Puzzle`, never its number):

* `register_tensor`: a tensor computed in registers only, drawn dashed (flash attention's scores);
* `looped_along`: tensors a program walks whole in loop steps along a dimension the grid tiles elsewhere;
* `sliding_window`: one step of a loop over output pixels, its window and its pixel (the convolution);
* `split_k`: which part takes which of K's chunks (the split-K matmuls);
* `strided_inputs`: a strided view drawn as its channel planes, its strides in words;
* `autotune`: the block size is the autotuner's to pick;
* `shared_rows`: output rows that every program adds into, after the rows each program owns;
* `tile_order`, `tile_once`, `tensor_lists`: a picture of their own (tile_order.py, multi_tensor.py).
"""

from __future__ import annotations

from dataclasses import replace

from puzzles.course.picture_hooks import LoopedAlong, RegisterTensor, SharedRows, SlidingWindow
from puzzles.course.puzzle import SplitK, cdiv
from puzzles.diagrams.multi_tensor import draw_multi_tensor
from puzzles.diagrams.scene import Item, Scene, size_names
from puzzles.diagrams.tile_order import draw_persistent_tiles, draw_tile_order


def apply_touches(scene: Scene) -> None:
    """Adjust the generic scene for each record its puzzle carries (in place)."""
    puzzle = scene.puzzle
    if puzzle.looped_along is not None:
        _show_looped(scene, puzzle.looped_along)
    if puzzle.register_tensor is not None:
        _show_register_tensor(scene, puzzle.register_tensor)
    if puzzle.sliding_window is not None:
        _show_window(scene, puzzle.sliding_window)
    if puzzle.split_k is not None:
        _show_split_k(scene, puzzle.split_k)
    if puzzle.strided_inputs:
        _show_strided(scene)
    if puzzle.autotune:
        _note_autotuned_block(scene)
    if puzzle.shared_rows is not None:
        _show_shared_rows(scene, puzzle.shared_rows)
    if puzzle.tile_order is not None:  # the order of the tiles, not the placeholder tensors
        scene.custom = draw_tile_order
    if puzzle.tile_once is not None:  # which program's loop takes which tile
        scene.custom = draw_persistent_tiles
    if puzzle.tensor_lists is not None:  # the spec's flat tensors hide the lesson
        scene.custom = draw_multi_tensor


def _show_looped(scene: Scene, looped: LoopedAlong) -> None:
    """The looped tensors get a dimension of their own along `dim` (its label says the loop's steps), and a
    dimension the generic scene gave `block` as an orphan loop block is shown whole."""
    s, dims = scene.sizes, scene.dims
    if looped.dim not in dims or looped.block not in s:
        return
    for dim in dims.values():
        if dim.block_name == looped.block and dim.expr != looped.dim:
            dim.block, dim.block_name, dim.kind, dim.light, dim.strong = None, None, "full", None, [(0, dim.size)]
            dim.unit = 1 if dim.size <= 16 else dim.unit
    step = s[looped.block]
    along = dims[looped.dim]
    walked = replace(along, block=step, block_name=looped.block, kind="loop", grid_axis=None,
                     strong=[(0, min(step, along.size))], light=(0, cdiv(along.size, step) * step))
    for item in scene.items:
        if item.name in looped.tensors:
            item.dims = [walked if d is along else d for d in item.dims]


def _show_register_tensor(scene: Scene, tensor: RegisterTensor) -> None:
    """A tensor that exists only in registers: drawn dashed, before the output, as the picture's centre."""
    dims = scene.dims
    if all(d in dims for d in tensor.dims):
        item = Item(tensor.name, "virtual", "float32", [dims[d] for d in tensor.dims], caption=tensor.caption)
        scene.items.insert(len(scene.items) - 1, item)
        scene.anchor = item


def _show_window(scene: Scene, window: SlidingWindow) -> None:
    """The program loops over pixels; show one window and the pixel it makes, near the bottom edge
    (where the window is masked)."""
    s, dims = scene.sizes, scene.dims
    rows, cols, height, width = window.rows, window.cols, window.height, window.width
    if not all(k in s for k in (rows, cols, height, width)):
        return
    h, w = max(s[rows] - s[height] // 2 - 1, 0), max(s[cols] // 2 - 2, 0)
    for dim in (rows, cols):
        dims[dim].kind = "loop"
        dims[dim].light = (0, dims[dim].size)
    for item in scene.items:
        if item.name == window.input:
            item.strong = {rows: [(h, h + s[height])], cols: [(w, w + s[width])]}
        elif item.role == "output":
            item.strong = {rows: [(h, h + 1)], cols: [(w, w + 1)]}
        else:  # the filter: all of it, every step
            item.light = {height: None, width: None}
    scene.notes.append(
        f"one step of the program's loop: output pixel (h, w) = ({h}, {w}) from the {s[height]} × {s[width]} "
        f"window at rows {h}…{h + s[height] - 1}, columns {w}…{w + s[width] - 1} of {window.input}; rows past "
        f"{rows} = {s[rows]} are masked (zero)"
    )
    x = next((i for i in scene.items if i.name == window.input), None)
    z = next((i for i in scene.items if i.role == "output"), None)
    if x and z:
        scene.arrows.append((x, (h + s[height] / 2, w + s[width] / 2), z, (h + 0.5, w + 0.5), "Σ k·window"))


def _show_split_k(scene: Scene, split: SplitK) -> None:
    """Part s (its grid axis) takes the K chunks s, s + SPLIT_K, ...; each chunk is labelled with its part."""
    s, axis = scene.sizes, split.grid_axis
    if axis >= len(scene.grid) or split.length not in scene.dims or not scene.dims[split.length].block:
        return
    part, parts = scene.pid[axis], s[split.parts]
    scene.axis_notes[axis] = f"axis {axis}: part s of {split.length}, {split.parts} = {parts}; here s = {part}"
    k = scene.dims[split.length]
    n_chunks = cdiv(k.size, k.block)
    chunks = list(range(part, n_chunks, parts))
    for e, dim in scene.dims.items():
        if split.length in size_names(e, s) and dim.block:
            dim.strong = [(i * dim.block, (i + 1) * dim.block) for i in chunks]
            dim.light = None
    for item in scene.items:
        for dim in item.dims:
            if split.length in size_names(dim.expr, s) and dim.block and dim.unit == dim.block:
                item.cell_labels[dim.expr] = [str(i % parts) for i in range(cdiv(dim.size, dim.block))]
    listed = ", ".join(str(i) for i in chunks)
    scene.notes.append(
        f"part s = {part} takes the {split.length} chunks s, s + {split.parts}, … of {k.block_name} = {k.block} rows "
        f"(here chunks {listed}; the small numbers say which part takes each chunk) and atomically adds its "
        "partial tile into z"
    )


def _show_strided(scene: Scene) -> None:
    """A strided input of rows x columns x channels is drawn as its channel planes, each rows x columns
    like the output (so N0 runs across in both), and the storage strip under the picture (strided.py)
    shows its strides and the gaps between its rows."""
    for item in scene.items:
        strides = scene.puzzle.strided_inputs.get(item.name)
        if strides is None or len(item.dims) != 3:
            continue
        rows, cols, channels = item.dims
        plane = replace(channels, expr="channel c")
        item.dims = [plane, rows, cols]
        item.caption = "red; green and blue behind"
        values = ", ".join(f"{st} = {scene.sizes[st]}" for st in strides)
        scene.notes.append(f"{item.name} is a strided view ({values}), not a packed array: between its pixels lie "
                           "other bytes of the storage, and the grader reports a read of any of them; the kernel "
                           "steps by the strides")


def _note_autotuned_block(scene: Scene) -> None:
    """B0 comes from the autotuner's configs; the drawn one is only an example."""
    scene.notes.append(f"B0 = {scene.sizes['B0']} is drawn as an example: the autotuner picks B0 from the "
                       "kernel's configs (each config's B0 is graded), and the grid asks for it with meta[\"B0\"]")


def _show_shared_rows(scene: Scene, shared: SharedRows) -> None:
    """The output's rows past `shared.rows` are no block of their own: the program's block there is its own
    rows plus the shared rows, which every program adds into. A whole row in one block (BN >= N) is drawn in
    elements, not as one cell."""
    s = scene.sizes
    rows, block = s[shared.rows], s[shared.block]
    own = scene.dims.get(shared.rows)
    output = next((i for i in scene.items if i.role == "output"), None)
    if own is None or output is None or len(output.dims) != 2:
        return
    first = own.strong[0][0] if own.strong else 0
    height, width = output.dims
    height.block, height.block_name, height.kind, height.unit = block, shared.block, "grid", own.unit
    height.strong = [(first, min(first + block, rows)), (rows, rows + len(shared.names))]
    for dim in scene.dims.values():
        if dim.kind == "loop" and dim.block and dim.block >= dim.size:  # the row in one block
            dim.kind, dim.light, dim.strong, dim.unit = "full", None, [(0, dim.size)], cdiv(dim.size, 10)
    names = " and ".join(shared.names)
    scene.notes.append(
        f"rows {first}…{min(first + block, rows) - 1} are this program's own ({shared.block} = {block} rows); rows "
        f"{rows}…{rows + len(shared.names) - 1} of {output.name} ({names}) are every program's: each adds its "
        "rows' partial sums into them with tl.atomic_add"
    )
