"""What one grading is about, resolved once: the learner's kernel (and the Python function under its
decorators), the spec, the puzzle, the sizes and test()'s options. test() builds a `GradingJob`; every
step reads its fields instead of unwrapping the kernel or looking the puzzle up again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from puzzles.course import catalog
from puzzles.course.puzzle import Puzzle, Sizes
from puzzles.grading.cases import resolve_puzzle
from puzzles.running.kernel import unwrap_kernel


@dataclass(frozen=True)
class GradingJob:
    """One kernel to grade and how: everything test() was given, resolved."""

    kernel: Any  # as given: @triton.jit, @triton.autotune, or one config's launch of an autotuned kernel
    fn: Callable[..., Any] | None  # the Python function under the decorators (None: not a Triton kernel)
    file: str | None  # the file the kernel was written in (its lines are quoted in errors)
    spec: Callable[..., Any] | None  # the puzzle's spec where the puzzle is known, else the one given
    puzzle: Puzzle | None
    sizes: list[Sizes] | None  # the sizes given to test(); None: the puzzle's own list
    nelem: Sizes | None  # the canonical sizes and blocks, as the classic notebooks pass them
    blocks: Sizes | None
    seed: int
    timeout: float
    isolate: bool | None
    record: bool
    viz: bool
    perf: bool
    compile_check: bool | str
    quiet: bool
    compiled: int | None = None  # show the code compiled for this target (90 for sm_90) under the verdict

    @property
    def kernel_name(self) -> str:
        return getattr(self.fn, "__name__", None) or getattr(self.kernel, "__name__", repr(self.kernel))

    @property
    def title(self) -> str:
        p = self.puzzle
        return f"Puzzle {p.number}: {p.title}" if p else getattr(self.spec, "__name__", "kernel")

    @property
    def other_puzzles_kernel(self) -> str | None:
        """A note when the kernel bears another puzzle's kernel name than the one it is graded as (the spec
        was taken from the wrong cell or notebook): the learner may be grading against the wrong puzzle."""
        graded, name = self.puzzle, getattr(self.fn, "__name__", None)
        named = catalog.find(kernel_name=name) if graded is not None else None
        if named is None or named.number == graded.number:
            return None
        return (f"{name} is the kernel of puzzle {named.number} ({named.title}), but it was graded as puzzle "
                f"{graded.number} ({graded.title}), whose spec is {graded.spec_name}: for puzzle {named.number}, "
                f"pass its spec, test({name}, {named.spec_name}, ...)")

    def for_config(self, launch: Any, tuned: list[Sizes], **overrides: Any) -> GradingJob:
        """The job for one config of an autotuned kernel: its launch, with the config's sizes as the
        puzzle's sizes for this run (its B0 comes from the config)."""
        p = dataclasses.replace(self.puzzle, sizes=tuple(tuned)) if self.puzzle is not None else None
        return dataclasses.replace(self, **{**with_kernel(launch), "puzzle": p, "sizes": tuned, "nelem": None,
                                            "blocks": None, **overrides})


def with_kernel(kernel: Any) -> dict[str, Any]:
    """The job's fields that follow from the kernel: the kernel, its function, its file."""
    fn = unwrap_kernel(kernel)
    return {"kernel": kernel, "fn": fn, "file": fn.__code__.co_filename if fn is not None else None}


def make_job(kernel: Any, spec: Callable[..., Any] | None, puzzle: Puzzle | int | None, *,
             sizes: list[Sizes] | None, nelem: Sizes | None, blocks: Sizes | None, seed: int, timeout: float,
             isolate: bool | None, record: bool, viz: bool, perf: bool, compile_check: bool | str,
             quiet: bool, compiled: int | None = None) -> GradingJob:
    """Resolve test()'s arguments once: the puzzle (given, or found from the spec or kernel) and its spec."""
    found = resolve_puzzle(puzzle, spec, kernel)
    return GradingJob(**with_kernel(kernel), spec=spec if found is None else found.spec, puzzle=found,
                      sizes=sizes, nelem=nelem, blocks=blocks, seed=seed, timeout=timeout, isolate=isolate,
                      record=record, viz=viz, perf=perf, compile_check=compile_check, quiet=quiet,
                      compiled=compiled)
