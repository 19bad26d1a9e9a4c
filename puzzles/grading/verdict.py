"""The verdict, built in one place: every step of test() returns its data (the outcome of each size,
an error before any size ran, notes, the compile check's word, the speed), and `build_result` makes
the `TestResult` from them. Nothing edits a verdict once it is built."""

from __future__ import annotations

from collections.abc import Iterable

from puzzles.grading.job import GradingJob, sizes_given_note
from puzzles.grading.presenting import device_name
from puzzles.grading.result import SizeOutcome, TestResult
from puzzles.running.errors import KernelError


def build_result(job: GradingJob, outcomes: list[SizeOutcome] | None = None, *, error: KernelError | None = None,
                 notes: Iterable[str | None] = (), perf: object = None, seconds: float = 0.0,
                 device: str | None = None, compiled: object = None, efficiency: object = None) -> TestResult:
    """The verdict on `job`: its outcomes, the error before any size ran, the notes (in order; None and
    empty left out), the speed. `device`: where the kernel ran (default: this machine's grading device).
    `compiled`: what the kernel compiles to (puzzles.running.compiled_code.Compiled), shown under the verdict."""
    kept = [note for note in notes if note]
    return TestResult(job.title, job.kernel_name, list(outcomes or []), seconds, job.seed, error=error,
                      device=device_name() if device is None else device, notes=kept, perf=perf, compiled=compiled,
                      efficiency=efficiency,
                      partial=sizes_given_note(job.puzzle, job.sizes))
