"""Debugging helpers for kernels run by Triton's interpreter.

Inside an interpreted kernel every value is a real array, so Python's own tools work; these
helpers keep their output to the programs you care about:

    @triton.jit
    def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
        pid = tl.program_id(0)
        offsets = pid * B0 + tl.arange(0, B0)
        print_if("offsets", offsets, pid_0=[1])     # only program 1 prints
        breakpoint_if(pid_0=[2])                    # stop in the debugger in program 2

They do nothing in a kernel compiled for the GPU (use `tl.device_print` there).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def _program_id() -> tuple[int, int, int] | None:
    try:
        from triton.runtime.interpreter import interpreter_builder
    except ImportError:
        return None
    grid_idx = getattr(interpreter_builder, "grid_idx", None)
    return tuple(int(i) for i in grid_idx) if grid_idx is not None else None


def _selected(pid: tuple[int, int, int], pid_0: Iterable[int] | int | None, pid_1: Iterable[int] | int | None,
              pid_2: Iterable[int] | int | None) -> bool:
    for axis, wanted in enumerate((pid_0, pid_1, pid_2)):
        if wanted is None:
            continue
        wanted = [wanted] if isinstance(wanted, int) else list(wanted)
        if pid[axis] not in wanted:
            return False
    return True


def _plain(value: Any) -> Any:
    data = getattr(getattr(value, "handle", None), "data", None)
    return data if data is not None else value


def print_if(message: str, *values: Any, pid_0: Iterable[int] | int | None = None,
             pid_1: Iterable[int] | int | None = None, pid_2: Iterable[int] | int | None = None) -> None:
    """Print `message` and the values (as arrays) only in the chosen program ids."""
    pid = _program_id()
    if pid is None or not _selected(pid, pid_0, pid_1, pid_2):
        return
    print(f"program {pid}: {message}", *[_plain(v) for v in values])


def breakpoint_if(pid_0: Iterable[int] | int | None = None, pid_1: Iterable[int] | int | None = None,
                  pid_2: Iterable[int] | int | None = None) -> None:
    """Enter the debugger only in the chosen program ids.

    Grade with `test(..., isolate=False)` so the debugger can talk to you (a child process has
    no terminal); `p offsets.handle.data` shows a block's values.
    """
    pid = _program_id()
    if pid is None or not _selected(pid, pid_0, pid_1, pid_2):
        return
    import pdb

    pdb.Pdb().set_trace(__import__("sys")._getframe(1))


def check_tensors(*tensors: torch.Tensor, device: str | None = None) -> None:
    """Raise a clear error unless every tensor is contiguous (and on `device`, if given).

    Kernels index memory by hand, so a transposed or sliced view silently reads the wrong
    elements; call this before launching a kernel.
    """
    for index, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"argument {index} is a {type(t).__name__}, not a tensor")
        if not t.is_contiguous():
            raise ValueError(f"argument {index} (shape {tuple(t.shape)}, strides {t.stride()}) is not contiguous: "
                             "call .contiguous() first")
        if device is not None and t.device.type != torch.device(device).type:
            raise ValueError(f"argument {index} is on {t.device}, expected {device}")
