"""The library op a practitioner would call instead of writing a puzzle's kernel (issue 52).

`torch.compile(spec)` of a spec written with primitive ops is not what a user runs in place of a kernel: they
call the library op (`torch.bmm` with TF32 allowed, `F.layer_norm`, `F.cross_entropy` and its backward,
`scaled_dot_product_attention`'s backward). A puzzle names it with a `LibraryBaseline` (`Puzzle.library`):
a label, how to run it on the spec's inputs, the settings it runs under (TF32, the dtype it computes in) and
why it is the fair comparison. `test(..., perf=True)` times it beside eager torch and torch.compile
(puzzles/grading/perf.py), and the tests check on a CPU that it gives the puzzle's output.

A puzzle without one says why in `Puzzle.no_library`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

Sizes = dict[str, Any]


@dataclass(frozen=True)
class LibraryRun:
    """The library op made ready on one set of inputs: `run()` calls it once (what is timed: layouts a user
    would store their data in are made beforehand, once), `output()` packs the last run's results as the
    puzzle's output (not timed: puzzle 26's dx, dw and db in one tensor)."""

    run: Callable[[], Any]
    output: Callable[[], torch.Tensor]


def single_call(op: Callable[[], Any], pack: Callable[[Any], torch.Tensor] | None = None) -> LibraryRun:
    """A `LibraryRun` of one call whose result (`pack`ed, where the puzzle's output is laid out otherwise) is
    the output."""
    last: list[Any] = []

    def run() -> Any:
        last[:] = [op()]
        return last[0]

    def output() -> torch.Tensor:
        if not last:
            run()
        return pack(last[0]) if pack is not None else last[0]

    return LibraryRun(run, output)


@dataclass(frozen=True)
class LibraryBaseline:
    """What a user would call instead of the puzzle's kernel, and under which settings.

    `prepare(inputs, sizes)` gets the spec's inputs (on the device they are timed on) and the sizes, and
    returns a `LibraryRun`. `allow_tf32`: float32 matmuls and convolutions may round their inputs to TF32
    (cuBLAS and cuDNN), as a user who sets `torch.backends.cuda.matmul.allow_tf32` gets; only where the puzzle's
    tolerance allows it. `dtype`: what the op computes in. `cpu_note`: where the op has no CPU kernel, why the
    CPU check of its output skips it."""

    label: str
    prepare: Callable[[list[Any], Sizes], LibraryRun]
    why: str
    dtype: str = "float32"
    allow_tf32: bool = False
    cpu_note: str = ""
    # (rtol, atol) its output is checked with where its dtype is coarser than the puzzle's (bfloat16 activations
    # for a float16 puzzle), its `why` saying so; None: the puzzle's own tolerance.
    tolerance: tuple[float, float] | None = None

    @contextlib.contextmanager
    def settings(self) -> Iterator[None]:
        """The op's settings while it is prepared and timed, then the caller's again."""
        matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.allow_tf32
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn

    def start(self, inputs: list[Any], sizes: Sizes) -> LibraryRun:
        """The op made ready on `inputs`, under its settings (time and check its `run` under them too)."""
        with self.settings():
            return self.prepare(inputs, dict(sizes))

    def text(self) -> str:
        """`torch.bmm (cuBLAS, TF32 on), float32`: the op and its settings, as the report names it."""
        return f"{self.label}, {self.dtype}"


# Why a puzzle has no library op: the reasons several puzzles share.
ONE_TORCH_OP = ("the spec is already the one torch call a user would make ({op}): eager torch runs it, and is timed "
                "as the bar")
NO_SUCH_OP = ("no torch op computes this in one call ({what}): eager torch and torch.compile of the spec are what a "
              "user would run")
