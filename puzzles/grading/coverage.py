"""Which programs wrote which part of the output, told when part of it is never written: programs whose
blocks overlap (offsets that do not move with the program id), and whole rows or columns that no program
reaches (a grid axis walking the wrong dimension)."""

from __future__ import annotations

import numpy as np
import torch

from puzzles.course.puzzle import OutputParts, Sizes
from puzzles.grading.split_k import rows_text
from puzzles.running.recording import Trace


def unwritten_notes(trace: Trace, unwritten: torch.Tensor) -> list[str]:
    """Notes for an output with elements never written: the first overlap of two programs' stores, else the
    rows and columns of a matrix that no program wrote."""
    overlap = _overlap(trace, tuple(unwritten.shape))
    if overlap:
        return [overlap]
    if unwritten.dim() == 1:
        return [_gap_between_blocks(trace, unwritten)]
    return [_lines_never_written(unwritten, trace.grid)]


def _gap_between_blocks(trace: Trace, unwritten: torch.Tensor) -> str:
    """Two programs, one after the other, whose blocks of a vector z leave unwritten elements between them: the
    blocks start further apart than they are long (pid * 128 where the block is B0 = 32)."""
    gx, gy, _ = trace.grid
    spans: dict[int, tuple[tuple[int, int, int], int, int]] = {}
    for access in trace.accesses:
        if access.tensor != "z" or access.op == "load" or not access.elements.size:
            continue
        program = access.program[0] + gx * (access.program[1] + gy * access.program[2])
        low, high = int(access.elements.min()), int(access.elements.max())
        _, was_low, was_high = spans.get(program, (access.program, low, high))
        spans[program] = (access.program, min(low, was_low), max(high, was_high))
    ordered = [spans[p] for p in sorted(spans)]
    for (first, _, first_end), (second, second_start, _) in zip(ordered, ordered[1:], strict=False):
        if second_start > first_end + 1 and bool(unwritten[first_end + 1:second_start].all()):
            return (f"programs {first} and {second} store up to z[{first_end}] and from z[{second_start}]: "
                    f"no program stores z[{first_end + 1}…{second_start - 1}] between their blocks, which start "
                    "further apart than they are long. Does each program's block start at its program id times "
                    "the block size (pid * B0)?")
    gz = trace.grid[2]
    silent = [p for p in range(gx * gy * gz) if p not in spans]
    end = max((high for _, _, high in ordered), default=-1)
    if ordered and silent and end + 1 < unwritten.numel() and bool(unwritten[end + 1:].all()):
        names = [str(tuple(int(c) for c in np.unravel_index(p, trace.grid, order="F"))) for p in silent]
        which = f"programs {names[0]} … {names[-1]}" if len(names) > 1 else f"program {names[0]}"
        return (f"{which} store nothing (their lanes all masked off: their blocks start past the end), and no "
                f"program stores z[{end + 1}…{unwritten.numel() - 1}]. Does each program's block start at its "
                "program id times the block size (pid * B0)?")
    return ""


def _where(element: int, shape: tuple[int, ...]) -> str:
    coords = np.unravel_index(element, shape) if len(shape) > 1 else (element,)
    return f"z[{', '.join(str(int(c)) for c in coords)}]"


def _overlap(trace: Trace, shape: tuple[int, ...]) -> str:
    """Two programs storing one element of z (with the same value: a race otherwise): their blocks overlap."""
    size = int(np.prod(shape)) if shape else 0
    if not size:
        return ""
    gx, gy, _ = trace.grid
    stored_by: dict[tuple[int, int, int], set[int]] = {}
    first = np.full(size, -1, dtype=np.int64)
    clash = None
    for access in trace.accesses:
        if access.tensor != "z" or access.op != "store" or not access.elements.size:
            continue
        program = access.program[0] + gx * (access.program[1] + gy * access.program[2])
        elements = np.unique(access.elements)
        stored_by.setdefault(access.program, set()).update(elements.tolist())
        earlier = first[elements]
        other = (earlier >= 0) & (earlier != program)
        if clash is None and other.any():
            lane = int(np.flatnonzero(other)[0])
            clash = (int(earlier[lane]), access.program, int(elements[lane]))
        first[elements[earlier < 0]] = program
    if clash is None:
        return ""
    sets = list(stored_by.values())
    if len(sets) > 1 and all(s == sets[0] for s in sets):
        return (f"all {len(sets)} programs store the same {len(sets[0])} elements of z (from "
                f"{_where(min(sets[0]), shape)}): the offsets do not change with the program id. Make them start "
                "at the program's block, pid * B0 + tl.arange(0, B0), with pid = tl.program_id(axis) on an axis "
                f"the grid has (the grid is {_grid_text(trace.grid)}; tl.program_id of an axis it lacks is 0)")
    earlier_program = np.unravel_index(clash[0], trace.grid, order="F")
    strides = ""
    if len(shape) > 1:
        names = {2: "rc", 3: "brc"}.get(len(shape))  # batch, row, column
        if names:
            steps = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
            at = " + ".join(f"{n} * {s}" if s > 1 else n for n, s in zip(names, steps, strict=True))
            strides = (f", and are its offsets z's own strides (z is {'×'.join(map(str, shape))}: "
                       f"z[{', '.join(names)}] sits at {at})")
    return (f"programs {tuple(int(p) for p in earlier_program)} and {clash[1]} both store {_where(clash[2], shape)}: "
            "the programs' blocks overlap, so others are left unwritten. Does each program's block start at its "
            f"program id times the block size (pid * B0), on the axis that goes with it{strides}?")


