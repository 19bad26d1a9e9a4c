"""Processes that run submitted code: their own folder, an unprivileged user, OS limits, a
memory watch, and a line-by-line report read with deadlines.

The trusted grader starts `python -m puzzles.classroom.worker` in a new session (process group)
with a working copy of the submission as its folder (on a machine without CUDA it is forked, set up the
same way, from a launcher that has imported the grader once: launcher.py). Before it runs any submitted code the
worker applies `Limits` to itself: resource limits (file size, CPU time, address space where no
CUDA is in use), the network cut (a new network namespace, where the OS lets it), and, when it was
started as root, a switch to an unprivileged user of its own (no write access to anything but its
folder, no signal to any other process of the grader) with a limit on that user's processes.
Which protections were active is reported, never assumed. Memory is also watched from outside:
the grader measures the resident memory of each worker's whole process tree several times a
second (`MemoryWatch`) and kills the tree past the limit, which works beside CUDA too. The
grader reads the worker's events (JSON lines) with a deadline per step and kills the whole
process tree, and everything the worker's user still runs, when it is done.
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
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from puzzles.classroom.launcher import can_fork_workers, launch, worker_command
from puzzles.course.solution_source import ROOT

GIB = 1 << 30
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 1 << 14, 1 << 18
REFERENCES = ROOT / "solutions"
UID_BASE = 1_000_000  # users the system does not use: one per parallel job of each grader process
MAX_EVENT_BYTES = 64 << 20  # a worker that floods its report is cut off, not buffered forever
WATCH_SECONDS = 0.2  # between two measurements of the workers' memory


@dataclass
class Limits:
    """What one grading process may use. 0 means no limit."""

    memory_bytes: int = 6 * GIB  # resident memory of the worker's whole process tree (the grader watches it)
    # Also cap each process's address space at memory_bytes (RLIMIT_AS: an allocation past it fails at
    # once). None: only where CUDA is not available (the grader decides), since CUDA reserves far more
    # address space than it uses and fails under such a limit.
    address_space: bool | None = None
    processes: int = 256  # per unprivileged user of its own (threads count too); never on the grader's user
    file_bytes: int = 256 << 20  # largest file it may write
    cpu_seconds: int = 0  # CPU time of each process
    cut_network: bool = True
    uid: int | None = None  # switch to this user (only when started as root)


@dataclass
class Protections:
    """Which protections a worker really had (it says so before running submitted code)."""

    active: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def apply_limits(limits: Limits, folder: Path, before_user_switch: Callable[[], None] | None = None) -> Protections:
    """In the worker, before any submitted code: limits, network, user. Each step that the OS
    refuses is reported in `missing`, and grading goes on with the others. `before_user_switch`
    runs once the limits and the network cut are in place, while the process may still start
    programs that its own user could not (the grader's Python may sit in a folder only root reads)."""
    done = Protections(active=["own working folder", "own process group"])
    rlimits = [("RLIMIT_FSIZE", limits.file_bytes, "file size"), ("RLIMIT_CPU", limits.cpu_seconds, "CPU time")]
    if limits.address_space:
        rlimits.insert(0, ("RLIMIT_AS", limits.memory_bytes, "address space"))
    for name, value, words in rlimits:
        _set_limit(name, value, words, done)
    if limits.cut_network:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) == 0:
            done.active.append("no network")
        else:
            done.missing.append(f"network not cut ({os.strerror(ctypes.get_errno())})")
    if limits.uid is not None and os.geteuid() == 0:
        hide_references(done)
    elif REFERENCES.is_dir():
        done.missing.append(f"reference solutions hidden (only when started as root): {REFERENCES} is readable "
                            "where its permissions allow")
    if before_user_switch is not None:
        before_user_switch()
    if limits.uid is not None:
        try:
            os.setgroups([])
            os.setgid(limits.uid)
            os.setuid(limits.uid)
            done.active.append(f"unprivileged user {limits.uid} (writes only its folder)")
            # RLIMIT_NPROC counts every process and thread of the real user: only a user of its own
            # starts from zero (the grader's user, root or not, may already run more than the limit).
            _set_limit("RLIMIT_NPROC", limits.processes, "processes", done)
        except OSError as err:
            done.missing.append(f"unprivileged user ({err})")
    else:
        why = "not started as root" if os.geteuid() != 0 else "not asked for"
        done.missing.append(f"own user ({why}): the submission runs as the grader's user")
    if limits.processes and not any(a.startswith("processes limit") for a in done.active):
        done.missing.append("processes limit (it needs a user of its own: the count is per user)")
    return done


