"""Step 3 of grading: running the kernel at every size.

Without a GPU each size runs in Triton's interpreter, in a child process where the OS can fork
(a wild pointer or an endless loop cannot hurt the notebook); on a CUDA machine it is compiled
and run on the GPU, with guard zones checked after the run, then checked under the interpreter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from puzzles.execution import (
    KernelError,
    KernelTimeout,
    RunOutput,
    can_fork,
    error_from_exception,
    kernel_file,
    launch_interpreted,
    run_in_child,
    time_limit,
    timeout_message,
)
from puzzles.harness.cases import _Case
from puzzles.inputs import (
    build_arena,
)
from puzzles.puzzle import Sizes
from puzzles.recording import Recorder, Trace


def on_gpu() -> bool:
    """True when kernels are compiled for a CUDA GPU rather than interpreted."""
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"


# The child process stops a kernel itself (to report its line); the parent waits this much longer.
_CHILD_GRACE = 3.0


def _run_cases(kernel: Any, args_for: Callable, cases: list[_Case], timeout: float,
               isolate: bool | None, record: bool) -> list[RunOutput]:
    """One run per size, in order; the runs stop after the first size that times out."""
    # test(isolate=False) is for debugging: the kernel's prints and the debugger keep the real
    # stdout and stdin instead of being captured.
    capture = isolate is not False
    if on_gpu():
        runs = _run_on_gpu(kernel, args_for, cases, timeout, record, capture)
    else:
        jobs = [(lambda c=case: _timed(timeout, lambda: _run_interpreted(kernel, args_for, c, record, capture)))
                for case in cases]
        if isolate is None:
            isolate = can_fork()
        runs = []
        if isolate:
            for status, payload in run_in_child(jobs, timeout + _CHILD_GRACE):
                runs.append(payload if status == "ok" else RunOutput(error=KernelError(status, payload)))
                if _timed_out(runs[-1]):
                    break  # the interpreter stops at the first size that times out
        else:
            for job in jobs:
                runs.append(job())
                if _timed_out(runs[-1]):
                    break
    for case, run in zip(cases, runs, strict=False):
        if _timed_out(run):
            where = " (in the access check under Triton's interpreter)" if on_gpu() else ""
            run.error.message = timeout_message(timeout, _size_text(case.sizes), where)
    return runs


def _timed(timeout: float, job: Callable[[], RunOutput]) -> RunOutput:
    try:
        with time_limit(timeout):
            return job()
    except KernelTimeout:  # fired between the kernel's end and the limit's end
        return RunOutput(error=KernelError("timeout", timeout_message(timeout)))


def _timed_out(run: RunOutput) -> bool:
    return run.error is not None and run.error.kind == "timeout"


def _size_text(sizes: Sizes) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def _run_on_gpu(kernel: Any, args_for: Callable, cases: list[_Case], timeout: float, record: bool, capture: bool,
                run_compiled: Callable[[Any, Callable, _Case], RunOutput] | None = None) -> list[RunOutput]:
    """Each size compiled and run on the GPU, then checked under the interpreter; a timeout in
    the check is the verdict (the compiler may have removed an endless loop the check cannot
    finish), and no later size is checked."""
    runs = []
    for case in cases:
        run = (run_compiled or _run_compiled)(kernel, args_for, case)
        if run.error is None and record:
            checked = _timed(timeout, lambda c=case: _run_interpreted(kernel, args_for, c, True, capture))
            _merge_check(run, checked)
        runs.append(run)
        if _timed_out(run):
            break
    return runs


def _run_interpreted(kernel: Any, args_for: Callable, case: _Case, record: bool, capture: bool = True) -> RunOutput:
    args, kwargs = args_for(case)
    arena = case.arena
    aliases = getattr(arena, "aliases", {})  # a second name for a region (puzzle 21's z) is no tensor of its own
    trace = Trace({n: (tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in arena.tensors.items()
                   if n not in aliases},
                  tuple(case.grid) + (1,) * (3 - len(case.grid)), recorded=record)
    recorder = Recorder(arena.regions(), {n: t.element_size() for n, t in arena.tensors.items()},
                        set(case.guarded or case.input_names), trace, kernel_file(kernel), record=record)
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out) if capture else contextlib.nullcontext():
        error = launch_interpreted(kernel, case.grid, args, kwargs, recorder)
    seconds = time.perf_counter() - started
    return RunOutput(arena.output(), trace, error, out.getvalue(), seconds)


def _merge_check(compiled: RunOutput, checked: RunOutput) -> None:
    """The GPU's answer, with the interpreter's account of every access.

    A compiled kernel's out-of-bounds loads leave no trace and its stores only damage guard
    zones, so the same kernel also runs once under the guarded interpreter on CPU copies (in
    this process: CUDA forbids forking) to name each invalid access, its program and its line.
    """
    compiled.stdout = checked.stdout  # what the kernel printed, as the interpreter ran it
    if checked.error is None:
        compiled.trace = checked.trace
        compiled.trace.output = checked.output  # with masked-off lanes poisoned: judged too
    elif _timed_out(checked):
        compiled.error = checked.error  # a check that never ends is a failure, whatever the GPU said
    else:
        compiled.stdout += (f"(the access check under Triton's interpreter could not run: "
                            f"{checked.error.describe()})\n")


def _run_compiled(kernel: Any, args_for: Callable, case: _Case) -> RunOutput:
    """Compile and run on the GPU; out-of-bounds writes show up as damaged guard zones."""
    cpu = case.arena
    gpu = build_arena({n: (tuple(t.shape), t.dtype) for n, t in cpu.tensors.items()}, device="cuda")
    gpu.buffer.fill_(0xA5)
    for n, t in cpu.tensors.items():
        gpu.tensors[n].copy_(t)
    if case.relink is not None:
        case.relink(gpu)  # the copied table still holds the CPU arena's addresses
    guard = gpu.buffer.clone()
    gpu_case = dataclasses.replace(case, arena=gpu)
    args, kwargs = args_for(gpu_case)
    started = time.perf_counter()
    try:
        kernel[case.grid](*args, **kwargs)
        torch.cuda.synchronize()
    except Exception as exc:  # compile errors and launch failures of the learner's kernel
        return RunOutput(error=error_from_exception(exc, kernel))
    seconds = time.perf_counter() - started
    # Every byte outside the tensors must still hold the guard pattern.
    damaged = gpu.buffer != guard
    for t in gpu.tensors.values():
        start = t.data_ptr() - gpu.buffer.data_ptr()
        damaged[start : start + t.numel() * t.element_size()] = False
    violations = []
    if damaged.any():
        # The guard zone after a tensor belongs to it (the arena spaces tensors that way).
        first = gpu.buffer.data_ptr() + int(torch.nonzero(damaged)[0])
        regions = gpu.regions()
        owner = max((r for r in regions if r[0] <= first), default=regions[0], key=lambda r: r[0])
        violations.append(f"a store wrote outside {owner[2]} ({int(damaged.sum())} bytes in guard zones)")
    return RunOutput(gpu.output().cpu(), None, None, "", seconds, violations)
