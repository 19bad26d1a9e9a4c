"""Run a library function that launches a learner's kernel where `test()` runs kernels.

A notebook cell outside `test()` that launches the learner's kernel (puzzle 21's one launch
against a loop, puzzle 20's sweep) must not be able to kill the notebook either: on a CUDA
machine the function runs in the GPU worker (puzzles/running/gpu_worker.py: a fault restarts the worker,
not the notebook), elsewhere in a forked child process with a time limit (a wild pointer under
the interpreter segfaults the child, not the notebook). What the function printed is printed
here; a failure becomes one message in the cell.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any

from puzzles.running.child import can_fork, run_in_child
from puzzles.running.errors import KernelError, error_from_exception, timeout_message
from puzzles.running.gpu_worker import Reply


def run_safely(target: str, *args: Any, timeout: float = 120.0, limit_call: str = "",
               **kwargs: Any) -> Reply:
    """Call `module:function(*args, **kwargs)` in the GPU worker (on a GPU) or in a child process
    (elsewhere, where the OS can fork); the kernels among the arguments go along. `limit_call`: how the
    learner raises the time limit, for the message of a run stopped at it ("": the learner cannot)."""
    from puzzles.running.kernel import on_gpu

    if on_gpu():
        from puzzles.running import gpu_worker

        return gpu_worker.call(target, *args, timeout=timeout, **kwargs)
    module, name = target.split(":")
    function = getattr(importlib.import_module(module), name)
    kernels = [a for a in [*args, *kwargs.values()] if hasattr(a, "__getitem__") and hasattr(a, "fn")]

    def job() -> tuple[str, Any, KernelError | None, str]:
        from puzzles.running.interpreter import memoized_plain_launches

        out = io.StringIO()
        # Its interpreted launches patched as test()'s are (bfloat16 computed as on a GPU, among others).
        with contextlib.redirect_stdout(out), memoized_plain_launches():
            try:
                return "ok", function(*args, **kwargs), None, out.getvalue()
            except Exception as exc:  # noqa: BLE001 - a learner's kernel can raise anything
                return "error", None, error_from_exception(exc, kernels[0] if kernels else None), out.getvalue()

    if can_fork():
        status, payload = next(run_in_child([job], timeout))
        if status != "ok":
            message = timeout_message(timeout, call=limit_call) if status == "timeout" else str(payload)
            return Reply(status, error=KernelError(status, message))
    else:
        payload = job()
    status, value, error, printed = payload
    return Reply(status, value, error, printed)


GRADE_ADVICE = "Grade the kernel with test() above: it names the access, program and line."


def show(reply: Reply, what: str, advice: str = GRADE_ADVICE) -> Any:
    """Print what the function printed and, if it failed, one message; return its value."""
    if reply.printed:
        print(reply.printed, end="" if reply.printed.endswith("\n") else "\n")
    if reply.status != "ok":
        why = reply.error.describe() if reply.error is not None else reply.status
        if reply.status == "fault":
            why = f"the kernel faulted on the GPU ({why}); the GPU process was restarted"
        print(f"{what} stopped: {why}\n{advice}")
    return reply.value


class Sandboxed:
    """`sandboxed(kernel)[grid](*args, **kwargs)`: the launch `kernel[grid](...)` where test() runs
    kernels (the GPU worker on a GPU, a forked child elsewhere), for a notebook's own demos and
    experiments. The tensors among the arguments come back holding what the kernel left in them;
    what the kernel printed is printed; a fault or an endless loop is one message, never a dead
    notebook. Tensors can stay on the CPU: on a GPU they are copied to it for the launch."""

    def __init__(self, kernel: Any, timeout: float = 60.0) -> None:
        self.kernel, self.timeout = kernel, timeout

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **kwargs: Any) -> None:
            reply = run_safely("puzzles.running.sandbox:launch_here", self.kernel, grid, list(args), kwargs,
                               timeout=self.timeout, limit_call="sandboxed(kernel, timeout={})[grid](...)")
            tensors = _tensors_in(list(args) + list(kwargs.values()))
            advice = ("test(kernel, spec) names the line it was on." if reply.status == "timeout" else
                      "A bad address? test(kernel, spec) names the access, its program and its line.")
            for original, result in zip(tensors, show(reply, "The launch", advice) or [], strict=False):
                original.copy_(result)  # the kernel's writes, in the notebook's own tensors

        return launch


def sandboxed(kernel: Any, timeout: float = 60.0) -> Sandboxed:
    """Launch `kernel` where it cannot hurt the notebook: `sandboxed(kernel)[grid](*args, **kwargs)`."""
    return Sandboxed(kernel, timeout)


def launch_here(kernel: Any, grid: Any, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """In the GPU worker or the child: the launch, on this process's device; returns every tensor
    argument as it is after the kernel (on the CPU)."""
    import torch

    from puzzles.running.kernel import on_gpu

    device = "cuda" if on_gpu() else "cpu"

    def placed(value: Any) -> Any:
        return value.to(device) if isinstance(value, torch.Tensor) else value

    args = [placed(a) for a in args]
    kwargs = {k: placed(v) for k, v in kwargs.items()}
    kernel[grid](*args, **kwargs)
    if device == "cuda":
        torch.cuda.synchronize()
    return [t.cpu() for t in _tensors_in(args + list(kwargs.values()))]


def _tensors_in(values: list[Any]) -> list[Any]:
    import torch

    return [v for v in values if isinstance(v, torch.Tensor)]
