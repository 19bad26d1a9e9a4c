"""A graded kernel compiled for a GPU target at given sizes, with the arguments `test()` passes: what
`puzzles.compiled()` shows a learner and what the efficiency report reads its occupancy from (registers, shared
memory, warps). The compile runs in the compile check's processes and is answered from its cache where it ran."""

from __future__ import annotations

from puzzles.course.puzzle import Sizes
from puzzles.course.spec import SpecError
from puzzles.grading.cases import make_case
from puzzles.grading.job import GradingJob
from puzzles.grading.signature import bind_arguments
from puzzles.running.compile_check.listings import LaunchNumbers, compile_call, launch_numbers
from puzzles.running.compiled_code import Compiled, not_compiled
from puzzles.running.errors import KernelError


def compile_job(job: GradingJob, sizes: Sizes, target: int, options: dict[str, int] | None = None,
                with_sass: bool = True) -> Compiled:
    """`job`'s kernel compiled for `target` (75, 80, 90) as called at `sizes` (inputs built from its spec)."""
    call, why = call_at(job, sizes)
    if call is None:
        return not_compiled(job.kernel_name, target, KernelError("spec", why))
    return compile_call(job.handle, call, target, sizes, options, with_sass)


def job_launch_numbers(job: GradingJob, sizes: Sizes, target: int) -> LaunchNumbers | None:
    """`job`'s kernel's warps, registers and shared memory compiled for `target` at `sizes` (None: it does not
    compile here, or its inputs cannot be built)."""
    call, _ = call_at(job, sizes)
    return None if call is None else launch_numbers(job.handle, call, target)


def call_at(job: GradingJob, sizes: Sizes) -> tuple[tuple[list, dict] | None, str]:
    """(the kernel's arguments at `sizes`, as test() binds them, ""), or (None, why the spec gives no inputs)."""
    try:
        case = make_case(job, sizes, 0)
    except (SpecError, TypeError, ValueError) as err:
        return None, f"cannot build inputs from the spec: {err}"
    return bind_arguments(job)(case), ""