def hide_references(done: Protections) -> None:
    """Put an empty read-only folder over the reference solutions, for this process and what it starts (a
    mount namespace of its own, which needs root): the submission's user cannot read an answer, whatever
    the repository's permissions. Where there is no solutions/ (the Gradescope autograder ships none) there
    is nothing to hide."""
    if not REFERENCES.is_dir():
        done.active.append("no reference solutions on this machine")
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
            libc.mount(b"tmpfs", str(REFERENCES).encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       b"size=4k,mode=0555") != 0:
        done.missing.append(f"reference solutions hidden ({os.strerror(ctypes.get_errno())}): the submission's user "
                            f"can read {REFERENCES} where its permissions allow (chmod -R go-rwx it, or run as root)")
        return
    done.active.append("reference solutions hidden (an empty folder over solutions/)")


def _set_limit(name: str, value: int, words: str, done: Protections) -> None:
    if not value:
        return
    kind = getattr(resource, name)
    _, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)  # never more than we were given
    try:
        resource.setrlimit(kind, (value, value))
        done.active.append(f"{words} limit {_amount(name, value)}")
    except (ValueError, OSError) as err:
        done.missing.append(f"{words} limit ({err})")


def _amount(name: str, value: int) -> str:
    if name in ("RLIMIT_AS", "RLIMIT_FSIZE"):
        return f"{value / GIB:.3g} GiB"
    return f"{value} s" if name == "RLIMIT_CPU" else str(value)


def prepare_folder(parent: Path, files: list[Path], uid: int | None) -> tuple[Path, list[str]]:
    """A private working copy of the submission's files (each opened without following a link: a link
    is refused before, `symbolic_links`); returns the folder and the copies' names relative to it (the
    worker's view)."""
    folder = Path(os.path.realpath(parent))
    (folder / "submission").mkdir(parents=True)
    names = []
    for index, path in enumerate(files):
        name = f"submission/{index:02d}_{path.name}" if len({f.name for f in files}) < len(files) else \
            f"submission/{path.name}"
        try:  # never through a link: the grader may be root, and a link could name a reference or any file
            with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as source, open(folder / name, "wb") as copy:
                shutil.copyfileobj(source, copy)
        except OSError:
            (folder / name).write_bytes(b"")  # unreadable here: the worker reports it as unreadable
        names.append(name)
    if uid is not None:
        for sub in [folder, *folder.rglob("*")]:
            os.chown(sub, uid, uid)
    folder.chmod(0o700)
    return folder, names


def symbolic_links(files: list[Path]) -> list[str]:
    """Why each file of a submission that is a symbolic link is not graded (the grader never follows one:
    it may be root, and a link may name a reference solution or another student's file)."""
    return [f"{path}: a symbolic link (to {os.readlink(path)}), not graded: the grader does not follow links in "
            "a submission; submit the file itself" for path in files if path.is_symlink()]


