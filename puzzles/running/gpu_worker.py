"""Learner kernels compiled for a GPU run here: in a worker process with its own CUDA context.

A kernel that faults on a GPU (an illegal address) leaves the CUDA context of its process unusable:
every later launch, and every torch op on the device, fails until the process ends. So the
notebook's process never launches a learner's compiled kernel and need not touch CUDA at all (it
can still fork for the interpreter's access check): `import puzzles` on a CUDA machine starts one
worker process in the background (`warm_up`), and each launch goes there as data:

- the kernel as source plus the globals it reads (`puzzles.running.kernel_source`), with its autotune
  configs, heuristics and launch options as data (`shipping.ship`); the worker rebuilds it at the learner's
  file and lines, so an error names the learner's line, and keeps it for the next call;
- a library function to run (`module:name`, e.g. the grader's one-size run) and its arguments,
  CPU tensors included; what the kernel printed (fd 1 and 2 of the worker) comes back with the
  answer.

A CUDA fault is an answer too (`status == "fault"`): the worker exits and a fresh one starts in
the background. A call that runs past its time limit (an endless loop on the GPU) ends the worker
the same way. The next call finds a working worker: the notebook never needs a restart.

A spare worker is kept warm beside the one in use (on a GPU; `PUZZLES_SPARE_WORKER=0` turns it off, `=N`
keeps N, on the CPU device too): started once the first worker is ready, it has loaded torch, Triton and
CUDA by the time a fault or a time limit ends the worker in use, so it takes over at once, and the
cell after a fault is as fast as any warm cell. Its own replacement starts as soon as it is taken, and is
ready within a second: workers are forked from a fork server (puzzles/running/fork_server.py) that has
imported torch, Triton and the grader but never loads CUDA, so a forked worker loads only CUDA (a started
Python takes 4-6 s), and several faults in a row each find a loaded spare (benchmarks/gpu_fault_recovery.py).

`PUZZLES_WORKER_DEVICE=cpu` (or `Worker(device="cpu")`) runs the same worker under Triton's
interpreter on CPU tensors: the test suite exercises the protocol without a GPU.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from puzzles.running.errors import KernelError
from puzzles.running.frames import FrameReader, send_frame
from puzzles.running.kernel import on_gpu
from puzzles.running.shipping import (
    CannotShip,
    ShippedBytes,
    ShippedKernel,
    as_bytes,
    from_bytes,
    land,
    map_leaves,
    ship_all,
)
from puzzles.running.worker_processes import START_LIMIT, WorkerProcess, file_start, launch, spare_count

# Words of CUDA errors after which the worker's context is gone (the process must end).
FAULT_WORDS = ("illegal memory access", "illegal address", "misaligned address", "unspecified launch failure",
               "operation not supported on global/shared address space", "an illegal instruction",
               "CUDA error", "AcceleratorError", "device-side assert")


@dataclass
class Reply:
    """A call's answer: status "ok" (value), "error" (the kernel raised: `error`), "fault" (a CUDA
    fault: `error`, the worker was restarted), "timeout" or "crash" (the worker was ended)."""

    status: str
    value: Any = None
    error: KernelError | None = None
    printed: str = ""
    seconds: float = 0.0


# -- the worker, seen from the notebook ----------------------------------------------------------------------


class Worker:
    """One worker process and the pipes to it; `call` runs one job there, one at a time. With `spare`, a
    second process is kept loaded to take over when this one ends (a fault, a time limit)."""

    def __init__(self, device: str = "cuda", spare: bool | int | None = None) -> None:
        self.device = device
        self.spares_kept = spare_count(device) if spare is None else int(spare)
        self.lock = threading.RLock()  # one call at a time; ready() takes it too
        self.device_name: str | None = None  # set once this process has loaded: it is ready
        self.known_name: str | None = None  # the GPU's name as the last ready worker said (it outlives restarts)
        self.known_capability = 0  # and its compute capability (90 for sm_90)
        self.current: WorkerProcess | None = None
        self.spares: list[WorkerProcess] = []  # loading or loaded, not yet used; the oldest first
        self.last_words = ""  # the stderr of a worker that died
        self.start_failure = ""  # the stderr of a worker that did not start
        self.start()
        atexit.register(self.stop)

    @property
    def spare(self) -> WorkerProcess | None:
        """The spare that takes over next (the oldest), or None."""
        return self.spares[0] if self.spares else None

    # The process in use, as the rest of the course reads it (benchmarks read `proc.pid`).
    @property
    def proc(self) -> subprocess.Popen | None:
        return self.current.proc if self.current is not None else None

    @property
    def reader(self) -> FrameReader | None:
        return self.current.reader if self.current is not None else None

    @property
    def log(self) -> Any:
        return self.current.log if self.current is not None else None

    @property
    def started_at(self) -> float:
        return self.current.started_at if self.current is not None else 0.0

    def start(self) -> None:
        """Take the oldest spare that is alive (it has loaded, or is loading, already), else start a fresh process;
        a spare taken is replaced at once."""
        while self.spares and not self.spares[0].alive:
            self.spares.pop(0).end()
        if self.spares:
            self.current = self.spares.pop(0)
            self.start_spare()
        else:
            self.current = launch(self.device)  # the spares start once this one is ready (not to slow its load)
        self.device_name = None

    def start_spare(self) -> None:
        """Start spares now, up to the number wanted (a dead one is replaced)."""
        for dead in [s for s in self.spares if not s.alive]:
            self.spares.remove(dead)
            dead.end()
        while len(self.spares) < self.spares_kept:
            self.spares.append(launch(self.device))

    def stop(self, wait: bool = True) -> None:
        """End the worker and its spares."""
        self.stop_current(wait)
        for spare in self.spares:
            spare.end(wait)
        self.spares = []

    def stop_current(self, wait: bool = True) -> None:
        """End the worker in use; `wait=False` reaps it in the background."""
        if self.current is not None:
            self.current.end(wait)
        self.current = None

    def restart(self) -> None:
        """End the worker in use and put the spare in its place (or start a fresh one, loading in the background)."""
        self.stop_current(wait=False)
        self.start()

    def ready(self, limit: float = START_LIMIT) -> bool:
        """Wait (up to `limit`) until the worker has loaded; False if it died or did not load."""
        with self.lock:  # one reader of the worker's pipe at a time
            return self.wait_loaded(limit)

    def wait_loaded(self, limit: float) -> bool:
        if self.device_name is not None and self.proc is not None and self.proc.poll() is None:
            return True
        if self.proc is None or (self.device_name is not None and self.proc.poll() is not None):
            self.restart()  # never started, or ended since (killed from outside, say)
        name = self.current.wait_ready(limit)
        if name is not None:
            self.device_name = self.known_name = name
            self.known_capability = self.current.capability
            self.start_spare()  # loads while this one works: a fault later costs no wait
            return True
        self.start_failure = self.startup_error()
        self.stop_current()
        return False

    def startup_error(self) -> str:
        if self.log is None:
            return "no message"
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-5:]
        return " | ".join(tail) or "no message"

    def crash_words(self) -> str:
        """What a worker that died within a call left: what the call printed before it died (a kernel whose printf
        flood crashed the process left only that), else the tail of its own stderr."""
        start, size = self.current.printed(PRINTED_LIMIT) if self.current is not None else ("", 0)
        if start.strip():
            return printed_text(start, size)
        return self.startup_error()

    def call(self, target: str, *args: Any, timeout: float = 60.0, **kwargs: Any) -> Reply:
        """Run `module:function(*args, **kwargs)` in the worker, kernels in the arguments shipped
        there; past `timeout` seconds the worker is ended (and restarted) and the reply says so."""
        try:
            request = {"target": target, "args": ship_all(list(args)), "kwargs": ship_all(kwargs),
                       "path": [p for p in sys.path if p not in ("", ".")]}
            pickle.dumps(request)  # fails here, in words, rather than half-way down the pipe
        except (CannotShip, pickle.PicklingError, TypeError, AttributeError) as exc:
            return Reply("error", error=KernelError("setup", f"cannot send the kernel to the GPU process: {exc}"))
        with self.lock:
            if not self.ready():
                why = self.start_failure
                self.start()
                return Reply("crash", error=KernelError("crash", f"the GPU process did not start: {why}"))
            started = time.monotonic()
            try:
                send_frame(self.proc.stdin.fileno(), request)
                status, payload = self.reader.receive(timeout)
            except OSError:
                status, payload = "crash", None
            seconds = time.monotonic() - started
            if status in ("timeout", "crash", "fault"):
                self.last_words = self.crash_words() if status == "crash" else ""
                self.restart()  # the next call finds a fresh worker (loading meanwhile)
            if status == "timeout":
                return Reply("timeout", error=KernelError("timeout", str(payload)), seconds=seconds)
            if status == "crash":
                return Reply("crash", error=KernelError("crash", "the kernel crashed the GPU process that ran it (the "
                                                        "notebook is unharmed; the GPU process was restarted)"),
                             printed=self.last_words, seconds=seconds)
            value, error, printed = payload
            return Reply(status, from_bytes(value), error, printed, seconds)


_WORKERS: dict[str, Worker] = {}


def worker(device: str | None = None) -> Worker:
    """The worker for `device` (default: PUZZLES_WORKER_DEVICE, else cuda), started on first use."""
    device = device or os.environ.get("PUZZLES_WORKER_DEVICE", "cuda")
    if device not in _WORKERS:
        _WORKERS[device] = Worker(device)
    return _WORKERS[device]


def warm_up() -> None:
    """Start the worker now, so that it has loaded CUDA before the first grading cell, and its spare once
    it has (in the background: the notebook never waits here)."""
    if os.environ.get("PUZZLES_IN_WORKER") != "1":
        w = worker()
        if w.spares_kept:
            threading.Thread(target=_ready_then_spare, args=(w,), daemon=True).start()


def _ready_then_spare(w: Worker) -> None:
    try:
        with w.lock:
            w.ready()  # starts the spare once the worker has loaded
    except (OSError, ValueError, AttributeError):  # the worker was stopped under it: the process is ending
        pass


def call(target: str, *args: Any, timeout: float = 60.0, **kwargs: Any) -> Reply:
    """`Worker.call` on the default worker."""
    return worker().call(target, *args, timeout=timeout, **kwargs)


def known_worker() -> Worker:
    """The default worker, once one has loaded and said what its GPU is (waits for the first to load; a verdict
    after a fault does not wait for the restarted one)."""
    w = worker()
    if w.known_name is None:
        w.ready()
    return w


def device_name() -> str:
    """The worker's GPU, by name."""
    return known_worker().known_name or "GPU"


