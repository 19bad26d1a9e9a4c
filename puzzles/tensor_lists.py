"""Lists of tensors of different sizes, updated by one launch (multi-tensor apply, puzzle 21).

The spec of such a puzzle sees each list laid end to end as one flat tensor (its update is
element by element, so where one tensor ends does not change it). The kernel sees what a fused
optimizer sees: every tensor in its own allocation, and three small tables built by the host,

* `addresses`: one row per list (inputs first, then outputs), one column per tensor: the
  tensor's address as an int64, which the kernel turns back into a pointer;
* `numels`: each tensor's number of elements;
* `chunks`: one row per program, (tensor index, chunk index): program `pid` updates elements
  `chunk * B0 ...` of tensor `tensor`.

In the grader every tensor of every list is its own region of the guarded arena (named like
`params[2]`), so a chunk that runs past its tensor is caught and named. The output lists are
slices of the output `z` (one row of `z` per output list), so the judge compares `z` as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from puzzles.inputs import Arena, build_arena, call_spec, poison_, random_tensor, spec_signature
from puzzles.puzzle import Sizes, cdiv

POINTERS = ("addresses", "numels", "chunks")


@dataclass(frozen=True)
class TensorLists:
    """How a puzzle's spec inputs become lists of tensors and tables for the kernel."""

    lists: tuple[str, ...]  # spec inputs that are lists (each laid end to end in the spec)
    outputs: tuple[str, ...]  # the lists the kernel writes, one row of z each
    pointers: tuple[str, ...] = POINTERS  # the kernel's pointer arguments before z_ptr

    @staticmethod
    def lengths(sizes: Sizes) -> list[int]:
        """The tensors' sizes: L0, L1, ... up to K."""
        return [int(sizes[f"L{k}"]) for k in range(int(sizes["K"]))]


def list_sizes(lengths: list[int], block: int, **scalars: float) -> Sizes:
    """A size dict for a tensor-list puzzle: K, L0..., T (the total), C (the chunks) and B0."""
    chunks = sum(cdiv(n, block) for n in lengths)
    return {"K": len(lengths), **{f"L{k}": n for k, n in enumerate(lengths)}, "T": sum(lengths), "C": chunks,
            "B0": block, **scalars}  # type: ignore[dict-item]


def chunk_map(numels: list[int], block: int) -> torch.Tensor:
    """(tensor index, chunk index) for each program, tensor by tensor."""
    rows = [(t, c) for t, n in enumerate(numels) for c in range(cdiv(n, block))]
    return torch.tensor(rows, dtype=torch.int32).reshape(-1, 2)


def tables(lists: list[list[torch.Tensor]], block: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The kernel's three tables for real tensors (what a fused optimizer builds before launching).

    lists: one list of tensors per row of the address table, all lists alike in sizes."""
    device = lists[0][0].device
    addresses = torch.tensor([[t.data_ptr() for t in row] for row in lists], dtype=torch.int64, device=device)
    numels = [t.numel() for t in lists[0]]
    return (addresses, torch.tensor(numels, dtype=torch.int32, device=device),
            chunk_map(numels, block).to(device))


def build(spec: Callable[..., Any], lists: TensorLists, sizes: Sizes, seed: int, scale: float,
          device: str = "cpu") -> tuple[Arena, list[str], list[str], torch.Tensor, Callable[[Arena], None]]:
    """The arena of one case on `device`: (arena, the kernel's pointer names, every input region's
    name, the expected z, and `relink`, which writes an arena's own addresses into its table)."""
    inputs, out = spec_signature(spec)
    by_name = {t.name: t for t in inputs}
    lengths = TensorLists.lengths(sizes)
    rows = len(lists.lists) + len(lists.outputs)
    shapes: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
        lists.pointers[0]: ((rows, len(lengths)), torch.int64),
        lists.pointers[1]: ((len(lengths),), torch.int32),
        lists.pointers[2]: ((sum(cdiv(n, sizes["B0"]) for n in lengths), 2), torch.int32),
    }
    pieces = [f"{name}[{k}]" for name in lists.lists for k in range(len(lengths))]
    for name in lists.lists:
        for k, n in enumerate(lengths):
            shapes[f"{name}[{k}]"] = ((n,), by_name[name].dtype)
    shapes[out.name] = (out.shape(sizes), out.dtype)
    arena = build_arena(shapes, device)
    gen = torch.Generator().manual_seed(seed)
    for piece in pieces:
        t = arena.tensors[piece]
        t.copy_(random_tensor(tuple(t.shape), t.dtype, gen, scale))
    arena.tensors[lists.pointers[1]].copy_(torch.tensor(lengths, dtype=torch.int32))
    arena.tensors[lists.pointers[2]].copy_(chunk_map(lengths, sizes["B0"]))
    poison_(arena.tensors[out.name])
    starts = [sum(lengths[:k]) for k in range(len(lengths))]

    def relink(a: Arena) -> None:
        table = [[a.tensors[f"{name}[{k}]"].data_ptr() for k in range(len(lengths))] for name in lists.lists]
        z = a.tensors[out.name]
        table += [[z[row, start:].data_ptr() for start in starts] for row in range(len(lists.outputs))]
        a.tensors[lists.pointers[0]].copy_(torch.tensor(table, dtype=torch.int64))

    relink(arena)
    flat = [torch.cat([arena.tensors[f"{name}[{k}]"] for k in range(len(lengths))]) for name in by_name]
    expected = call_spec(spec, flat, sizes)
    return arena, list(lists.pointers), list(lists.pointers) + pieces, expected, relink
