"""The split-K contract (puzzles 17, 18), checked from a run's recorded accesses.

Right values are not enough: a kernel whose first part reduces all of K and stores its tile while
the other parts do nothing gives the right product, and is not split-K. The statement's contract
is that part `s` reads only its own chunks of K and adds its partial result with `tl.atomic_add`.
"""

from __future__ import annotations

import linecache

import numpy as np

from puzzles.execution import KernelError
from puzzles.puzzle import Sizes, SplitK
from puzzles.recording import Access, Trace


def split_k_violation(trace: Trace, contract: SplitK, sizes: Sizes, filename: str | None) -> KernelError | None:
    """The first break of the contract: a part reading another part's rows of K, or a partial result
    written into z other than with tl.atomic_add."""
    if sizes.get(contract.parts, 1) <= 1:
        return None
    for access in trace.accesses:
        if access.tensor == "z" and access.op != "load" and access.rmw != "add" and access.elements.size:
            how = "a plain tl.store" if access.op == "store" else f"tl.atomic_{access.rmw}"
            return _error(f"program {access.program} writes its partial tile into z with {how}: in split-K "
                          f"{contract.rule()}, so that the parts' shares add up whatever order they finish in",
                          access, filename)
    axes = {s.tensor: s for s in contract.inputs}
    for access in trace.accesses:
        where = axes.get(access.tensor)
        if access.op != "load" or where is None or not access.elements.size:
            continue
        shape = trace.tensors[access.tensor][0]
        inner = int(np.prod(shape[where.axis + 1:], dtype=np.int64))
        index = (access.elements // inner) % shape[where.axis]
        first, last = index * where.rows, index * where.rows + where.rows - 1
        part = access.program[contract.grid_axis]
        own = (contract.part_of(first, sizes) == part) | (contract.part_of(last, sizes) == part)
        if not own.all():
            k = int(first[~own].min())
            owner = int(contract.part_of(k, sizes))
            rows = f"row {k}" if where.rows == 1 else f"rows {k}..{k + where.rows - 1}"
            return _error(f"part {part} (program {access.program}) loads {access.tensor} at {contract.length} "
                          f"{rows}, which belongs to part {owner}: in split-K {contract.rule()}", access, filename)
    return None


def _error(message: str, access: Access, filename: str | None) -> KernelError:
    return KernelError("split-K contract", message, access.line, linecache.getline(filename or "", access.line or 0),
                       filename)