def device_capability() -> int:
    """The worker's GPU's compute capability as one number (90 for sm_90), as the worker said when it loaded: the
    notebook's own process never asks CUDA (torch.cuda.get_device_capability would load CUDA there)."""
    return known_worker().known_capability


def gpu_too_old(min_sm: int, number: int) -> str:
    """Why this machine's GPU cannot run the puzzle's kernel compiled ("" when it can, or with no GPU in use: the
    interpreter runs any kernel): a puzzle whose `min_sm` is above the GPU's compute capability (fp8 tl.dot on
    an A100 or a T4) is refused in words instead of failing inside Triton's compiler."""
    if not on_gpu() or min_sm <= 0:
        return ""
    found = device_capability()
    if not found or found >= min_sm:  # a worker that did not load says so at the run, in its own words
        return ""
    return (f"puzzle {number} needs a GPU of compute capability {min_sm // 10}.{min_sm % 10} or newer (sm_{min_sm}+: "
            f"L4, RTX 40xx, H100, H200); this {device_name()} is sm_{found}. Grade it under Triton's interpreter "
            "instead: set TRITON_INTERPRET=1 before importing puzzles (or run on a CPU)")


# -- inside the worker ---------------------------------------------------------------------------------------


def serve() -> None:  # pragma: no cover - runs in the worker process
    """The worker's loop: load, say "ready", then answer each request until the pipe closes."""
    reply_fd = os.dup(1)  # replies; fd 1 and 2 are the kernel's (captured around each call)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = sys.stderr
    device = os.environ.get("PUZZLES_WORKER_DEVICE", "cuda")
    import torch
    import triton  # noqa: F401 - loaded before "ready"; TRITON_INTERPRET is already decided by the environment

    name, capability = "CPU (Triton interpreter)", 0
    if device == "cuda":
        torch.cuda.init()
        name = torch.cuda.get_device_name()
        major, minor = torch.cuda.get_device_capability()
        capability = major * 10 + minor
        _warm_gpu()
    send_frame(reply_fd, ("ready", (name, capability)))
    reader = FrameReader(0, data_only=False)
    landed: dict[bytes, Any] = {}
    while True:
        request = reader.receive(10**9)
        if not isinstance(request, dict):
            return  # the notebook closed the pipe
        send_frame(reply_fd, _answer(request, landed, device))
        if _poisoned:
            os._exit(3)


