"""Processes that run submitted code: their own folder, an unprivileged user, OS limits, and
a line-by-line report read with deadlines.

The trusted grader starts `python -m puzzles.grade_worker` in a new session (process group)
with a working copy of the submission as its folder. Before it runs any submitted code the
worker applies `Limits` to itself: resource limits (address space, processes, file size, CPU
time), the network cut (a new network namespace, where the OS lets it), and, when it was started
as root, a switch to an unprivileged user of its own (no write access to anything but its
folder, no signal to any other process of the grader). Which protections were active is reported,
never assumed. The grader reads the worker's events (JSON lines) with a deadline per step and
kills the whole process tree, and everything the worker's user still runs, when it is done.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from puzzles.solution_source import ROOT

GIB = 1 << 30
CLONE_NEWNET = 0x40000000
UID_BASE = 1_000_000  # users the system does not use: one per parallel job of each grader process
MAX_EVENT_BYTES = 64 << 20  # a worker that floods its report is cut off, not buffered forever


@dataclass
class Limits:
    """What one grading process may use. 0 means no limit."""

    memory_bytes: int = 6 * GIB  # address space of each process (the kernel's child included)
    processes: int = 256  # per unprivileged user; threads count too
    file_bytes: int = 256 << 20  # largest file it may write
    cpu_seconds: int = 0  # CPU time of the worker process
    cut_network: bool = True
    uid: int | None = None  # switch to this user (only when started as root)


@dataclass
class Protections:
    """Which protections a worker really had (it says so before running submitted code)."""

    active: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def apply_limits(limits: Limits, folder: Path) -> Protections:
    """In the worker, before any submitted code: limits, network, user. Each step that the OS
    refuses is reported in `missing`, and grading goes on with the others."""
    done = Protections(active=["own working folder", "own process group"])
    rlimits = [("RLIMIT_AS", limits.memory_bytes, "memory"), ("RLIMIT_FSIZE", limits.file_bytes, "file size"),
               ("RLIMIT_CPU", limits.cpu_seconds, "CPU time")]
    if limits.uid is not None:  # the process count is per user: only meaningful for a user of its own
        rlimits.append(("RLIMIT_NPROC", limits.processes, "processes"))
    for name, value, words in rlimits:
        if not value:
            continue
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
            done.active.append(f"{words} limit {_amount(name, value)}")
        except (ValueError, OSError) as err:
            done.missing.append(f"{words} limit ({err})")
    if limits.cut_network:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) == 0:
            done.active.append("no network")
        else:
            done.missing.append(f"network not cut ({os.strerror(ctypes.get_errno())})")
    if limits.uid is not None:
        try:
            os.setgroups([])
            os.setgid(limits.uid)
            os.setuid(limits.uid)
            done.active.append(f"unprivileged user {limits.uid} (writes only its folder)")
        except OSError as err:
            done.missing.append(f"unprivileged user ({err})")
    else:
        why = "not started as root" if os.geteuid() != 0 else "not asked for"
        done.missing.append(f"own user ({why}): the submission runs as the grader's user")
    return done


def _amount(name: str, value: int) -> str:
    if name in ("RLIMIT_AS", "RLIMIT_FSIZE"):
        return f"{value / GIB:.3g} GiB"
    return f"{value} s" if name == "RLIMIT_CPU" else str(value)


def prepare_folder(parent: Path, files: list[Path], uid: int | None) -> tuple[Path, list[str]]:
    """A private working copy of the submission's files; returns the folder and the copies'
    names relative to it (the worker's view)."""
    folder = Path(os.path.realpath(parent))
    (folder / "submission").mkdir(parents=True)
    names = []
    for index, path in enumerate(files):
        name = f"submission/{index:02d}_{path.name}" if len({f.name for f in files}) < len(files) else \
            f"submission/{path.name}"
        try:
            shutil.copyfile(path, folder / name)
        except OSError:
            (folder / name).write_bytes(b"")  # unreadable here: the worker reports it as unreadable
        names.append(name)
    if uid is not None:
        for sub in [folder, *folder.rglob("*")]:
            os.chown(sub, uid, uid)
    folder.chmod(0o700)
    return folder, names


def worker_environment(folder: Path) -> dict[str, str]:
    """The worker's environment: the grader's own `puzzles`, caches inside its folder (no
    shared compile cache another submission could poison), one thread per process."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TRITON_INTERPRET",
                                                         "CUDA_VISIBLE_DEVICES", "PUZZLES_COMPILE_CHECK")}
    env.update(PYTHONPATH=str(ROOT), PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
               HOME=str(folder), XDG_CACHE_HOME=str(folder / ".cache"), TRITON_CACHE_DIR=str(folder / ".triton"),
               TMPDIR=str(folder), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MALLOC_ARENA_MAX="2")
    return env


class Worker:
    """One grading process and its report."""

    def __init__(self, folder: Path, request: dict) -> None:
        self.folder = folder
        log = open(folder / "worker.log", "wb")  # noqa: SIM115 - kept for the process's life
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "puzzles.grade_worker"], cwd=folder, env=worker_environment(folder),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        log.close()
        self.uid = request.get("limits", {}).get("uid")
        self.buffer = b""
        self.received = 0
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(json.dumps(request).encode())
            self.process.stdin.close()

    def events(self, deadline_for: dict[str, float]) -> Iterator[dict]:
        """The worker's events in order. Before each one, wait at most the seconds that
        `deadline_for[<previous event>]` allows; then yield {"event": "timeout"|"died"}."""
        last = "start"
        while True:
            line = self._next_line(time.monotonic() + deadline_for.get(last, deadline_for["default"]))
            if isinstance(line, str):
                yield {"event": line, "after": last, "log": self.log_tail()}
                return
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not ours: something the submission printed to our channel
            if not isinstance(event, dict) or not isinstance(event.get("event"), str):
                continue
            last = event["event"]
            yield event
            if last == "done":
                return

    def _next_line(self, deadline: float) -> bytes | str:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if not self.selector.select(left):
                continue
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            if not chunk:
                return "died"
            self.received += len(chunk)
            if self.received > MAX_EVENT_BYTES:
                return "flooded"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def log_tail(self, size: int = 600) -> str:
        try:
            data = (self.folder / "worker.log").read_bytes()[-size:]
        except OSError:
            return ""
        return data.decode(errors="replace").strip()

    def stop(self) -> None:
        """Kill the worker's process group and, when it ran as a user of its own, every
        process that user still has (a process that left the group included)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.uid is not None:
            kill_user_processes(self.uid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self.selector.close()
        self.process.stdout.close()


def kill_user_processes(uid: int) -> int:
    """SIGKILL every process whose real user is `uid` (a job's own user, never the grader's)."""
    if uid in (0, os.getuid()):
        return 0
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uids = next((line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")), [])
        if uids and int(uids[0]) == uid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


def job_uid(slot: int) -> int:
    """An unprivileged user of its own for job `slot` of this grader process: distinct from every
    other job here and from the jobs of any other grader running on this machine at the same time
    (process ids are unique while they run), so jobs cannot signal, read or clean up each other."""
    return UID_BASE + os.getpid() * 256 + slot % 256


def can_switch_user() -> bool:
    return hasattr(os, "setuid") and os.geteuid() == 0


def limits_dict(limits: Limits) -> dict:
    return asdict(limits)
