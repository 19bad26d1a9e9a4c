"""A warm parent for the class grader's workers, on a machine without CUDA.

A worker started as `python -m puzzles.classroom.worker` spends about 3 s of CPU importing torch,
Triton and the grader before it grades anything: per student, and again after every crash. The
launcher (`python -m puzzles.classroom.worker --launcher`, started once by the grader with the workers'
environment) imports all that once and forks one worker per request. The child then becomes what
a freshly started worker would be: it closes the launcher's channel (nothing leads back to the
launcher or the grader), starts a session of its own, takes the folder, environment and standard
streams it was sent, and runs `worker.main()`, which applies the limits and drops to the worker's
own user before any submitted code runs, as a started worker does.

The fork server itself (the socket pair, the pidfd, the child's set-up) is puzzles/running/fork_server.py. Not on
a CUDA machine: the launcher imports the grader, and a class worker may load CUDA before it forks
(isolation.Worker starts each worker itself there).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from pathlib import Path

from puzzles.running.fork_server import LaunchedProcess, Launcher, can_fork

# The entries of a worker's environment that name its own folder; the rest is the launcher's too.
FOLDER_VARIABLES = ("HOME", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TMPDIR")


@functools.cache
def can_fork_workers() -> bool:
    """Whether this machine can fork workers from a launcher: Linux with pidfds, no CUDA, not turned off
    (PUZZLES_FORK_WORKERS=0)."""
    if os.environ.get("PUZZLES_FORK_WORKERS", "1") == "0" or not can_fork():
        return False
    import torch

    return not torch.cuda.is_available()


def worker_command(*args: str) -> list[str]:
    """`python -P -m puzzles.classroom.worker ARGS`: the worker without its working folder (the submission's
    copies) on sys.path, so that no submitted file named like a module shadows one. Python 3.10 has no -P
    (nor PYTHONSAFEPATH): there the same is done by hand, before anything is imported from the folder."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "puzzles.classroom.worker", *args]
    return [sys.executable, "-c", "import sys; del sys.path[0]; import runpy; "
            "runpy.run_module('puzzles.classroom.worker', run_name='__main__', alter_sys=True)", *args]


LAUNCHERS: dict[tuple, Launcher | None] = {}  # by base environment; None: it failed, workers are started instead
LAUNCHERS_LOCK = threading.Lock()
MAX_LAUNCHERS = 2  # each holds torch and Triton in memory; the least recently used one stops


def launch(folder: Path, env: dict[str, str], log: int) -> LaunchedProcess | None:
    """A worker forked from the launcher for this environment (started now if none runs), writing what it
    prints to `log`; None where the launcher failed (the caller starts the worker itself)."""
    base = {k: v for k, v in env.items() if k not in FOLDER_VARIABLES}
    key = tuple(sorted(base.items()))
    with LAUNCHERS_LOCK:
        known = key in LAUNCHERS
        launcher = LAUNCHERS.pop(key, None)
        if not known or (launcher is not None and launcher.process.poll() is not None):
            if not LAUNCHERS:
                import atexit

                atexit.register(stop_all)
            launcher = Launcher(base, worker_command("--launcher"))
        LAUNCHERS[key] = launcher  # the most recently used last
        while len(LAUNCHERS) > MAX_LAUNCHERS:
            oldest = LAUNCHERS.pop(next(iter(LAUNCHERS)))
            if oldest is not None:
                oldest.stop()
    if launcher is None:
        return None
    request_read, request_write = os.pipe()
    report_read, report_write = os.pipe()
    try:
        pid, pidfd = launcher.start(folder, env, [request_read, report_write, log])
    except OSError:
        for fd in (request_write, report_read):
            os.close(fd)
        with LAUNCHERS_LOCK:
            if LAUNCHERS.get(key) is launcher:
                LAUNCHERS[key] = None
        launcher.stop()
        return None
    finally:
        for fd in (request_read, report_write):
            os.close(fd)
    return LaunchedProcess(pid, pidfd, request_write, report_read)


def stop_all() -> None:
    with LAUNCHERS_LOCK:
        for launcher in LAUNCHERS.values():
            if launcher is not None:
                launcher.stop()
        LAUNCHERS.clear()
