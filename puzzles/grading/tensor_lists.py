"""Lists of tensors of different sizes, updated by one launch (multi-tensor apply, puzzle 21).

The spec of such a puzzle sees each list laid end to end as one flat tensor (its update is
element by element, so where one tensor ends does not change it). The kernel sees what a fused
optimizer sees: every tensor in its own allocation, and three small tables built by the host,

* `addresses`: one row per list (inputs first, then outputs), one column per tensor: the
  tensor's address as an int64, which the kernel turns back into a pointer;
* `numels`: each tensor's number of elements;
* `chunks`: one row per program, (tensor index, chunk index): program `pid` updates elements
  `chunk * B0 ...` of tensor `tensor`.

In the grader every tensor of every list, outputs included, is its own region of the guarded arena
(named like `params[2]`, `params_out[2]`), so a chunk that runs past its tensor is caught and named,
and a kernel that writes the outputs end to end instead of through the table runs past the first
one. The kernel's `z_ptr` is the first output tensor, as in the notebook's launch; the outputs are
gathered into `z` (one row per output list, each list end to end) for judging.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from puzzles.course.puzzle import Sizes, TensorLists, cdiv
from puzzles.course.spec import ParsedSpec, parse_spec
from puzzles.course.tensor_lists import chunk_map
from puzzles.grading.inputs import Arena, build_arena, poison_, random_tensor


def tables(lists: list[list[torch.Tensor]], block: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The kernel's three tables for real tensors (what a fused optimizer builds before launching).

    lists: one list of tensors per row of the address table, all lists alike in sizes."""
    device = lists[0][0].device
    addresses = torch.tensor([[t.data_ptr() for t in row] for row in lists], dtype=torch.int64, device=device)
    numels = [t.numel() for t in lists[0]]
    return (addresses, torch.tensor(numels, dtype=torch.int32, device=device),
            chunk_map(numels, block).to(device))


def output_piece(name: str, k: int) -> str:
    """The arena's name for tensor `k` of output list `name`."""
    return f"{name}_out[{k}]"


def is_output_piece(region: str) -> bool:
    """True for the name of one tensor of an output list (`params_out[2]`)."""
    return "_out[" in region


@dataclass(frozen=True)
class Gather:
    """The judged output of a tensor-list case: one row per output list, its tensors end to end."""

    rows: tuple[tuple[str, ...], ...]  # the arena's names of each output list's tensors

    def __call__(self, a: Arena) -> torch.Tensor:
        return torch.stack([torch.cat([a.tensors[piece] for piece in row]) for row in self.rows])


@dataclass(frozen=True)
class Relink:
    """Makes an arena (the case's, or the GPU worker's copy of it) point at its own tensors: their
    addresses in the table, the kernel's z (the first output tensor, as the notebook passes it) and
    the gathering of the outputs. Plain data, so it travels to the worker with the case."""

    lists: tuple[str, ...]
    lengths: tuple[int, ...]
    outputs: Gather
    out_name: str
    table: str

    def __call__(self, a: Arena) -> None:
        rows = [[a.tensors[f"{name}[{k}]"].data_ptr() for k in range(len(self.lengths))] for name in self.lists]
        rows += [[a.tensors[piece].data_ptr() for piece in row] for row in self.outputs.rows]
        a.tensors[self.table].copy_(torch.tensor(rows, dtype=torch.int64))
        a.tensors[self.out_name] = a.tensors[self.outputs.rows[0][0]]
        a.aliases[self.out_name] = self.outputs.rows[0][0]
        a.gather = self.outputs


