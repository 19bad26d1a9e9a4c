"""Step 3 of grading: running the kernel at every size.

Without a GPU each size runs in Triton's interpreter, in a child process where the OS can fork
(a wild pointer or an endless loop cannot hurt the notebook); on a CUDA machine it is compiled
and run on the GPU in the GPU worker process (a fault or an endless loop ends that process, not
the notebook), with guard zones checked after the run, then checked under the interpreter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import time
from collections.abc import Callable
from typing import Any

import torch
import triton

from puzzles.course.puzzle import Sizes
from puzzles.grading.cases import Case
from puzzles.grading.inputs import build_arena
from puzzles.grading.job import GradingJob
from puzzles.running.child import ChildResults, can_fork, run_in_child
from puzzles.running.errors import KernelError, timeout_message
from puzzles.running.interpreter import RunOutput, launch_interpreted, rewrite_before_forking
from puzzles.running.kernel import kernel_file, on_gpu
from puzzles.running.limits import KernelTimeout, time_limit
from puzzles.running.recording import Recorder, Trace

# The child process stops a kernel itself (to report its line); the parent waits this much longer.
_CHILD_GRACE = 3.0
# On a GPU, the access checks get a child process per size on a machine with this many cores.
_CORES_FOR_A_CHILD_PER_SIZE = 4


class PendingRuns:
    """One kernel's runs over its cases, started: the child process that runs them under the
    interpreter (without a GPU: the runs themselves; on a GPU: the access checks beside the GPU
    runs) is forked at once, so several launches (an autotuned kernel's configs) work side by side
    on the machine's cores. `collect()` waits for the results; `cancel()` ends the children unread."""

    def __init__(self, job: GradingJob, args_for: Callable, cases: list[Case],
                 run_compiled: Callable[[Any, Callable, Case], RunOutput] | None = None) -> None:
        # The runs get the job's `KernelHandle` as their kernel: nothing about it is resolved again per size.
        kernel, timeout, isolate, record = job.handle, job.timeout, job.isolate, job.record
        # One config of an autotuned kernel shares the machine with the other configs' runs: one child for it.
        spread = job.handle.chain.config_launch is None
        self.kernel, self.args_for, self.cases, self.timeout = kernel, args_for, cases, timeout
        if run_compiled is None and on_gpu():
            run_compiled = functools.partial(run_in_gpu_worker, timeout=timeout)
        self.run_compiled = run_compiled  # None: no GPU, the interpreted runs are the runs
        self.gpu = run_compiled is not None
        # test(isolate=False) is for debugging: the kernel's prints and the debugger keep the real
        # stdout and stdin instead of being captured.
        capture = isolate is not False
        self.jobs = [(lambda c=case: _timed(timeout, lambda: run_interpreted(kernel, args_for, c, record, capture)))
                     for case in cases]
        if self.gpu:  # the interpreted runs are the access checks: none without recording
            self.jobs = self.jobs if record else []
            # isolate=True (the class worker) forks even where this process has loaded CUDA: the checks need
            # none, and in-process they would share the process's handles with the kernel.
            forked = bool(self.jobs) and (can_fork() if isolate is None else isolate)
        else:
            forked = can_fork() if isolate is None else isolate
        self.children: list[ChildResults] = []
        if forked:
            # On a GPU the checks run beside the GPU runs: one child per size where the machine has the
            # cores (every size checked at once keeps a warm grading cell within a second), else one child
            # for all (interpreted, each child would pay the interpreter's warm-up again).
            per_size = self.gpu and len(self.jobs) > 1 and (os.cpu_count() or 1) >= _CORES_FOR_A_CHILD_PER_SIZE
            # Without a GPU, a launch that has the machine to itself (`spread`: not one config among several)
            # deals its sizes out to a child per idle core: each child is forked from a process whose
            # interpreter is warm, so it pays no warm-up, and the sizes run side by side. Where no core is
            # idle (a class graded in parallel, a test suite) a second child only adds a fork: one child.
            count = len(self.jobs) if per_size else (
                min(len(self.jobs), idle_cores()) if spread and not self.gpu else 1)
            rewrite_before_forking(kernel)
            groups = deal(self.cases, count)
            self.child_of = {i: child for child, group in enumerate(groups) for i in group}
            self.children = [run_in_child([self.jobs[i] for i in group], timeout + _CHILD_GRACE)
                             for group in groups]

    def _from_child(self, i: int, stopped: str) -> tuple[str, RunOutput]:
        """Size i's interpreted run, from the child it was dealt to (each child's results come in the
        order of its sizes, which are read in order)."""
        child = self.children[self.child_of[i]]
        status, payload = next(child, ("crash", stopped))
        return status, payload if status == "ok" else RunOutput(error=KernelError(status, payload))

    def collect(self) -> list[RunOutput]:
        """One run per size, in order; the runs stop after the first size that times out."""
        runs = self._collect_gpu() if self.gpu else self._collect_interpreted()
        for case, run in zip(self.cases, runs, strict=False):
            if _timed_out(run) and "on the GPU" not in run.error.message:
                where = " (in the access check under Triton's interpreter)" if self.gpu else ""
                run.error.message = timeout_message(self.timeout, _size_text(case.sizes), where)
        return runs

    def cancel(self) -> None:
        for child in self.children:
            child.close()

    def _collect_interpreted(self) -> list[RunOutput]:
        runs: list[RunOutput] = []
        try:
            for i, job in enumerate(self.jobs):
                if not self.children:
                    runs.append(job())
                else:
                    status, run = self._from_child(i, "the run stopped")
                    runs.append(run)
                    if status != "ok":
                        break  # the child is gone
                if _timed_out(runs[-1]):
                    break  # the interpreter stops at the first size that times out
        finally:
            self.cancel()
        remember_seconds(self.cases, runs)
        return runs

    def _collect_gpu(self) -> list[RunOutput]:
        """Each size compiled and run on the GPU (in the GPU worker, puzzles/running/gpu_worker.py), and
        checked under the interpreter (in the forked child where the OS can fork: this process never
        touches CUDA); a timeout in the check is the verdict (the compiler may have removed an endless
        loop the check cannot finish), and no later size is checked. A CUDA fault is checked too: the
        check names the access that caused it."""
        runs: list[RunOutput] = []
        lost = False  # a fault or a crash: the later sizes run only under the interpreter (no restart each)
        try:
            for case in self.cases:
                runs.append(RunOutput(error=KernelError("lost", "not run on the GPU: an earlier size faulted"))
                            if lost else self.run_compiled(self.kernel, self.args_for, case))
                lost = lost or (runs[-1].error is not None and runs[-1].error.kind in ("fault", "crash"))
                if _timed_out(runs[-1]):
                    break
            for i, run in enumerate(runs):
                if not self.jobs or _timed_out(run):
                    continue
                checked = self._from_child(i, "the access check stopped")[1] if self.children else self.jobs[i]()
                if run.error is not None and run.error.kind == "lost":
                    runs[i] = run = checked  # after a fault: the interpreter's verdict alone
                elif run.error is None or run.error.kind in ("fault", "crash"):
                    _merge_check(run, checked)
                if _timed_out(checked):
                    del runs[i + 1:]
                    break
        finally:
            self.cancel()
        return runs


def start_runs(job: GradingJob, args_for: Callable, cases: list[Case]) -> PendingRuns:
    """Start one run per size (without a GPU: interpreted in a forked child where the OS can fork;
    on a GPU: compiled in the GPU worker, checked under the interpreter); `collect()` the results."""
    return PendingRuns(job, args_for, cases)


def run_on_gpu(job: GradingJob, args_for: Callable, cases: list[Case],
               run_compiled: Callable[[Any, Callable, Case], RunOutput] | None = None) -> list[RunOutput]:
    """The GPU path of `start_runs` whatever this machine has: `run_compiled` (default: the GPU worker)
    runs each size, the interpreter checks it."""
    compiled_run = run_compiled or functools.partial(run_in_gpu_worker, timeout=job.timeout)
    return PendingRuns(job, args_for, cases, compiled_run).collect()


def idle_cores() -> int:
    """Cores that other work leaves idle (at least 1), this process's own share taken out: the fewer of
    the processes runnable elsewhere now (Linux) and over the last minute (the load average, which lags:
    it still counts work that has just ended). A learner's notebook leaves a laptop's cores to its grading;
    a class graded in parallel, or a test suite, keeps them busy by both counts."""
    try:
        others = max(0.0, os.getloadavg()[0] - 1.0)
    except OSError:  # no load average on this OS: take the machine as busy
        return 1
    try:
        with open("/proc/loadavg") as stat:  # "0.52 0.58 0.59 2/345 12345": 2 runnable now, this one among them
            others = min(others, int(stat.read().split()[3].split("/")[0]) - 1)
    except (OSError, IndexError, ValueError):
        pass
    return max(1, (os.cpu_count() or 1) - round(others))


# Seconds each size took the last time it ran in this process (by its sizes and grid): a warm cell deals its
# sizes by what they cost last time, a first one by the programs in their grids.
_LAST_SECONDS: dict[tuple, float] = {}


def _size_key(case: Case) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in case.sizes.items())), tuple(map(repr, case.grid))


