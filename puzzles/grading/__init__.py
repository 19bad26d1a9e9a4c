"""`test()`: the autograder cell of every notebook.

    test(add_kernel, add_spec, nelem={"N0": 32})

runs the kernel at the canonical size and at every variation its puzzle allows, on fresh
random inputs, with the output poisoned and every memory access recorded and guarded, and
returns a `TestResult`. On a machine without a GPU the kernel runs in Triton's interpreter
inside a child process (a wild pointer or an endless loop cannot hurt the notebook); on a
CUDA machine it is compiled and run on the GPU, with guard zones checked after the run.

test() resolves its arguments once into a `GradingJob` (job.py: the kernel's `KernelHandle`, the
`ParsedSpec`, the puzzle, the sizes to run, the seed and the options); every step takes the job. The
steps, in the order the data flows: signature.py (is the kernel callable as the puzzle needs?),
cases.py (each size's inputs), runs.py (interpreter or GPU), judging.py (a verdict per size),
presenting.py (speed, and the verdict shown). Each returns data; verdict.py's `build_result` makes
the one `TestResult`. An autotuned kernel goes through the same steps once per config, in
configs.py's loop. ARCHITECTURE.md draws the whole trip.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from puzzles.course.puzzle import Puzzle, Sizes
from puzzles.course.spec import SpecError
from puzzles.grading.cases import Case, make_case
from puzzles.grading.configs import autotune_missing, grade_every_config
from puzzles.grading.efficiency import efficiency_of
from puzzles.grading.job import GradingJob, make_job, unknown_sizes_note
from puzzles.grading.judging import judge_runs
from puzzles.grading.operations import feature_call_error, interpreter_probe_error, python_on_blocks_notes
from puzzles.grading.presenting import measure_speed, present
from puzzles.grading.result import TestResult
from puzzles.grading.runs import PendingRuns, on_gpu, start_runs
from puzzles.grading.signature import argument_order_note, bind_arguments, check_kernel
from puzzles.grading.verdict import build_result
from puzzles.running import compat, gpu_worker, interpreter_hooks
from puzzles.running import compile_check as _compile_check
from puzzles.running.compile_check.listings import compile_call, from_check
from puzzles.running.compiled_code import Compiled, target_number
from puzzles.running.debug import STEP_THROUGH_ADVICE, calls_breakpoint_if
from puzzles.running.errors import KernelError

__all__ = ["DEFAULT_TIMEOUT", "GradingJob", "build_result", "on_gpu", "present", "test"]

DEFAULT_TIMEOUT = 20.0  # seconds per size; the puzzles' references take well under one


def test(
    kernel: Any,
    spec: Callable[..., Any] | None = None,
    nelem: Sizes | None = None,
    B: Sizes | None = None,
    *,
    puzzle: Puzzle | int | None = None,
    sizes: list[Sizes] | None = None,
    seed: int | None = None,
    viz: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    isolate: bool | None = None,
    record: bool = True,
    quiet: bool = False,
    perf: bool = False,
    compile_check: bool | str = True,
    compiled: bool | str = False,
    observe: Callable[[list[Case], list[Any]], None] | None = None,
    efficiency: bool | None = None,
    gpu: str = "H100",
) -> TestResult:
    """Grade `kernel` against `spec` at the puzzle's sizes and return the verdict.

    nelem, B: the canonical sizes and blocks, as the classic notebooks pass them.
    sizes: test exactly these size dicts instead of the puzzle's own list.
    seed: reproduce a failure (every failure reports the seed it used).
    viz: draw the memory accesses under the verdict.
    timeout: seconds per size; the first size that runs past it is reported (with the line
        the kernel was on) and no later size runs.
    isolate: run in a child process (default where the OS can fork); False runs in this
        process, so `breakpoint()` inside the kernel works, and the debugger and the kernel's
        prints use the notebook's own streams (otherwise prints are shown under the verdict).
    perf: on a GPU, once the kernel is right, time it at the puzzle's performance size and
        compare with this device's measured limits and with torch.
    compile_check: without a GPU, also compile the kernel for real GPU targets (beside the
        interpreted run) and fail it if it would not compile; "full" waits for the whole compile.
    compiled: show under the verdict what the kernel compiles to (True: for sm_90; or "sm_80", "sm_75"):
        each global load and store with its width and line, tl.dot's instructions, registers, spills
        (puzzles.compiled() gives the whole listings).
    observe: called with each launch's cases and raw runs before they are judged (a class's worker sends
        those outputs to the grader, which judges them itself).
    efficiency: once the kernel is right, read its recorded run for how efficient it would be on `gpu` ("H100",
        "H200", "A100", "T4"): bytes against the fewest, sectors per request, masked lanes, a predicted time at the
        puzzle's perf size and the lever that matters most (`result.efficiency`; grading/efficiency.py). Default:
        on without a GPU for a puzzle with a CPU speed goal (`Puzzle.cpu_speed_goal`), off elsewhere.

    An @triton.autotune kernel is graded under each of its configs (puzzles/grading/configs.py).
    """
    started = time.perf_counter()
    job = make_job(kernel, spec, puzzle, sizes=sizes, nelem=nelem, blocks=B,
                   seed=random.randrange(1, 10**6) if seed is None else seed, timeout=timeout, isolate=isolate,
                   record=record, viz=viz, perf=perf, compile_check=compile_check, quiet=quiet,
                   compiled=shown_target(compiled), observe=observe, efficiency=efficiency, gpu=gpu)
    missing = autotune_missing(job)
    if missing is not None:
        return present(job, build_result(job, error=missing), picture=False)
    if job.handle.chain.autotuner is not None:  # the steps below once per config, in one verdict

        def start_config(launch: Any, tuned: list[Sizes], **overrides: Any) -> StartedGrading:
            return start_grading(job.for_config(launch, tuned, **overrides), time.perf_counter())

        result = grade_every_config(job, start_config, started)
    else:
        result = start_grading(job, started).finish()
    return present(job, result)


class StartedGrading:
    """test()'s steps for one kernel launch (a plain kernel, or one config of an autotuned one), begun:
    the signature, the sizes and their inputs are checked and the runs started (their child process
    works in the background, the compile check beside it); `finish()` collects the runs, judges each
    size, measures the speed and makes the verdict. Each step returns its data; build_result makes the
    verdict from them."""

    def __init__(self, job: GradingJob, started: float) -> None:
        self.job, self.started = job, started
        self.problem = _setup_problem(job)
        self.cases: list[Case] = []
        if self.problem is None:
            self.cases, self.problem = _cases(job)
        self.runs: PendingRuns | None = None
        self.check: Any = None
        if self.problem is None and not on_gpu() and _compile_check.enabled(job.compile_check):
            # What the compile check cannot see: a kernel that asks whether it is interpreted (the compiler
            # folds that branch away). Read from its source first: it is neither run nor compiled (the
            # compiler calls the Python a kernel calls, with constant arguments).
            self.problem = interpreter_probe_error(job.handle)
        if self.problem is None:
            self.args_for = bind_arguments(job)
            # On a GPU only a puzzle graded on its compiled code is compiled here (begin decides).
            self.check = _compile_check.begin(job, self.args_for, self.cases)
            self.runs = start_runs(job, self.args_for, self.cases)

    @property
    def unknown_sizes(self) -> str | None:
        return unknown_sizes_note(self.job.puzzle, self.job.nelem, self.job.blocks)

    def cancel(self) -> None:
        """Not needed after all: end the runs' child process."""
        if self.runs is not None:
            self.runs.cancel()

    def finish(self) -> TestResult:
        job, started, cases = self.job, self.started, self.cases
        if self.runs is None:
            return build_result(job, error=self.problem, notes=[job.other_puzzles_kernel, self.unknown_sizes],
                                seconds=time.perf_counter() - started)
        found = job.puzzle
        runs = self.runs.collect()
        if job.observe is not None:
            job.observe(cases, runs)
        outcomes = judge_runs(job, cases, runs)
        for outcome in outcomes:  # a stopped size shows its limit, not a time
            outcome.time_limit = job.timeout if outcome.status == "timeout" else None
        notes = _compile_check.fold(self.check, outcomes, job, started)
        notes.append("unknown puzzle: tested only the sizes given" if found is None else None)
        notes += [job.other_puzzles_kernel, self.unknown_sizes]
        notes.append(argument_order_note(job))
        notes.append(STEP_THROUGH_ADVICE if on_gpu() and calls_breakpoint_if(job.handle) else None)
        if not on_gpu() and not all(o.passed for o in outcomes):  # compiled, these lines are right
            notes += python_on_blocks_notes(job.handle)
        perf_report = efficiency = None
        passed = bool(outcomes) and all(o.passed for o in outcomes)
        if job.perf and passed:
            perf_report, speed_note = measure_speed(job, self.args_for, outcomes[0].sizes)
            notes.append(speed_note)
        if job.efficiency_gpu is not None and passed:
            try:
                efficiency, why = efficiency_of(job, outcomes, job.efficiency_gpu, grade=test)
            except Exception as err:  # noqa: BLE001 - a report that cannot be made is a note, never a failed verdict
                efficiency, why = None, f"efficiency: not read ({type(err).__name__}: {err})"
            notes.append(efficiency.text() if efficiency is not None else why)
        return build_result(job, outcomes, notes=notes, perf=perf_report, seconds=time.perf_counter() - started,
                            compiled=self.compiled_code(), efficiency=efficiency)

    def compiled_code(self) -> Compiled | None:
        """What the kernel compiles to for the target test(compiled=...) names, at the first size: the compile
        check's own full compile where it ran one for that target, else one of its own (the same cache)."""
        job = self.job
        if job.compiled is None or not self.cases:
            return None
        sizes = dict(self.cases[0].sizes)
        if isinstance(self.check, _compile_check.Check) and any(
                it["stage"] == "full" and it["target"] == job.compiled for it in self.check.items):
            return from_check(self.check, job.compiled, sizes)
        return compile_call(job.handle, self.args_for(self.cases[0]), job.compiled, sizes)


