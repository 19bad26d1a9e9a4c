"""A fork server: a warm parent that has imported what its children need, and forks one child per request.

Starting Python and importing torch and Triton takes seconds of CPU; a fork of a process that already has them
takes milliseconds. Two users: the class grader's workers on a machine without CUDA (puzzles/classroom/launcher.py)
and the GPU worker's spares (puzzles/running/gpu_worker.py), forked before CUDA is loaded (a process that forks after
loading CUDA's driver gives its children a broken copy of it: the child loads CUDA itself).

The caller and the server talk over a Unix socket pair (one message per request: the child's folder, environment
and argv, with its standard streams passed as file descriptors); the server answers with a pidfd of the child,
which the caller waits on (it is not the child's parent: the server reaps it). The child becomes what a freshly
started process would be: it closes the server's channel (nothing leads back to the server or the caller), starts a
session of its own, takes the folder, environment and standard streams it was sent, and runs the server's `run`.

This module imports only the standard library: the tests load it by path, without the `puzzles` package.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

MESSAGE_BYTES = 1 << 20  # one request: a folder and an environment
START_SECONDS = 180.0  # the first request waits for the server's imports


def can_fork() -> bool:
    """This platform has what the server and its callers use: pidfds and file descriptors over sockets (Linux)."""
    return hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")


class LaunchedProcess:
    """A forked process, seen from its caller (not its parent: the launcher reaps it): what isolation.Worker,
    and jupyter_client for the tests' notebook kernels, read of a `subprocess.Popen`. `stdin` and `stdout`:
    the caller's ends of the child's pipes, if any."""

    stderr = None

    def __init__(self, pid: int, pidfd: int, stdin: int | None = None, stdout: int | None = None) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.stdin = os.fdopen(stdin, "wb") if stdin is not None else None
        self.stdout = os.fdopen(stdout, "rb", buffering=0) if stdout is not None else None
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self.returncode = -1  # the launcher reaped it and has its status; here only its end is known
            os.close(self.pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired("launched process", timeout)
        return self.poll()

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Launcher:
    """The caller's side of one fork server process (started with `command`, which calls `serve`)."""

    def __init__(self, env: dict[str, str], command: list[str], stderr: int | None = subprocess.DEVNULL) -> None:
        """`env`: the server's environment (what its imports read); `command`: the program that imports what the
        children need and calls `serve`; `stderr`: where the server itself writes (not its children)."""
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channel.settimeout(START_SECONDS)
        self.lock = threading.Lock()
        self.process = subprocess.Popen(command, env=env, cwd="/", stdin=theirs, stdout=subprocess.DEVNULL,
                                        stderr=stderr, start_new_session=True)
        theirs.close()

    def start(self, folder: Path, env: dict[str, str], fds: list[int],
              argv: list[str] | None = None) -> tuple[int, int]:
        """Fork a child in `folder` with `env`, these standard streams and `argv` as its sys.argv (default: the
        server's); its (pid, pidfd). Raises OSError when the server is gone."""
        request = json.dumps({"folder": str(folder), "env": env, "argv": argv}).encode()
        with self.lock:
            socket.send_fds(self.channel, [request], fds)
            reply, pidfds, _, _ = socket.recv_fds(self.channel, MESSAGE_BYTES, 1)
        if not reply or len(pidfds) != 1:
            for fd in pidfds:
                os.close(fd)
            raise OSError("the fork server did not answer")
        return json.loads(reply)["pid"], pidfds[0]

    def stop(self) -> None:
        """End the server (the children it forked live on: they are their own sessions)."""
        self.channel.close()  # it ends when its channel closes
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# -- the server process ----------------------------------------------------------------------------

def serve(run: Callable[[], int]) -> None:
    """The launcher process (its channel is its standard input): fork a child per request, which becomes a
    worker and calls `run`, until the grader closes the channel. The caller has imported what `run` needs."""
    channel = socket.socket(fileno=os.dup(0))
    if threading.active_count() > 1 or len(os.listdir("/proc/self/task")) > 1:
        return  # a fork copies one thread only (whatever lock another held stays held): the grader starts workers
    # Reap each worker as it ends; the grader holds a pidfd, which stays readable after the reaping.
    signal.signal(signal.SIGCHLD, lambda *_: reap())
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 3)
        except OSError:
            return
        if not request:
            return  # the grader is gone
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            channel.send(b"")
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        # SIGCHLD waits until the child's pidfd is open: a child that ends at once is reaped only after.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        session_read, session_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(session_read)
            become_worker(channel, json.loads(request), fds, run, session_write)
        os.close(session_write)
        pidfd = os.pidfd_open(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        # Answer once the child leads a session of its own (or died): signals sent to its process group then
        # reach it alone, never this process's group.
        os.read(session_read, 1)
        os.close(session_read)
        for fd in fds:
            os.close(fd)
        socket.send_fds(channel, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


def reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def become_worker(channel: socket.socket, request: dict, fds: list[int], run: Callable[[], int],
                  session_written: int) -> None:
    """In the forked child: what `subprocess.Popen(..., cwd=folder, env=env, start_new_session=True)` of a
    worker gives, then `run` (the worker itself). Says on `session_written` when it leads a session of its
    own. Never returns."""
    code = 70
    try:
        channel.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        os.setsid()
        os.write(session_written, b"s")
        os.close(session_written)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
        os.chdir(request["folder"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile

        tempfile.tempdir = None  # TMPDIR is the worker's folder now
        if request.get("argv"):
            sys.argv = list(request["argv"])
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the request, read by the worker
        code = run()
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 1
    except BaseException:  # noqa: BLE001 - said in the worker's log, which the grader shows
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code or 0)