def deal(cases: list[Case], count: int) -> list[list[int]]:
    """The sizes' indices dealt to `count` children, each to the least loaded so far, the costliest first
    (what a size took the last time it ran here, else the programs in its grid, whose count the
    interpreter's time grows with); each child's in order."""
    programs = [functools.reduce(lambda a, b: a * (b if isinstance(b, int) else 1), case.grid, 1) for case in cases]
    known = [_LAST_SECONDS.get(_size_key(case)) for case in cases]
    costs = known if all(k is not None for k in known) else programs
    loads = [0.0] * count
    groups: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(len(cases)), key=lambda i: -costs[i]):
        child = loads.index(min(loads))
        groups[child].append(i)
        loads[child] += costs[i]
    return [sorted(group) for group in groups if group]


def remember_seconds(cases: list[Case], runs: list[RunOutput]) -> None:
    """Keep what each size took, for the next grading's `deal`."""
    for case, run in zip(cases, runs, strict=False):
        if run.seconds:
            _LAST_SECONDS[_size_key(case)] = run.seconds


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


def run_interpreted(kernel: Any, args_for: Callable, case: Case, record: bool, capture: bool = True) -> RunOutput:
    """One size under the guarded interpreter, in this process: the output, the trace, the error."""
    args, kwargs = args_for(case)
    arena = case.arena
    aliases = getattr(arena, "aliases", {})  # a second name for a region (puzzle 21's z) is no tensor of its own
    trace = Trace({n: (tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in arena.tensors.items()
                   if n not in aliases},
                  tuple(case.grid) + (1,) * (3 - len(case.grid)), recorded=record)
    recorder = Recorder(arena.regions(), {n: t.element_size() for n, t in arena.tensors.items()},
                        set(case.guarded or case.input_names), trace, kernel_file(kernel), record=record,
                        layouts=case.layouts)
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out) if capture else contextlib.nullcontext():
        error = launch_interpreted(kernel, case.grid, args, kwargs, recorder)
    seconds = time.perf_counter() - started
    return RunOutput(arena.output(), trace, error, out.getvalue(), seconds)


