"""The compiler processes, seen from the grader: started with `import puzzles`, one for the front
ends and one for the full compiles; they run puzzles/running/compile_check/worker.py as a script."""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

from puzzles.running.compile_check.settings import cache_dir, enabled


class Worker:
    """One compiler process. Two run: one for the front ends, which a grading cell waits for, and
    one, at a lower CPU priority, for the full compiles, which may take seconds (or a minute for
    a kernel with huge blocks) and must never hold up the next cell's front end."""

    def __init__(self, kind: str) -> None:
        env = dict(os.environ, TRITON_INTERPRET="0", PUZZLES_COMPILE_WORKER=kind)
        env.pop("PYTHONSTARTUP", None)
        self.proc = subprocess.Popen(
            # Not -I: Triton may be a user-site install. The working directory is left off the
            # path (a notebook folder may hold anything); the grader's own path follows later.
            [sys.executable, "-c", "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
             f"import runpy; runpy.run_path({str(Path(__file__).with_name('worker.py'))!r}, run_name='__main__')"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            # A session of its own: a Jupyter kernel that shuts down signals the children in its process group
            # and waits until none is left, and it counts one that died and was not yet reaped (it waited
            # until Jupyter killed it, seconds later). This one ends with this process (stop(), or its stdin
            # closing) and is reaped by its reader.
            start_new_session=True)
        self.lock = threading.Condition()
        self.replies: dict[tuple[int, int], dict] = {}
        self.next_job = 0
        self.dead = False
        threading.Thread(target=self._read, daemon=True).start()
        import atexit

        atexit.register(self.stop)

    def stop(self) -> None:
        """Stop the worker with this process (whatever it was compiling is not needed any more)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def submit(self, spec: dict, items: list[tuple[int, dict]], cache: str) -> int:
        with self.lock:
            self.next_job += 1
            job = self.next_job
        data = pickle.dumps({"job": job, "spec": spec, "items": items, "cache": cache, "path": list(sys.path)})
        try:
            self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.dead = True
        return job

    def _read(self) -> None:
        stream = self.proc.stdout
        while True:
            head = stream.read(8)
            if len(head) < 8:
                break
            reply = pickle.loads(stream.read(int.from_bytes(head, "little")))
            with self.lock:
                self.replies[(reply["job"], reply["index"])] = reply["verdict"]
                self.lock.notify_all()
        with self.lock:
            self.dead = True
            self.lock.notify_all()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=60)  # it closed its output: reap it now, not at the next start

    def wait(self, job: int, indices: list[int], seconds: float, into: dict[int, dict]) -> None:
        deadline = time.monotonic() + seconds
        with self.lock:
            while True:
                for i in indices:
                    if i not in into and (job, i) in self.replies:
                        into[i] = self.replies.pop((job, i))
                left = deadline - time.monotonic()
                if all(i in into for i in indices) or self.dead or left <= 0:
                    return
                self.lock.wait(left)


WORKERS: dict[str, Worker] = {}  # kind ("front" or "full") -> its running process


def worker_for(kind: str) -> Worker:
    """The running process of this kind, started (again) if it is not running."""
    if kind not in WORKERS or not WORKERS[kind].alive():
        WORKERS[kind] = Worker(kind)
    return WORKERS[kind]


def wait_idle(seconds: float = 600.0) -> bool:
    """Wait until the worker has loaded the compiler and finished every check it was given
    (benchmarks and tests use it; grading never needs to). False if it did not in time."""
    deadline = time.monotonic() + seconds
    done = True
    for kind in ("front", "full"):
        worker = worker_for(kind)
        job = worker.submit({}, [(0, {"stage": "ping"})], str(cache_dir()))
        got: dict[int, dict] = {}
        worker.wait(job, [0], max(0.0, deadline - time.monotonic()), got)
        done = done and 0 in got
    return done


start_worker_and_wait = wait_idle


def warm_up(kinds: tuple[str, ...] = ("front",)) -> None:
    """Start these compiler processes now (they load the compiler in the background). By default the front
    end's, which a grading cell waits for; the full compiles' process starts with the first full compile the
    cache cannot answer (a cell hardly waits for it, and most cells need none: every notebook kernel and
    test process paid its start for nothing). The class grader's worker starts both before it becomes its
    job's user (puzzles/classroom/worker.py)."""
    if enabled():
        for kind in kinds:
            worker_for(kind)