def build(spec: ParsedSpec | Callable[..., Any], lists: TensorLists, sizes: Sizes, seed: int, scale: float,
          device: str = "cpu") -> tuple[Arena, list[str], list[str], torch.Tensor, Callable[[Arena], None]]:
    """The arena of one case on `device`: (arena, the kernel's pointer names, every input region's
    name, the expected z, and `relink`, which makes an arena (this one, or its copy on a GPU) point at
    its own tensors: the address table, the kernel's z and the gathering of the outputs)."""
    parsed = spec if isinstance(spec, ParsedSpec) else parse_spec(spec)
    inputs, out = parsed.signature()
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
    outputs = [[output_piece(name, k) for k in range(len(lengths))] for name in lists.outputs]
    for row in outputs:
        for piece, n in zip(row, lengths, strict=True):
            shapes[piece] = ((n,), out.dtype)
    arena = build_arena(shapes, device)
    gen = torch.Generator().manual_seed(seed)
    for piece in pieces:
        t = arena.tensors[piece]
        t.copy_(random_tensor(tuple(t.shape), t.dtype, gen, scale))
    arena.tensors[lists.pointers[1]].copy_(torch.tensor(lengths, dtype=torch.int32))
    arena.tensors[lists.pointers[2]].copy_(chunk_map(lengths, sizes["B0"]))
    for row in outputs:
        for piece in row:
            poison_(arena.tensors[piece])
    gather = Gather(tuple(tuple(row) for row in outputs))
    relink = Relink(tuple(lists.lists), tuple(lengths), gather, out.name, lists.pointers[0])
    relink(arena)
    flat = [torch.cat([arena.tensors[f"{name}[{k}]"] for k in range(len(lengths))]) for name in by_name]
    expected = parsed.call(flat, sizes)
    return arena, list(lists.pointers), list(lists.pointers) + pieces, expected, relink


# -- puzzle 21's notebook: one launch against a loop of launches -----------------------------------------


def compare_with_loop(kernel: Any, loop_kernel: Any, lengths: list[int] | None = None, block: int | None = None,
                      **hyper: float) -> dict[str, Any] | None:
    """Run `kernel` once over every tensor (through the tables) and `loop_kernel` once per tensor,
    check they agree, count the launches and, on a GPU, time both. Runs where `test()` runs
    kernels (the GPU worker, or a child process): a bad kernel gives a message, not a dead notebook.

    lengths, block: the tensors' sizes and B0 (default: 240 tensors from 1 K to 4 M elements and
    B0 = 1024 on a GPU; six small tensors and B0 = 64 on a CPU)."""
    from puzzles.running.kernel import on_gpu
    from puzzles.running.sandbox import run_safely, show

    gpu = on_gpu()
    lengths = lengths or ([4096 * 1024, 4096, 1024, 1024 * 1024, 1024, 1024] * 40 if gpu else [300, 7, 64, 129, 1, 50])
    block = block or (1024 if gpu else 64)
    hyper = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, **hyper}
    reply = run_safely("puzzles.grading.tensor_lists:compare_here", kernel, loop_kernel, list(lengths), block, hyper,
                       "cuda" if gpu else "cpu")
    return show(reply, "The comparison")


def compare_here(kernel: Any, loop_kernel: Any, lengths: list[int], block: int, hyper: dict[str, float],
                 device: str) -> dict[str, Any]:
    """`compare_with_loop`'s work, in the process that may launch the learner's kernel."""
    import triton

    torch.manual_seed(0)
    params, grads, moms = ([torch.randn(n, device=device) for n in lengths] for _ in range(3))
    out_p, out_m = [torch.empty_like(p) for p in params], [torch.empty_like(p) for p in params]
    addresses, numels, chunk_table = tables([params, grads, moms, out_p, out_m], block)

    def one_launch() -> None:
        kernel[(chunk_table.shape[0],)](addresses, numels, chunk_table, out_p[0], len(lengths), **hyper, B0=block)

    def loop_of_launches() -> None:
        for p, g, m, po, mo in zip(params, grads, moms, out_p, out_m, strict=True):
            loop_kernel[(triton.cdiv(p.numel(), block),)](p, g, m, po, mo, p.numel(), **hyper, B0=block)

    one_launch()
    fused = [t.clone() for t in out_p + out_m]
    loop_of_launches()
    same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(fused, out_p + out_m, strict=True))
    print(f"{len(lengths)} tensors, {sum(lengths):,} elements, {chunk_table.shape[0]} chunks of {block}: "
          f"1 launch against {len(lengths)}; same result: {same}")
    found = {"tensors": len(lengths), "chunks": int(chunk_table.shape[0]), "same": same}
    if device == "cuda":
        from triton.testing import do_bench

        found["one_launch_ms"], found["loop_ms"] = do_bench(one_launch), do_bench(loop_of_launches)
        print(f"one launch: {found['one_launch_ms'] * 1e3:,.0f} us   "
              f"loop of launches: {found['loop_ms'] * 1e3:,.0f} us")
    else:
        print("No GPU: the interpreter's times say nothing about a GPU, so only the launches are counted.")
    return found
