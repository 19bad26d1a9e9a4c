"""Time limits on a kernel's run, that stay out of the way of a debugger.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
from collections.abc import Iterator


class KernelTimeout(BaseException):
    """Raised into the running thread when an in-process run outlives its limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the current thread after `seconds` (interpreted kernels are Python code)."""
    target = threading.get_ident()
    done = threading.Event()

    def fire() -> None:
        while not done.wait(seconds):
            if not _in_debugger(target):
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(KernelTimeout))
                return
            # Stopped at a debugger prompt (test(..., isolate=False)): the learner's time is not the
            # kernel's. Wait for the debugger to let go, then give the kernel its whole limit again.
            while _in_debugger(target) and not done.wait(0.2):
                pass

    watcher = threading.Thread(target=fire, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


_DEBUGGERS = ("pdb", "bdb", "cmd", "IPython.core.debugger", "ipdb")


def _in_debugger(thread_id: int) -> bool:
    """True while the thread is inside a debugger (at its prompt, or stepping)."""
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_DEBUGGERS):
            return True
        frame = frame.f_back
    return False