def worker_environment(folder: Path) -> dict[str, str]:
    """The worker's environment: the grader's own `puzzles`, caches inside its folder (no
    shared compile cache another submission could poison), one thread per process."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TRITON_INTERPRET",
                                                         "CUDA_VISIBLE_DEVICES", "PUZZLES_COMPILE_CHECK")}
    env.update(PYTHONPATH=str(ROOT), PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
               HOME=str(folder), XDG_CACHE_HOME=str(folder / ".cache"), TRITON_CACHE_DIR=str(folder / ".triton"),
               TMPDIR=str(folder), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MALLOC_ARENA_MAX="2",
               PUZZLES_SPARE_WORKER="0")  # no spare GPU process: it would count against the memory limit
    return env


class Worker:
    """One grading process and its report. With a memory limit, `MEMORY_WATCH` measures its process
    tree from the moment it starts."""

    def __init__(self, folder: Path, request: dict) -> None:
        self.folder = folder
        self.memory_limit = int(request.get("limits", {}).get("memory_bytes") or 0)
        self.memory_used = 0  # bytes, when the watch killed the tree for passing memory_limit
        env = worker_environment(folder)
        with open(folder / "worker.log", "wb") as log:
            # Forked from a launcher that has imported torch and the grader (launcher.py), or started here.
            self.process = (launch(folder, env, log.fileno()) if can_fork_workers() else None) or subprocess.Popen(
                worker_command(), cwd=folder, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        self.uid = request.get("limits", {}).get("uid")
        self.buffer = b""
        self.received = 0
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        if self.memory_limit:
            MEMORY_WATCH.add(self)
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(json.dumps(request).encode())
            self.process.stdin.close()

    def events(self, deadline_for: dict[str, float]) -> Iterator[dict]:
        """The worker's events in order. Before each one, wait at most the seconds that
        `deadline_for[<previous event>]` allows; then yield {"event": "timeout"|"died"|"flooded"}, or
        {"event": "memory", "used": bytes} when the memory watch killed it, or {"event": "garbled"} for a line
        that is not one of the worker's events (and stop reading)."""
        last = "start"
        while True:
            line = self._next_line(time.monotonic() + deadline_for.get(last, deadline_for["default"]))
            if isinstance(line, str):
                if self.memory_used:  # set before the kill: whatever the reader saw, this is why
                    yield {"event": "memory", "after": last, "used": self.memory_used, "log": self.log_tail()}
                else:
                    yield {"event": line, "after": last, "log": self.log_tail()}
                return
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict) or not isinstance(event.get("event"), str):
                # Only the worker's own code writes this channel, one JSON object a line: anything else was
                # written by something it ran (the roster fails the report as forged).
                yield {"event": "garbled", "after": last, "line": line[:200].decode(errors="replace")}
                return
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
        """Kill the worker's process tree (its group, every descendant, a process that left the
        group or its parent included) and, when it ran as a user of its own, every process that user
        still has."""
        MEMORY_WATCH.remove(self)
        kill_tree(self.process.pid, self.uid)
        if self.uid is not None:
            kill_user_processes(self.uid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self.selector.close()
        self.process.stdout.close()


def kill_user_processes(uid: int, wait: float = 10.0) -> int:
    """SIGKILL every process whose real user is `uid` (a job's own user, never the grader's), and wait
    up to `wait` seconds until none is left: a killed process lingers while the kernel tears it down
    (seconds for one that held a CUDA context), and one forked meanwhile is killed on the next pass."""
    if uid in (0, os.getuid()):
        return 0
    killed = 0
    deadline = time.monotonic() + wait
    while True:
        left = [pid for pid, info in read_processes().items() if info.uid == uid]
        if not left or time.monotonic() > deadline:
            return killed
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.05)


# -- the process tree and its memory ---------------------------------------------------------------

@dataclass
class ProcessInfo:
    parent: int
    session: int
    uid: int  # the real user
    memory: int  # bytes of resident anonymous and shared memory (what a hog holds; not mapped files)