def _grid_text(grid: tuple[int, int, int]) -> str:
    axes = list(grid)
    while len(axes) > 1 and axes[-1] == 1:
        axes.pop()
    if len(axes) == 1:
        return f"{axes[0]} program{'s' if axes[0] != 1 else ''} on one axis"
    return " × ".join(str(a) for a in axes) + " programs"


def _lines_never_written(unwritten: torch.Tensor, grid: tuple[int, int, int]) -> str:
    """Whole columns or rows of a matrix (whole matrices of a batch) that no program wrote, where the rest is
    written."""
    if bool(unwritten.all()):
        return ""
    if unwritten.dim() == 3:
        batches = torch.nonzero(unwritten.flatten(1).all(1)).flatten().tolist()
        if not batches or len(batches) == unwritten.shape[0]:
            return ""
        return (f"matrices z[{rows_text(batches)}] (of z[0…{unwritten.shape[0] - 1}]) are never written: do the "
                f"programs reach them? The grid is {_grid_text(grid)}; check which tl.program_id axis gives the "
                "batch index")
    if unwritten.dim() != 2:
        return ""
    parts = []
    columns = torch.nonzero(unwritten.all(0)).flatten().tolist()
    rows = torch.nonzero(unwritten.all(1)).flatten().tolist()
    if columns:
        parts.append(f"columns {rows_text(columns)} (of 0…{unwritten.shape[1] - 1}) of z are never written, in any row")
    if rows:
        parts.append(f"rows {rows_text(rows)} (of 0…{unwritten.shape[0] - 1}) of z are never written, in any column")
    if not parts:
        return ""
    address = f"z[r, c] is addressed as r * {unwritten.shape[1]} + c"
    if grid[0] * grid[1] * grid[2] == 1:
        return " and ".join(parts) + f": one program writes all of z here; check that {address}"
    return (" and ".join(parts) + f": do the programs' blocks reach them? The grid is {_grid_text(grid)}; check "
            f"which tl.program_id axis gives the columns and which the rows, and that {address}")


def shared_indices_note(wrong: torch.Tensor) -> str:
    """Where every wrong element of a matrix (or a batch of them) shares some indices: `every wrong element is in
    columns 5…7 (of 0…7) of z: z[:, :, 5…7]`. A mask or an offset slip shows on one axis, and that axis is what
    the learner fixes; "" where each axis has wrong elements at every index, or fewer than two are wrong."""
    if wrong.dim() < 2 or int(wrong.sum()) < 2:
        return ""
    parts, pattern = [], []
    for axis, length in enumerate(wrong.shape):
        others = [d for d in range(wrong.dim()) if d != axis]
        at = torch.nonzero(wrong.any(dim=others[0]) if len(others) == 1 else wrong.permute(axis, *others).flatten(1)
                           .any(1)).flatten().tolist()
        if length < 2 or len(at) == length:
            pattern.append(":")
            continue
        text = rows_text(at)
        pattern.append(text if "," not in text else f"{{{text}}}")
        name = ("columns" if axis == wrong.dim() - 1 else "rows" if axis == wrong.dim() - 2
                else "matrices" if wrong.dim() == 3 else f"indices of axis {axis}")
        parts.append(f"{name} {rows_text(at)} (of 0…{length - 1})")
    if not parts:
        return ""
    return f"every wrong element is in {' and '.join(parts)} of z: z[{', '.join(pattern)}]"


def parts_note(wrong: torch.Tensor, parts: OutputParts, sizes: Sizes) -> str:
    """Which of the results packed into z hold the wrong elements (puzzle 26: `every wrong element is in dx (z's
    rows 0…29); dw and db are right`), with the indices they share within a result that has its own axis."""
    wrong_in, right_in, start = [], [], 0
    for part in parts.parts:
        extent = int(sizes[part.extent]) if isinstance(part.extent, str) else part.extent
        piece = wrong.narrow(parts.axis, start, min(extent, wrong.shape[parts.axis] - start))
        (wrong_in if bool(piece.any()) else right_in).append((part, piece, start, extent))
        start += extent
    if not wrong_in:
        return ""
    axis = "row" if parts.axis == wrong.dim() - 2 else "column" if parts.axis == wrong.dim() - 1 else "index"
    held = ", ".join(f"{p.name} (z's {axis}{'s' * (n > 1)} {rows_text(list(range(at, at + n)))})"
                     for p, _, at, n in wrong_in)
    text = f"every wrong element is in {held}"
    if right_in:
        text += f"; {' and '.join(p.name for p, *_ in right_in)} {'is' if len(right_in) == 1 else 'are'} right"
    part, piece, _, _ = wrong_in[0]
    shared = shared_indices_note(piece) if len(wrong_in) == 1 and part.keeps_axis else ""
    return f"{text}; {shared.replace(' of z: z[', f' of {part.name}: {part.name}[')}" if shared else text
