"""A tensor-list puzzle's sizes and chunks (puzzle 21): what its catalog entry, its diagram and the
grader's tables (puzzles/grading/tensor_lists.py) agree on.
"""

from __future__ import annotations

import torch

from puzzles.course.puzzle import Sizes, cdiv


def list_sizes(lengths: list[int], block: int, **scalars: float) -> Sizes:
    """A size dict for a tensor-list puzzle: K, L0..., T (the total), C (the chunks) and B0."""
    chunks = sum(cdiv(n, block) for n in lengths)
    return {"K": len(lengths), **{f"L{k}": n for k, n in enumerate(lengths)}, "T": sum(lengths), "C": chunks,
            "B0": block, **scalars}  # type: ignore[dict-item]


def chunk_map(numels: list[int], block: int) -> torch.Tensor:
    """(tensor index, chunk index) for each program, tensor by tensor."""
    rows = [(t, c) for t, n in enumerate(numels) for c in range(cdiv(n, block))]
    return torch.tensor(rows, dtype=torch.int32).reshape(-1, 2)