def read_processes() -> dict[int, ProcessInfo]:
    """Every process /proc shows, by id (one read of /proc/PID/status each)."""
    found: dict[int, ProcessInfo] = {}
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return found  # no /proc (not Linux): nothing to measure, nothing found to kill
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                text = status.read()
        except OSError:
            continue  # gone since the listing
        fields = {}
        for line in text.splitlines():
            key, _, value = line.partition(b":")
            if key in (b"State", b"PPid", b"NSsid", b"Uid", b"RssAnon", b"RssShmem"):
                fields[key] = value.split()
        if fields.get(b"State", [b"?"])[0] in (b"Z", b"X"):
            continue  # dead, waiting only to be reaped: it holds no memory and runs nothing
        try:
            found[int(entry.name)] = ProcessInfo(
                int(fields[b"PPid"][0]), int(fields.get(b"NSsid", [b"0"])[0]), int(fields[b"Uid"][0]),
                1024 * sum(int(fields.get(k, [b"0"])[0]) for k in (b"RssAnon", b"RssShmem")))
        except (KeyError, IndexError, ValueError):
            continue
    return found


def tree_members(processes: dict[int, ProcessInfo], root: int, uid: int | None) -> set[int]:
    """The worker `root`, every descendant, every process still in its session (a grandchild whose
    parent died), and, for a user of its own, every process of that user."""
    own_user = uid is not None and uid not in (0, os.getuid())
    members = {pid for pid, info in processes.items() if pid == root or info.session == root
               or (own_user and info.uid == uid)}
    children = defaultdict(list)
    for pid, info in processes.items():
        children[info.parent].append(pid)
    stack = list(members)
    while stack:
        for child in children[stack.pop()]:
            if child not in members:
                members.add(child)
                stack.append(child)
    return members


def kill_tree(root: int, uid: int | None) -> None:
    """SIGKILL the process group of `root` and every member of its tree. The members are found
    before any dies (a child of a killed process loses its parent link)."""
    members = tree_members(read_processes(), root, uid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, signal.SIGKILL)
    for pid in members - {os.getpid()}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class MemoryWatch:
    """Every WATCH_SECONDS, one thread of the grader (where no submission reaches) reads /proc once
    and sums the resident memory of each watched worker's process tree; a tree past its worker's
    limit is killed, the amount kept as the reason. Unlike an address-space limit this works beside
    CUDA, whose reservations are far larger than what it uses; a fast hog can pass the limit by what
    it allocates within one period before it is stopped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers: list[Worker] = []
        self.thread: threading.Thread | None = None

    @staticmethod
    def works() -> bool:
        """It measures through /proc (Linux)."""
        return os.path.exists(f"/proc/{os.getpid()}/status")

    def add(self, worker: Worker) -> None:
        with self.lock:
            self.workers.append(worker)
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, name="memory-watch", daemon=True)
                self.thread.start()

    def remove(self, worker: Worker) -> None:
        with self.lock:
            if worker in self.workers:
                self.workers.remove(worker)

    def _watch(self) -> None:
        while True:
            with self.lock:
                if not self.workers:
                    self.thread = None
                    return
                watched = list(self.workers)
            processes = read_processes()
            for worker in watched:
                members = tree_members(processes, worker.process.pid, worker.uid)
                used = sum(processes[pid].memory for pid in members)
                if used > worker.memory_limit:
                    with self.lock:  # stop() waits for this: the worker cannot be reaped (its id reused) meanwhile
                        if worker in self.workers:
                            worker.memory_used = used
                            kill_tree(worker.process.pid, worker.uid)
            time.sleep(WATCH_SECONDS)


MEMORY_WATCH = MemoryWatch()


def job_uid(slot: int) -> int:
    """An unprivileged user of its own for job `slot` of this grader process: distinct from every
    other job here and from the jobs of any other grader running on this machine at the same time
    (process ids are unique while they run), so jobs cannot signal, read or clean up each other."""
    return UID_BASE + os.getpid() * 256 + slot % 256


def can_switch_user() -> bool:
    return hasattr(os, "setuid") and os.geteuid() == 0


def limits_dict(limits: Limits) -> dict:
    return asdict(limits)