def _merge_check(compiled: RunOutput, checked: RunOutput) -> None:
    """The GPU's answer, with the interpreter's account of every access.

    A compiled kernel's out-of-bounds loads leave no trace and its stores only damage guard
    zones, so the same kernel also runs once under the guarded interpreter on CPU copies to name
    each invalid access, its program and its line (and the one behind a CUDA fault).
    """
    if not compiled.stdout.strip():
        compiled.stdout = checked.stdout  # printed nothing on the GPU: what it printed in the interpreter
    if compiled.error is not None and compiled.error.kind in ("fault", "crash"):
        invalid = checked.trace.invalid if checked.trace is not None else []
        if invalid:
            compiled.trace, first = checked.trace, invalid[0]
            compiled.error.message += f"; the access check under Triton's interpreter: {first.describe()}"
            compiled.error.line, compiled.error.source = first.line, first.source
        elif checked.error is not None and not _timed_out(checked):
            compiled.error.message += f"; under Triton's interpreter: {checked.error.describe()}"
        return
    if checked.error is None:
        compiled.trace = checked.trace
        compiled.trace.output = checked.output  # with masked-off lanes poisoned: judged too
    elif _timed_out(checked):
        compiled.error = checked.error  # a check that never ends is a failure, whatever the GPU said
    else:
        compiled.stdout += (f"(the access check under Triton's interpreter could not run: "
                            f"{checked.error.describe()})\n")


