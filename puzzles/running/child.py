"""Runs in a forked child process, so that a kernel that corrupts memory or hangs cannot hurt the
learner's own process.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch

from puzzles.running.frames import FrameReader, send_frame
from puzzles.running.interpreter import warm_interpreter

MAX_FD = 1 << 16  # above any descriptor a grading process holds (closerange is one close_range call on Linux)


def can_fork() -> bool:
    return hasattr(os, "fork") and not torch.cuda.is_initialized()


def run_in_child(jobs: list[Callable[[], Any]], timeout: float) -> ChildResults:
    """Run each job in one forked child, in order; yield ("ok", value) per job as it finishes,
    or ("timeout"|"crash", message) for the job that did not, after which the child is gone.

    The child is forked at once (the caller may do other work before reading the results; each
    job's `timeout` counts from when its result is asked for). It shares the parent's memory
    copy-on-write, so a kernel defined in a notebook cell runs as is; whatever it does to memory
    dies with the child.
    """
    warm_interpreter()
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, use of fork()"
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        # Keep only the pipe the results go back on (and stdin, stdout, stderr): whatever else the parent
        # holds (a class worker's report channel, the compile check's pipes) is out of the kernel's reach.
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, MAX_FD)
        sys.stdout = sys.stderr = io.StringIO()  # never write to the notebook's sockets
        sys.stdin = io.StringIO()  # a debugger here reads end-of-input and quits, instead of hanging
        sys.breakpointhook = _breakpoint_here  # plain pdb on those streams, whoever hooked it
        torch.set_num_threads(1)
        for job in jobs:
            try:
                payload = ("ok", job())
            except BaseException as exc:  # noqa: BLE001 - report anything to the parent
                payload = ("crash", f"{type(exc).__name__}: {exc}")
            send_frame(write_fd, payload)
        os._exit(0)
    os.close(write_fd)
    return ChildResults(pid, FrameReader(read_fd), len(jobs), timeout)


class ChildResults:
    """The results of `run_in_child`'s jobs, read in order, each within the time limit. The child is
    ended (killed if it still runs, and reaped) after its last result, after a result that is not "ok",
    or on `close()`, read or not: a run started and never read leaves no process behind."""

    def __init__(self, pid: int, reader: FrameReader, count: int, timeout: float) -> None:
        self.pid, self.reader, self.left, self.timeout = pid, reader, count, timeout
        self.closed = False

    def __iter__(self) -> ChildResults:
        return self

    def __next__(self) -> tuple[str, Any]:
        if self.closed or self.left <= 0:
            self.close()
            raise StopIteration
        try:
            status, payload = self.reader.receive(self.timeout)
        except BaseException:
            self.close()
            raise
        self.left -= 1
        if status != "ok" or self.left == 0:
            self.close()
        return status, payload

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.reader.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    def __del__(self) -> None:
        self.close()


def _breakpoint_here(*args: Any, **kwargs: Any) -> None:
    import pdb

    pdb.Pdb().set_trace(sys._getframe(1))

