"""Step 2 of grading: each size's inputs and expected output (the sizes themselves are resolved in the
job: puzzles/grading/job.py).

A `Case` is one size made concrete: a guarded arena of random inputs and a poisoned output, the
grid, and what the spec returns for those inputs (`make_case(job, ...)`; `case_from_spec` without a job).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from puzzles.course.puzzle import OutputParts, Puzzle, Reduction, Sizes, SplitK, TileOnce, default_grid
from puzzles.course.spec import ParsedSpec, SpecError, parse_spec
from puzzles.grading.inputs import build_arena, poison_, random_tensor
from puzzles.grading.job import GradingJob
from puzzles.grading.layouts import storage_numel, strided_layout, strided_view, strides_of
from puzzles.running.recording import StridedLayout


@dataclass
class Case:
    sizes: Sizes
    seed: int
    grid: tuple[int, ...]
    arena: Any
    input_names: list[str]
    expected: torch.Tensor
    zero_init: bool = False
    rtol: float = 1e-3
    atol: float = 1e-3
    row_tolerance: bool = False
    guarded: list[str] | None = None  # regions no store may touch, when more than the kernel's inputs
    relink: Callable[[Any], None] | None = None  # rewrites an address table for another arena (GPU copy)
    split_k: SplitK | None = None  # the split-K contract to check from the recorded accesses
    tile_once: TileOnce | None = None  # every output tile stored by one program, once (puzzle 30)
    reduction: Reduction | None = None  # the axis the kernel loops over: rows no load reached are named
    # What the spec gives for a contiguous reading of the strided inputs (puzzle 19): a kernel that
    # ignores the strides it is given writes this.
    contiguous_expected: torch.Tensor | None = None
    # The strided inputs' layouts: the access check reports a read between a view's elements.
    layouts: dict[str, StridedLayout] = field(default_factory=dict)
    # Computes the puzzle's likely mistakes and the output each gives on these inputs (a wrong output matching
    # one is told which slip it is): only when an output is wrong, never for a passing run (puzzle 12's slips
    # were most of its cases' time). `mistaken` holds the result.
    slips: Callable[[], list[tuple[str, torch.Tensor]]] | None = None
    # The sentences of the slips recognised by the rows they get wrong, not their values (`Mistake.by_rows`).
    slips_by_rows: frozenset[str] = frozenset()
    parts: OutputParts | None = None  # results packed into the output (puzzle 26's dx, dw, db): named in verdicts

    @functools.cached_property
    def mistaken(self) -> list[tuple[str, torch.Tensor]]:
        """(the slip's sentence at these sizes, the output it gives), for each likely slip computable here."""
        return self.slips() if self.slips is not None else []


def make_case(job: GradingJob, sizes: Sizes, index: int) -> Case:
    """The job's case at `sizes`, drawn from input stream `index` (`job.run_streams`), from its parsed spec, its
    puzzle and its seed."""
    return case_from_spec(job.parsed_spec, job.puzzle, sizes, job.seed, index)


def case_from_spec(spec: ParsedSpec | Callable[..., Any], p: Puzzle | None, sizes: Sizes, seed: int,
                   index: int) -> Case:
    """The inputs of the `index`-th size, and what the spec returns for them (a spec function is read once per
    process, `parse_spec`). Every size reports the run's `seed`, which reproduces all of them (each size draws
    from its own stream of it). For a caller without a job: a class's grader recomputing a learner's cases, a
    test."""
    parsed = spec if isinstance(spec, ParsedSpec) else parse_spec(spec)
    scale = p.input_scale(index) if p else 1.0
    if p is not None and p.tensor_lists is not None:  # one allocation per tensor, and tables of them
        from puzzles.grading.tensor_lists import TensorLists, build

        arena, pointers, guarded, expected, relink = build(parsed, p.tensor_lists, sizes, seed + index, scale)
        count = len(TensorLists.lengths(sizes))  # each list end to end, as the spec sees it
        flat = {name: torch.cat([arena.tensors[f"{name}[{k}]"] for k in range(count)]) for name in p.tensor_lists.lists}
        return Case(sizes, seed, p.grid(sizes), arena, pointers, expected, rtol=p.rtol, atol=p.atol,
                     guarded=guarded, relink=relink,
                     slips=_slips(p, flat, {}, sizes))
    inputs, out = parsed.signature()
    shapes = {t.name: (t.shape(sizes), t.dtype) for t in inputs}
    shapes[out.name] = (out.shape(sizes), out.dtype)
    # A strided input lives in a flat storage (the arena guards all of it); the spec sees the view.
    strided = {n: strides_of(names, sizes) for n, names in (p.strided_inputs if p else {}).items()}
    views = dict(shapes)
    for name, strides in strided.items():
        shapes[name] = ((storage_numel(shapes[name][0], strides),), shapes[name][1])
    arena = build_arena(shapes)
    gen = torch.Generator().manual_seed(seed + index)
    for t in inputs:
        arena.tensors[t.name].copy_(random_tensor(shapes[t.name][0], t.dtype, gen, scale))
    # A puzzle may shape some inputs so that its known bugs fail at every seed (puzzle 9's keys
    # grow along the row, so the running maximum changes between chunks).
    draw = p.draw_inputs if p else None
    for name, tensor in (draw(sizes, index, gen) if draw else {}).items():
        arena.tensors[name].copy_(tensor)
    seen = {n: strided_view(arena.tensors[n], views[n][0], s) for n, s in strided.items()}
    if p is not None and p.output_init == "zeros":
        arena.tensors[out.name].zero_()
    else:
        poison_(arena.tensors[out.name])
    expected = parsed.call([seen.get(t.name, arena.tensors[t.name]).clone() for t in inputs], sizes)
    name = parsed.fn.__name__
    if not isinstance(expected, torch.Tensor):
        raise SpecError(f"{name} must return a tensor, returned {type(expected).__name__}")
    if tuple(expected.shape) != shapes[out.name][0] or expected.dtype != out.dtype:
        raise SpecError(
            f"{name} returned {expected.dtype} of shape {tuple(expected.shape)} but its annotation says "
            f"{out.dtype} of shape {shapes[out.name][0]}")
    grid = (p.grid if p else default_grid)(sizes)
    rtol, atol = (p.rtol, p.atol) if p else (1e-3, 1e-3)
    zero_init = p is not None and p.output_init == "zeros"
    names = [t.name for t in inputs]
    row = p is not None and p.tolerance == "row"
    contiguous = None
    if strided:
        read = {n: _contiguous_reading(arena.tensors[n], views[n][0]) for n in strided}
        if all(t is not None for t in read.values()):
            contiguous = parsed.call([read.get(t.name, arena.tensors[t.name]).clone() for t in inputs], sizes)
    # A slip may read a strided input's gaps (a hard-coded stride): it gets a view of the whole storage.
    slips = _slips(p, {t.name: arena.tensors[t.name] for t in inputs},
                   {n: (views[n][0], strided[n]) for n in strided}, sizes)
    layouts = {n: strided_layout(views[n][0], p.strided_inputs[n], sizes) for n in strided} if p else {}
    by_rows = frozenset(m.text_at(sizes) for m in p.likely_mistakes if m.by_rows) if p else frozenset()
    return Case(sizes, seed, grid, arena, names, expected, zero_init=zero_init, rtol=rtol, atol=atol,
                 row_tolerance=row, split_k=p.split_k if p else None, contiguous_expected=contiguous,
                 slips=slips, slips_by_rows=by_rows, reduction=p.reduced_axis if p else None, layouts=layouts,
                 parts=p.output_parts if p else None, tile_once=p.tile_once if p else None)


def _slips(p: Puzzle | None, inputs: dict[str, torch.Tensor],
           strided: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
           sizes: Sizes) -> Callable[[], list[tuple[str, torch.Tensor]]] | None:
    """What each of the puzzle's likely slips gives on these inputs, computed when called (None: no slips). The
    inputs are copied now, as the kernel is given them (a kernel run in this process may store into them); a
    strided input by its storage, seen through its view (`strided`: name -> shape, strides). A slip that cannot
    be computed at these sizes (sizes given to test() outside the puzzle's rules) is left out: it only ever adds
    a note."""
    if p is None or not p.likely_mistakes:
        return None
    kept = {name: t.clone() for name, t in inputs.items()}

    def fresh() -> dict[str, torch.Tensor]:
        return {name: strided_view(t.clone(), *strided[name]) if name in strided else t.clone()
                for name, t in kept.items()}

    def compute() -> list[tuple[str, torch.Tensor]]:
        found = []
        # Small tensors: on one thread. Several spin waiting for each other where the cores are busy (the runs'
        # children, a shared machine): puzzle 28's thirteen slips took seconds a size on two loaded cores.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for m in p.likely_mistakes:
                try:
                    out = m.output(fresh(), sizes)
                except Exception:  # noqa: BLE001 - a note we cannot make is no failure
                    continue
                if isinstance(out, torch.Tensor):
                    found.append((m.text_at(sizes), out))
        finally:
            torch.set_num_threads(threads)
        return found

    return compute


def _contiguous_reading(storage: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor | None:
    """The storage read from its first element as if the view were contiguous (None if it is too short)."""
    numel = 1
    for n in shape:
        numel *= n
    return storage[:numel].view(shape) if storage.numel() >= numel else None
