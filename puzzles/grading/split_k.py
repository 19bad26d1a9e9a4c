"""The split-K contract (puzzles 17, 18), checked from a run's recorded accesses.

Right values are not enough: a kernel whose first part reduces all of K and stores its tile while
the other parts do nothing gives the right product, and is not split-K. The contract: the parts of
a tile read disjoint shares of K, each part a share, and add their partial results with
`tl.atomic_add`. The statement's chunks s, s + SPLIT_K, … are one such split; contiguous ranges are
another, and pass too.
"""

from __future__ import annotations

import linecache

import numpy as np

from puzzles.course.puzzle import KSlice, Sizes, SplitK, cdiv
from puzzles.running.errors import KernelError
from puzzles.running.recording import Access, Trace


def split_k_violation(trace: Trace, contract: SplitK, sizes: Sizes, filename: str | None) -> KernelError | None:
    """The first break of the contract: a partial result written into z other than with tl.atomic_add,
    a part reading rows of K another part reads, or a part without a share of K."""
    if sizes.get(contract.parts, 1) <= 1:
        return None
    for access in trace.accesses:
        if access.tensor == "z" and access.op != "load" and access.rmw != "add" and access.elements.size:
            how = "a plain tl.store" if access.op == "store" else f"tl.atomic_{access.rmw}"
            return _error(f"program {access.program} writes its partial tile into z with {how}: in split-K "
                          f"{contract.rule()}, so that the parts' shares add up whatever order they finish in",
                          access, filename)
    return _shared_k_violation(trace, contract, sizes, filename)


def _shared_k_violation(trace: Trace, contract: SplitK, sizes: Sizes, filename: str | None) -> KernelError | None:
    """Per output tile, the parts must read disjoint shares of K, each part a share of its own. Any
    split passes (the statement's interleaved chunks, or contiguous ranges as CUTLASS cuts them); a part
    that reads rows another part reads, or a part left without work while another reduces all, fails."""
    axes = {s.tensor: s for s in contract.inputs}
    parts = sizes[contract.parts]
    for tensor, where in axes.items():
        if where.rows > 1 and sizes[contract.chunk] % where.rows:
            continue  # a packed word may hold rows of two chunks: two parts rightly read it
        readers: dict[tuple[tuple[int, ...], int], tuple[int, Access]] = {}  # (tile, K row) -> (part, access)
        shares: dict[tuple[int, ...], dict[int, int]] = {}  # tile -> part -> K rows read
        shape = trace.tensors[tensor][0]
        inner = int(np.prod(shape[where.axis + 1:], dtype=np.int64))
        for access in trace.accesses:
            if access.op != "load" or access.tensor != tensor or not access.elements.size:
                continue
            program = access.program
            part = program[contract.grid_axis]
            tile = program[:contract.grid_axis] + program[contract.grid_axis + 1:]
            rows = np.unique((access.elements // inner) % shape[where.axis]) * where.rows
            tile_shares = shares.setdefault(tile, {})
            tile_shares[part] = tile_shares.get(part, 0) + rows.size
            for k in rows.tolist():
                other = readers.setdefault((tile, k), (part, access))
                if other[0] != part:
                    span = f"row {k}" if where.rows == 1 else f"rows {k}..{k + where.rows - 1}"
                    return _error(f"part {part} (program {program}) loads {tensor} at {contract.length} {span}, "
                                  f"which part {other[0]} (program {other[1].program}) also reads: in split-K "
                                  f"{contract.rule()}", access, filename)
        # The most a part reads in a fair split: its share of the chunks, rounded up. Contiguous ranges of that
        # many chunks leave the last parts idle when the chunks run out (9 chunks, 4 parts: 3, 3, 3, 0), and
        # that is a split; a part that reads more while another reads nothing took that part's work.
        chunks = cdiv(sizes[contract.length], sizes[contract.chunk])
        fair = cdiv(chunks, parts) * sizes[contract.chunk] // where.rows
        for tile, tile_shares in shares.items():
            busy = max(tile_shares, key=tile_shares.get)
            idle = [s for s in range(parts) if tile_shares.get(s, 0) == 0]
            if idle and tile_shares[busy] > fair:
                access = next(a for a in trace.accesses if a.op == "load" and a.tensor == tensor and
                              a.program[contract.grid_axis] == busy and
                              a.program[:contract.grid_axis] + a.program[contract.grid_axis + 1:] == tile)
                return _error(f"part {idle[0]} reads none of {contract.length} for the tile of program "
                              f"{access.program} while part {busy} reads {tile_shares[busy] * where.rows} rows of "
                              f"{tensor}: in split-K {contract.rule()}", access, filename)
    return None


def unread_rows(trace: Trace, reads: KSlice, length: int) -> list[int]:
    """The rows 0 … length-1 of the reduced axis that no load of `reads.tensor` reached (rows of a packed
    word count as read together)."""
    if reads.tensor not in trace.tensors:
        return []
    shape = trace.tensors[reads.tensor][0]
    inner = int(np.prod(shape[reads.axis + 1:], dtype=np.int64))
    read = np.zeros(length + reads.rows, dtype=bool)
    for access in trace.accesses:
        if access.op == "load" and access.tensor == reads.tensor and access.elements.size:
            words = np.unique((access.elements // inner) % shape[reads.axis])
            for offset in range(reads.rows):
                read[np.clip(words * reads.rows + offset, 0, length + reads.rows - 1)] = True
    return np.flatnonzero(~read[:length]).tolist()


def rows_text(rows: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0…2, 5, 7…8' (at most four runs, then …)."""
    runs: list[tuple[int, int]] = []
    for r in rows:
        if runs and r == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], r)
        else:
            runs.append((r, r))
    text = ", ".join(f"{a}…{b}" if b > a else f"{a}" for a, b in runs[:4])
    return text + (", …" if len(runs) > 4 else "")


def _error(message: str, access: Access, filename: str | None) -> KernelError:
    return KernelError("split-K contract", message, access.line, linecache.getline(filename or "", access.line or 0),
                       filename)
