"""`test()`: the autograder cell of every notebook.

    test(add_kernel, add_spec, nelem={"N0": 32})

runs the kernel at the canonical size and at every variation its puzzle allows, on fresh
random inputs, with the output poisoned and every memory access recorded and guarded, and
returns a `TestResult`. On a machine without a GPU the kernel runs in Triton's interpreter
inside a child process (a wild pointer or an endless loop cannot hurt the notebook); on a
CUDA machine it is compiled and run on the GPU, with guard zones checked after the run.

The steps, in the order the data flows: signature.py (is the kernel callable as the puzzle
needs?), cases.py (the sizes and each size's inputs), running.py (interpreter or GPU),
judging.py (a verdict per size), presenting.py (speed, and the verdict shown). An autotuned
kernel goes through the same steps once per config, in configs.py's loop.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from typing import Any

from puzzles import compat
from puzzles import compile_check as _compile_check
from puzzles.autotune_configs import is_autotuned
from puzzles.debug import STEP_THROUGH_ADVICE, calls_breakpoint_if
from puzzles.execution import KernelError, unwrap_kernel
from puzzles.harness.cases import SizeRuleError, make_case, resolve_puzzle, size_list
from puzzles.harness.configs import autotune_missing, grade_every_config
from puzzles.harness.judging import judge_runs
from puzzles.harness.presenting import device_name, measure_speed, present
from puzzles.harness.running import on_gpu, run_cases
from puzzles.harness.signature import argument_order_note, bind_arguments, check_kernel
from puzzles.inputs import SpecError
from puzzles.puzzle import Puzzle, Sizes
from puzzles.result import TestResult

__all__ = ["DEFAULT_TIMEOUT", "on_gpu", "present", "test"]

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

    An @triton.autotune kernel is graded under each of its configs (puzzles/harness/configs.py).
    """
    started = time.perf_counter()
    seed = random.randrange(1, 10**6) if seed is None else seed
    found = resolve_puzzle(puzzle, spec, kernel)
    spec = spec if found is None else found.spec
    missing = autotune_missing(kernel, found, seed, device_name())
    if missing is not None:
        return present(missing, quiet, False, found)
    options = {"seed": seed, "timeout": timeout, "isolate": isolate, "record": record, "perf": perf,
               "compile_check": compile_check}
    if is_autotuned(kernel):  # the steps below once per config, in one verdict

        def grade_config(launch: Any, tuned: list[Sizes], **overrides: Any) -> TestResult:
            # The config's sizes are the puzzle's sizes for this run (its B0 comes from the config).
            p = dataclasses.replace(found, sizes=tuple(tuned)) if found is not None else None
            return _grade(launch, spec, p, None, None, tuned, time.perf_counter(), **{**options, **overrides})

        result = grade_every_config(kernel, found, sizes, nelem, grade_config)
    else:
        result = _grade(kernel, spec, found, nelem, B, sizes, started, **options)
    result.seconds = time.perf_counter() - started
    return present(result, quiet, viz, found)


def _grade(kernel: Any, spec: Callable[..., Any] | None, found: Puzzle | None, nelem: Sizes | None,
           B: Sizes | None, sizes: list[Sizes] | None, started: float, *, seed: int, timeout: float,  # noqa: N803
           isolate: bool | None, record: bool, perf: bool, compile_check: bool | str) -> TestResult:
    """test()'s steps for one kernel launch (a plain kernel, or one config of an autotuned one): the
    signature, the sizes and their inputs, the runs, the verdict per size, the speed."""
    name = getattr(unwrap_kernel(kernel), "__name__", None) or getattr(kernel, "__name__", repr(kernel))
    title = f"Puzzle {found.number}: {found.title}" if found else getattr(spec, "__name__", "kernel")
    result = TestResult(title, name, [], 0.0, seed, device=device_name())

    # The checked interpreter relies on Triton's internals: refuse an untested Triton in words.
    unsupported = compat.triton_problem()
    problem = KernelError("setup", unsupported) if unsupported else None
    if problem is None:
        problem = check_kernel(kernel, spec, found) if spec is not None else KernelError(
            "spec", "pass the spec: test(kernel, spec, ...); this kernel's name matches no puzzle")
    sizes_to_run: list[Sizes] = []
    if problem is None:
        try:
            sizes_to_run = size_list(found, nelem, B, sizes)
        except SizeRuleError as err:
            problem = KernelError("sizes", str(err))
    if problem is None:
        try:
            cases = [make_case(spec, found, s, seed, i) for i, s in enumerate(sizes_to_run)]
        except (SpecError, TypeError, ValueError) as err:
            problem = KernelError("spec", f"cannot build inputs from the spec: {err}")
    if problem is not None:
        result.error = problem
    else:
        fn = bind_arguments(kernel, spec, found)
        check = None if on_gpu() else _compile_check.begin(kernel, fn, cases, found, compile_check)
        result.outcomes = judge_runs(kernel, cases, run_cases(kernel, fn, cases, timeout, isolate, record))
        for outcome in result.outcomes:  # a stopped size shows its limit, not a time
            outcome.time_limit = timeout if outcome.status == "timeout" else None
        _compile_check.apply(check, result, started, compile_check)
        if found is None:
            result.notes.append("unknown puzzle: tested only the sizes given")
        order = argument_order_note(kernel, found)
        if order:
            result.notes.append(order)
        if on_gpu() and calls_breakpoint_if(kernel):
            result.notes.append(STEP_THROUGH_ADVICE)
        if perf and result.passed:
            measure_speed(kernel, fn, spec, found, seed, result)
    result.seconds = time.perf_counter() - started
    return result


test.__test__ = False  # the autograder, not a pytest test (test files import it by name)
