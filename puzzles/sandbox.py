"""Run a library function that launches a learner's kernel where `test()` runs kernels.

A notebook cell outside `test()` that launches the learner's kernel (puzzle 21's one launch
against a loop, puzzle 20's sweep) must not be able to kill the notebook either: on a CUDA
machine the function runs in the GPU worker (puzzles/gpu_worker.py: a fault restarts the worker,
not the notebook), elsewhere in a forked child process with a time limit (a wild pointer under
the interpreter segfaults the child, not the notebook). What the function printed is printed
here; a failure becomes one message in the cell.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any

from puzzles.execution import KernelError, can_fork, error_from_exception, run_in_child, timeout_message
from puzzles.gpu_worker import Reply


def run_safely(target: str, *args: Any, timeout: float = 120.0, **kwargs: Any) -> Reply:
    """Call `module:function(*args, **kwargs)` in the GPU worker (on a GPU) or in a child process
    (elsewhere, where the OS can fork); the kernels among the arguments go along."""
    from puzzles.execution import on_gpu

    if on_gpu():
        from puzzles import gpu_worker

        return gpu_worker.call(target, *args, timeout=timeout, **kwargs)
    module, name = target.split(":")
    function = getattr(importlib.import_module(module), name)
    kernels = [a for a in [*args, *kwargs.values()] if hasattr(a, "__getitem__") and hasattr(a, "fn")]

    def job() -> tuple[str, Any, KernelError | None, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                return "ok", function(*args, **kwargs), None, out.getvalue()
            except Exception as exc:  # noqa: BLE001 - a learner's kernel can raise anything
                return "error", None, error_from_exception(exc, kernels[0] if kernels else None), out.getvalue()

    if can_fork():
        status, payload = next(run_in_child([job], timeout))
        if status != "ok":
            message = timeout_message(timeout) if status == "timeout" else str(payload)
            return Reply(status, error=KernelError(status, message))
    else:
        payload = job()
    status, value, error, printed = payload
    return Reply(status, value, error, printed)


def show(reply: Reply, what: str) -> Any:
    """Print what the function printed and, if it failed, one message; return its value."""
    if reply.printed:
        print(reply.printed, end="" if reply.printed.endswith("\n") else "\n")
    if reply.status != "ok":
        why = reply.error.describe() if reply.error is not None else reply.status
        if reply.status == "fault":
            why = f"the kernel faulted on the GPU ({why}); the GPU process was restarted"
        print(f"{what} stopped: {why}\nGrade the kernel with test() above: it names the access, program and line.")
    return reply.value
