"""Per-puzzle touches: where the generic picture would mislead, a puzzle's scene is adjusted
(flash attention's scores, the convolution's window, split-K's chunks, puzzle 19's strides) or
replaced by a picture of its own (puzzle 16's tile order, puzzle 21's tensor lists).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from puzzles.diagrams.multi_tensor import draw_multi_tensor
from puzzles.diagrams.scene import Item, Scene, _names
from puzzles.diagrams.tile_order import _draw_tile_order
from puzzles.puzzle import cdiv


def _touch_flash_attention(scene: Scene) -> None:
    """Puzzle 9: the N0 x T scores exist only in registers; draw them, dashed, in the middle."""
    dims = scene.dims
    if "N0" in dims and "T" in dims:
        scores = Item("q·k", "virtual", "float32", [dims["N0"], dims["T"]], caption="scores, in registers only")
        scene.items.insert(len(scene.items) - 1, scores)
        scene.anchor = scores


def _touch_convolution(scene: Scene) -> None:
    """Puzzle 10: the program loops over pixels; show one window and the pixel it makes."""
    s, dims = scene.sizes, scene.dims
    if not all(k in s for k in ("H", "W", "KH", "KW")):
        return
    h, w = max(s["H"] - s["KH"] // 2 - 1, 0), max(s["W"] // 2 - 2, 0)
    for dim in ("H", "W"):
        dims[dim].kind = "loop"
        dims[dim].light = (0, dims[dim].size)
    for item in scene.items:
        if item.name == "x":
            item.strong = {"H": [(h, h + s["KH"])], "W": [(w, w + s["KW"])]}
        elif item.role == "output":
            item.strong = {"H": [(h, h + 1)], "W": [(w, w + 1)]}
        else:  # the filter: all of it, every step
            item.light = {"KH": None, "KW": None}
    scene.notes.append(
        f"one step of the program's loop: output pixel (h, w) = ({h}, {w}) from the {s['KH']} × {s['KW']} window "
        f"at rows {h}…{h + s['KH'] - 1}, columns {w}…{w + s['KW'] - 1} of x; rows past H = {s['H']} are masked (zero)"
    )
    x = next((i for i in scene.items if i.name == "x"), None)
    z = next((i for i in scene.items if i.role == "output"), None)
    if x and z:
        scene.arrows.append((x, (h + s["KH"] / 2, w + s["KW"] / 2), z, (h + 0.5, w + 0.5), "Σ k·window"))


def _touch_splitk(scene: Scene) -> None:
    """Puzzles 17 and 18: part s (grid axis 2) takes the K chunks s, s + SPLIT_K, ..."""
    s = scene.sizes
    split = [a for a, d in enumerate(scene.axis_dims) if d is None and "SPLIT_K" in scene.axis_notes[a]]
    if not split or "K" not in scene.dims or not scene.dims["K"].block:
        return
    part, parts = scene.pid[split[0]], s["SPLIT_K"]
    scene.axis_notes[split[0]] = f"axis {split[0]}: part s of K, SPLIT_K = {parts}; here s = {part}"
    k = scene.dims["K"]
    n_chunks = cdiv(k.size, k.block)
    chunks = list(range(part, n_chunks, parts))
    for e, dim in scene.dims.items():
        if "K" in _names(e, s) and dim.block:
            dim.strong = [(i * dim.block, (i + 1) * dim.block) for i in chunks]
            dim.light = None
    for item in scene.items:
        for dim in item.dims:
            if "K" in _names(dim.expr, s) and dim.block and dim.unit == dim.block:
                item.cell_labels[dim.expr] = [str(i % parts) for i in range(cdiv(dim.size, dim.block))]
    listed = ", ".join(str(i) for i in chunks)
    scene.notes.append(
        f"part s = {part} takes the K chunks s, s + SPLIT_K, … of {k.block_name} = {k.block} rows (here chunks "
        f"{listed}; the small numbers say which part takes each chunk) and atomically adds its partial tile into z"
    )


def _touch_tile_order(scene: Scene) -> None:
    """Puzzle 16: the interesting picture is the order of the tiles, not the placeholder tensors."""
    scene.custom = _draw_tile_order


def _touch_strided(scene: Scene) -> None:
    """Puzzle 19: the input is a view of rows x columns x channels. It is drawn as its channel planes,
    each rows x columns like the output (so N0 runs across in both), and the storage strip under the
    picture (strided.py) shows its strides and the gaps between its rows."""
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
                           "other bytes of the storage, which the grader guards; the kernel steps by the strides")


def _touch_autotune(scene: Scene) -> None:
    """Puzzle 20: B0 comes from the autotuner's configs; the drawn one is only an example."""
    if scene.puzzle.extra.get("autotune"):
        scene.notes.append(f"B0 = {scene.sizes['B0']} is drawn as an example: the autotuner picks B0 from the "
                           "kernel's configs (each config's B0 is graded), and the grid asks for it with meta[\"B0\"]")


def _touch_multi_tensor(scene: Scene) -> None:
    """Puzzle 21: the spec's flat tensors hide the lesson; draw the tensors, their chunks and the map."""
    scene.custom = draw_multi_tensor


_TOUCHES: dict[int, Callable[[Scene], None]] = {
    9: _touch_flash_attention,
    10: _touch_convolution,
    16: _touch_tile_order,
    17: _touch_splitk,
    18: _touch_splitk,
    19: _touch_strided,
    20: _touch_autotune,
    21: _touch_multi_tensor,
}
