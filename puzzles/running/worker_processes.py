"""Starting the GPU worker's processes (puzzles/running/gpu_worker.py): forked from a fork server that has imported
torch, Triton and the grader but never loads CUDA (puzzles/running/fork_server.py), so a new worker loads only CUDA
(under a second on an H200, against 4-6 s for a started Python), or started as a new Python where forking cannot be
done here. How many spares the worker keeps loaded is decided here too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from puzzles.running.fork_server import LaunchedProcess, Launcher, can_fork
from puzzles.running.frames import FrameReader

START_LIMIT = 300.0  # seconds a fresh worker may take to load torch, Triton and CUDA


@dataclass
class WorkerProcess:
    """One started worker process: the pipe it answers on, and its own stderr (outside calls), shown if it dies."""

    proc: subprocess.Popen
    reader: FrameReader
    log: Any
    started_at: float
    # The file its calls' prints are captured in (PUZZLES_WORKER_PRINTS): read here when it dies within a call, since
    # a kernel that crashes its process (a printf flood can) never sends back what it printed.
    prints_path: str | None = None
    name: str | None = None  # the device's name, once it has said "ready"
    capability: int = 0  # its compute capability as one number (90 for sm_90; 0 for the CPU device), said with it

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, limit: float = START_LIMIT) -> str | None:
        """Wait (up to `limit`) until it has loaded: the device's name, or None if it died or did not load."""
        if self.name is None:
            status, payload = self.reader.receive(limit)
            if status == "ready":
                self.name, self.capability = payload
        return self.name

    def end(self, wait: bool = True) -> None:
        """Kill it; `wait=False` reaps it in the background (a process whose CUDA context faulted can take
        seconds to exit while the driver tears the context down)."""
        if self.proc.poll() is None:
            self.proc.kill()
            if wait:
                self.proc.wait()
            else:
                threading.Thread(target=self.proc.wait, daemon=True).start()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        if self.prints_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.prints_path)

    def printed(self, limit: int) -> tuple[str, int]:
        """The start (up to `limit` bytes) of what its last call printed, and how many bytes were printed."""
        if self.prints_path is None:
            return "", 0
        try:
            with open(self.prints_path, "rb") as prints:
                return file_start(prints, limit)
        except OSError:
            return "", 0


def file_start(stream: Any, limit: int) -> tuple[str, int]:
    """The start (up to `limit` bytes, as text) of an open binary file, and its size in bytes."""
    size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    return stream.read(limit).decode(errors="replace"), size


def worker_environment(device: str, prints_path: str | None = None) -> dict[str, str]:
    """What a worker process runs with: the notebook's environment, the device, and no compile check of its own;
    `prints_path`, the file its calls' prints go to."""
    env = dict(os.environ, PUZZLES_WORKER_DEVICE=device, PUZZLES_COMPILE_CHECK="0", PUZZLES_IN_WORKER="1",
               TRITON_INTERPRET="1" if device == "cpu" else "0", PYTHONUNBUFFERED="1")
    env.pop("PYTHONSTARTUP", None)
    env.pop("PUZZLES_WORKER_PRINTS", None)
    if prints_path is not None:
        env["PUZZLES_WORKER_PRINTS"] = prints_path
    return env


def new_prints_file() -> str:
    """An empty file of this user's for a worker's prints (removed when the worker ends)."""
    fd, path = tempfile.mkstemp(prefix="puzzles-worker-prints-")
    os.close(fd)
    return path


def python_running(function: str) -> list[str]:
    """A Python command that calls `puzzles.running.gpu_worker.<function>()`, with the course on its path."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (f"import sys; sys.path[:0] = [{root!r}]; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
            f"from puzzles.running.gpu_worker import {function}; {function}()")
    return [sys.executable, "-c", code]


# One fork server per device, started with the first worker: it has imported torch, Triton and the grader, but never
# loads CUDA, so a worker forked from it loads only CUDA (under a second on an H200, against 4-6 s for a started
# Python). None: forking failed here, workers are started instead.
FORK_SERVERS: dict[str, Launcher | None] = {}
FORK_SERVERS_LOCK = threading.Lock()


def fork_server(device: str) -> Launcher | None:
    """The device's fork server (started on first use), or None where workers are started instead: no pidfds
    (not Linux), PUZZLES_FORK_GPU_WORKERS=0, or a server that failed."""
    if os.environ.get("PUZZLES_FORK_GPU_WORKERS", "1") == "0" or not can_fork():
        return None
    with FORK_SERVERS_LOCK:
        server = FORK_SERVERS.get(device, False)
        if server is False or (server is not None and server.process.poll() is not None):
            # One OpenMP thread: a fork copies one thread only, and the server refuses to fork a process of several.
            env = dict(worker_environment(device), OMP_NUM_THREADS="1")
            server = FORK_SERVERS[device] = Launcher(env, python_running("serve_forks"))
            if len(FORK_SERVERS) == 1:
                atexit.register(stop_fork_servers)
        return server


def stop_fork_servers() -> None:
    with FORK_SERVERS_LOCK:
        for server in FORK_SERVERS.values():
            if server is not None:
                server.stop()
        FORK_SERVERS.clear()


def forked(device: str) -> WorkerProcess | None:
    """A worker forked from the device's fork server, or None where that cannot be done (the caller starts one)."""
    server = fork_server(device)
    if server is None:
        return None
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    log = tempfile.TemporaryFile()
    prints_path = new_prints_file()
    try:
        pid, pidfd = server.start(Path.cwd(), worker_environment(device, prints_path),
                                  [request_read, reply_write, log.fileno()])
    except OSError:
        for fd in (request_write, reply_read):
            os.close(fd)
        log.close()
        os.unlink(prints_path)
        with FORK_SERVERS_LOCK:
            if FORK_SERVERS.get(device) is server:
                FORK_SERVERS[device] = None
        server.stop()
        return None
    finally:
        for fd in (request_read, reply_write):
            os.close(fd)
    proc = LaunchedProcess(pid, pidfd, request_write, reply_read)
    return WorkerProcess(proc, FrameReader(proc.stdout.fileno(), data_only=False), log, time.monotonic(), prints_path)


def launch(device: str) -> WorkerProcess:
    """Start a worker process (forked from the fork server where it can be); it loads CUDA in the background and
    then says "ready"."""
    worker = forked(device)
    if worker is not None:
        return worker
    log = tempfile.TemporaryFile()
    prints_path = new_prints_file()
    proc = subprocess.Popen(python_running("serve"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log, env=worker_environment(device, prints_path), start_new_session=True)
    return WorkerProcess(proc, FrameReader(proc.stdout.fileno(), data_only=False), log, time.monotonic(), prints_path)


def spare_count(device: str) -> int:
    """How many spare workers to keep loaded: PUZZLES_SPARE_WORKER=N decides; by default one on a GPU and none on the
    CPU device (there the test suite's processes would double for nothing)."""
    setting = os.environ.get("PUZZLES_SPARE_WORKER", "")
    if setting.isdigit():
        return min(int(setting), 4)
    return 1 if device == "cuda" else 0