def shown_target(compiled: bool | str | int) -> int | None:
    """test()'s `compiled` as a target: True is sm_90; False or None shows nothing."""
    if compiled is False or compiled is None:
        return None
    return 90 if compiled is True else target_number(compiled)


def start_grading(job: GradingJob, started: float) -> StartedGrading:
    """Begin grading one kernel launch; `.finish()` gives its verdict."""
    return StartedGrading(job, started)


def _setup_problem(job: GradingJob) -> KernelError | None:
    """Why the kernel cannot be graded at all: an untested Triton, or one without an API the puzzle needs, no spec,
    a signature the puzzle cannot call, a size rule broken."""
    # The checked interpreter relies on Triton's internals: refuse an untested Triton, or one where the grader's
    # hooks are not found, in words.
    unsupported = compat.triton_problem() or interpreter_hooks.hooks_problem()
    if unsupported:
        return KernelError("setup", unsupported)
    if job.spec is None:
        return KernelError("spec", "pass the spec: test(kernel, spec, ...); this kernel's name matches no puzzle")
    needs = job.puzzle.needs_triton if job.puzzle is not None else None
    if needs is not None and (missing := needs.missing(job.puzzle.number)):  # never run into Triton's AttributeError
        if not needs.call:
            return KernelError("setup", missing)
        if (refused := feature_call_error(job.handle, needs.call, missing)) is not None:
            return refused
    if job.puzzle is not None and (old_gpu := gpu_worker.gpu_too_old(job.puzzle.min_sm, job.puzzle.number)):
        return KernelError("setup", old_gpu)
    return check_kernel(job)


def _cases(job: GradingJob) -> tuple[list[Case], KernelError | None]:
    """Each size to run (resolved once, in the job), with its inputs and expected output."""
    if job.size_problem is not None:
        return [], KernelError("sizes", job.size_problem)
    try:
        return [make_case(job, s, i) for s, i in zip(job.run_sizes, job.run_streams, strict=True)], None
    except (SpecError, TypeError, ValueError) as err:
        return [], KernelError("spec", f"cannot build inputs from the spec: {err}")


test.__test__ = False  # the autograder, not a pytest test (test files import it by name)