@dataclasses.dataclass(frozen=True)
class ArenaTensor:
    """Stands for the arena's tensor `name` in arguments sent to the GPU worker."""

    name: str


class ArenaNames:
    """An arena's stand-in for `args_for`: each tensor an `ArenaTensor`."""

    def __init__(self, names: list[str]) -> None:
        self.tensors = {n: ArenaTensor(n) for n in names}


def run_in_gpu_worker(kernel: Any, args_for: Callable, case: Case, timeout: float) -> RunOutput:
    """One size compiled and run in the GPU worker; a CUDA fault or the time limit restarts it."""
    from puzzles.running import gpu_worker

    args, kwargs = args_for(dataclasses.replace(case, arena=ArenaNames(list(case.arena.tensors))))
    tensors = {n: t.clone() for n, t in case.arena.tensors.items()}
    sizes = _size_text(case.sizes)
    reply = gpu_worker.call("puzzles.grading.runs:run_compiled_case", kernel, tensors, args, kwargs,
                            tuple(case.grid), case.relink, timeout=timeout)
    if reply.status == "ok":
        output, violations, seconds = reply.value
        return RunOutput(output, None, None, reply.printed, seconds, violations)
    error = reply.error or KernelError("crash", "the GPU process failed")
    if reply.status == "fault":
        error = KernelError("fault", f"{_fault_words(error.message)} at {sizes} (the GPU process was restarted)",
                            error.line, error.source, error.filename)
    elif reply.status == "timeout":
        error = KernelError("timeout", timeout_message(timeout, sizes, " on the GPU (the GPU process was restarted)"))
    elif reply.status == "crash":
        error.message = f"{error.message} at {sizes}"
    # A launch that failed compiling printed the compiler's words (an assertion, the module's dump), not the kernel's.
    return RunOutput(error=error, stdout="" if error.kind == "compile" else reply.printed)


def _fault_words(message: str) -> str:
    """"illegal memory access" for CUDA's ways of saying that a kernel touched a bad address."""
    lowered = message.lower()
    if "misaligned" in lowered:
        return "misaligned memory access"
    if any(w in lowered for w in ("illegal memory access", "illegal address", "address space")):
        return "illegal memory access"
    return f"CUDA error ({message.split(chr(10))[0][:160]})"


def use_scratch_allocator(device: str) -> None:
    """Give compiled kernels the global scratch memory that device-side tensor descriptors
    (tl.make_tensor_descriptor) need on a GPU, which Triton asks of `triton.set_allocator` and refuses without
    one; the interpreter needs none. The GPU worker is the grader's process: no learner's allocator is there."""
    set_allocator = getattr(triton, "set_allocator", None)
    if set_allocator is not None:
        set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))


def run_compiled_case(kernel: Any, tensors: dict[str, torch.Tensor], args: list[Any], kwargs: dict[str, Any],
                      grid: tuple[int, ...], relink: Callable[[Any], None] | None
                      ) -> tuple[torch.Tensor, list[str], float]:
    """In the GPU worker: compile and run one size on a guarded copy of the case's arena; returns
    (the output on the CPU, the guard zones' violations, seconds). Out-of-bounds writes show up
    as damaged guard zones (the pattern 0xA5 around every tensor)."""
    device = os.environ.get("PUZZLES_WORKER_DEVICE", "cuda")
    gpu = build_arena({n: (tuple(t.shape), t.dtype) for n, t in tensors.items()}, device=device)
    gpu.buffer.fill_(0xA5)
    for n, t in tensors.items():
        gpu.tensors[n].copy_(t)
    if relink is not None:
        relink(gpu)  # the copied table still holds the CPU arena's addresses
    guard = gpu.buffer.clone()

    def real(value: Any) -> Any:
        return gpu.tensors[value.name] if isinstance(value, ArenaTensor) else value

    use_scratch_allocator(device)
    started = time.perf_counter()
    kernel[grid](*[real(a) for a in args], **{k: real(v) for k, v in kwargs.items()})
    if device == "cuda":
        torch.cuda.synchronize()
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
    return gpu.output().cpu(), violations, seconds