_poisoned = False
PRINTED_LIMIT = 64 * 1024  # bytes of what a kernel printed that come back with the answer
# The modules whose functions the grader calls in a worker ("module:function" targets): a fork server imports them once.
CALLED_MODULES = ("puzzles.grading.runs", "puzzles.grading.presenting")


def serve_forks() -> None:  # pragma: no cover - runs in the fork server's process
    """The fork server's process: import what a worker's calls import (never CUDA: a child of a process that loaded
    CUDA's driver gets a broken copy of it), then fork a worker per request."""
    import torch
    import triton.language  # noqa: F401

    from puzzles.running import fork_server

    for module in CALLED_MODULES:  # imported by name, as the worker imports each call's target
        importlib.import_module(module)

    if torch.cuda.is_initialized():
        return  # the caller starts its workers instead
    fork_server.serve(serve)


def _answer(request: dict, landed: dict[bytes, Any], device: str) -> tuple[str, Any]:  # pragma: no cover
    global _poisoned
    from puzzles.running.errors import error_from_exception

    for entry in request.get("path", []):  # the learner's own modules, as the notebook sees them
        if entry not in sys.path:
            sys.path.append(entry)
    kernels: list[Any] = []

    def land_one(value: Any) -> Any:
        if isinstance(value, ShippedBytes):
            return value.land()
        if isinstance(value, ShippedKernel):
            key = value.key()
            if key not in landed:
                if len(landed) > 64:
                    landed.clear()
                landed[key] = land(value)
            kernels.append(landed[key])
            return landed[key]
        return value

    printed = ""
    with _captured() as out, _launches_as_graded(device):
        try:
            args, kwargs = map_leaves(request["args"], land_one), map_leaves(request["kwargs"], land_one)
            module, name = request["target"].split(":")
            function = getattr(importlib.import_module(module), name)
            value = function(*args, **kwargs)
            if device == "cuda":
                import torch

                torch.cuda.synchronize()
            status, error = "ok", None
        except BaseException as exc:  # noqa: BLE001 - a learner's kernel can raise anything
            value, status = None, "error"
            error = error_from_exception(exc, kernels[0] if kernels else None)
            if device == "cuda" and _is_fault(exc):
                status, _poisoned = "fault", True
    printed = out()
    return status, (as_bytes(value), error, printed)


def _launches_as_graded(device: str) -> contextlib.AbstractContextManager[None]:  # pragma: no cover - in the worker
    """The CPU device stands in for a GPU under Triton's interpreter: its launches run with the course's patches
    (the range() of a scalar that older Tritons break on with a newer NumPy, bfloat16 as on a GPU), as every
    interpreted launch of the course does."""
    if device != "cpu":
        return contextlib.nullcontext()
    from puzzles.running.interpreter import memoized_plain_launches

    return memoized_plain_launches()


def _is_fault(exc: BaseException) -> bool:  # pragma: no cover - runs in the worker process
    """A CUDA error after which this process's context is unusable."""
    text = f"{type(exc).__name__}: {exc}"
    if any(word.lower() in text.lower() for word in FAULT_WORDS):
        return True
    try:
        import torch

        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception:  # noqa: BLE001
        return True
    return False


@contextlib.contextmanager
def _captured() -> Any:  # pragma: no cover - runs in the worker process
    """fd 1 and 2 into a file while the job runs (tl.device_print writes from C, not sys.stdout): the file the
    notebook's side named (PUZZLES_WORKER_PRINTS), emptied first, so that it can read what a kernel printed before
    it crashed this process."""
    path = os.environ.get("PUZZLES_WORKER_PRINTS")
    with (open(path, "w+b") if path else tempfile.TemporaryFile()) as sink:
        sys.stdout.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        text: list[str] = []
        try:
            yield lambda: "".join(text)
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
                ctypes.CDLL(None).fflush(None)  # C's buffered stdout: where the GPU's printf lands
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            text.append(printed_text(*file_start(sink, PRINTED_LIMIT)))


def printed_text(start: str, size: int) -> str:
    """What a kernel printed as a verdict carries it: the start of it, and how much more there was."""
    if size > PRINTED_LIMIT:  # a kernel that prints megabytes: its verdict carries the start of it
        return start + f"\n[... {size - PRINTED_LIMIT} more bytes printed, not shown]\n"
    return start


def _warm_gpu() -> None:  # pragma: no cover - runs in the worker process
    """Compile and launch a trivial kernel: the first compile in a process loads LLVM and the
    driver's module loader, which the first grading cell should not wait for."""
    try:
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def _warm(x_ptr, B: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B))

        x = torch.empty(16, dtype=torch.int32, device="cuda")
        _warm[(1,)](x, B=16)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - only a warm-up
        pass
