"""Would this kernel compile for a real GPU? Checked ahead of time on a machine without one.

Triton's interpreter runs Python that its GPU compiler rejects (`tl.arange(j, j + B)` with a
start that is not a constant, a `lambda`, a nested `def`, a loop variable that changes type, a
global that is not `tl.constexpr`), so a kernel graded "passed" on a CPU could fail on the
learner's first GPU. Triton compiles for a GPU target without a GPU, so `test()` also compiles
the kernel for sm_80 and sm_90 (and sm_75, Colab's free T4, where the puzzle allows it):

- the front end (Python to Triton IR to GPU IR) at every tested size: this is where the
  interpreter-only constructs fail, and it is cheap;
- the whole compile (down to a cubin, through ptxas) at the canonical size, per target, which
  also tells the shared memory and the register spills the kernel would need.

The compiler runs in worker processes: `import puzzles` turned on the interpreter in this one
(every `@triton.jit` here, Triton's own `tl.sum` included, is an interpreted function), and the
interpreter patches `triton.language` while it runs. The workers start with the compiler on,
rebuild the learner's functions from their source (at their own file and lines, so an error names
the learner's line) and compile beside the interpreted run, on the other core: one does the front
ends, one (at a lower CPU priority) the full compiles, so a slow full compile never holds up the
next cell. `import puzzles` starts them, so the compiler is loaded before the first grading cell.

Verdicts are cached on disk (~/.cache/triton-puzzles/compile), keyed by the functions' source,
the globals they read, the argument types and the target: a re-run costs nothing.
Switch it off with PUZZLES_COMPILE_CHECK=0 or `test(..., compile_check=False)`.

This module imports only the standard library at the top: the worker runs this file as a script
and must not import torch or `puzzles` (which would turn the interpreter on again).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = 7  # bump when what the worker checks changes (invalidates the cache)
ALWAYS_TARGETS = (80, 90)  # A100 and H100 class
T4 = 75  # Colab's free tier, where the puzzle allows it
# Largest shared memory one block may use, per compute capability (bytes, opt-in limits).
SHARED_LIMIT = {75: 65536, 80: 166912, 86: 101376, 89: 101376, 90: 232448}
BUDGET = 1.0  # seconds a grading cell may take, compile check included
# How long a cell waits for the full compile once the interpreted run and the front end are done
# (within BUDGET): it rarely fails where the front end passed, its notes show on the next run, and
# a learner should not wait for it on every edit. `grade` waits for all of it.
FULL_GRACE = 0.1
FRONT_WAIT = 60.0  # the front end is always waited for: it is where the real failures are

_TORCH_TYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}


def enabled(flag: bool | str | None = None) -> bool:
    """On unless switched off; never on a GPU (there the kernel is really compiled)."""
    if flag is False or os.environ.get("PUZZLES_COMPILE_CHECK", "1").lower() in ("0", "false", "off", "no"):
        return False
    return os.environ.get("TRITON_INTERPRET", "0") == "1" or not _has_gpu()


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


def targets_for(min_sm: int = T4) -> tuple[int, ...]:
    return tuple(sorted({*ALWAYS_TARGETS, *([T4] if min_sm <= T4 else [])}))


def cache_dir() -> Path:
    root = os.environ.get("PUZZLES_COMPILE_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-puzzles" / "compile"


def _kernel_source() -> Any:
    """puzzles/kernel_source.py, loaded by path in the worker (which must not import `puzzles`)."""
    if "puzzles" in sys.modules:  # the grader's process
        from puzzles import kernel_source

        return kernel_source
    module = sys.modules.get("puzzles_kernel_source")
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("puzzles_kernel_source",
                                                      Path(__file__).with_name("kernel_source.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["puzzles_kernel_source"] = module
        spec.loader.exec_module(module)
    return module


def describe_args(args: list[Any], kwargs: dict[str, Any], params: list[str],
                  plain_ints: frozenset[str] = frozenset()) -> list[tuple] | None:
    """Per parameter of the kernel: ("ptr", element type), ("typed", i32|i64) for an int passed to
    a parameter without annotation (never a constexpr), or ("scalar", value)."""
    plain_value, OPAQUE = _kernel_source().plain_value, _kernel_source().OPAQUE  # noqa: N806
    bound: dict[str, Any] = dict(zip(params, args, strict=False))
    bound.update(kwargs)
    out = []
    for name in params:
        if name not in bound:
            out.append(("default",))
            continue
        value = bound[name]
        if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            ty = _TORCH_TYPES.get(str(value.dtype).replace("torch.", ""))
            if ty is None:
                return None
            out.append(("ptr", ty))
        elif isinstance(value, int) and not isinstance(value, bool) and name in plain_ints:
            # Only its type reaches the compiled code: sizes that differ only here share a check.
            out.append(("typed", "i32" if -(2**31) <= value < 2**31 else "i64"))
        elif plain_value(value) is not OPAQUE:
            out.append(("scalar", value))
        else:
            return None
    return out


# -- the verdicts ----------------------------------------------------------------------------------------


@dataclass
class CompileProblem:
    """Why the kernel would not compile, at one size or for one target."""

    message: str
    target: int
    line: int | None = None
    filename: str | None = None
    sizes: list[int] = field(default_factory=list)  # indices of the tested sizes it fails
    construct: bool = False  # one of the known interpreter-only constructs (the message says what to write)
    rule: bool = False  # the compiled kernel does what the puzzle rules out (a `tt.dot` where tl.dot is forbidden)


@dataclass
class CompileReport:
    problems: list[CompileProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # what did not finish in time


def _stable(spec: dict) -> list:
    """The parts of a kernel's description that decide the verdict: not its file or lines, which
    change each time a notebook cell is re-run (errors are stored relative to the `def`)."""
    names = {key: e["name"] for key, e in spec["functions"].items()}

    def stable(value: tuple) -> tuple:
        return ("jit", names[value[1]]) if value[0] == "jit" else value

    return sorted((e["name"], textwrap.dedent(e["source"]), {n: stable(v) for n, v in e["globals"].items()},
                   e["future_annotations"]) for e in spec["functions"].values())


def _key(*parts: Any) -> str:
    import triton

    text = json.dumps([VERSION, triton.__version__, *parts], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _cached(key: str) -> dict | None:
    try:
        return json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


class Check:
    """A compile check under way: `start()` hands it to the worker, `report()` collects it."""

    def __init__(self, spec: dict, items: list[dict], results: dict[int, dict],
                 jobs: dict[str, tuple[_Worker, int]]) -> None:
        self.spec = spec
        self.items = items
        self.results = results  # index -> verdict (from the cache or the workers)
        self.jobs = jobs  # worker kind -> (that worker, its job number), for the items not in the cache
        self.started = time.perf_counter()

    def _place(self, function: str | None, offset: int | None) -> tuple[int | None, str | None]:
        """The file line of an error stored as (function, lines after its `def`)."""
        entries = list(self.spec["functions"].values())
        entry = next((e for e in entries if e["name"] == function), entries[0] if entries else None)
        if entry is None or offset is None:
            return None, entry["filename"] if entry else None
        return entry["def_line"] + offset, entry["filename"]

    def report(self, wait_full: bool | float = False) -> CompileReport:
        """Wait for the front end always; for the full compile, as long as `wait_full` says
        (True: until done; a number: that many seconds at most)."""
        front = [i for i, it in enumerate(self.items) if it["stage"] == "front"]
        full = [i for i, it in enumerate(self.items) if it["stage"] == "full"]
        if "front" in self.jobs:
            worker, job = self.jobs["front"]
            worker.wait(job, front, FRONT_WAIT, self.results)
        if "full" in self.jobs:
            worker, job = self.jobs["full"]
            worker.wait(job, full, 3600.0 if wait_full is True else float(wait_full or 0.0), self.results)
        report = CompileReport()
        for i, item in enumerate(self.items):
            verdict = self.results.get(i)
            if verdict is None:
                report.pending.append(f"sm_{item['target']}")
                continue
            if verdict.get("error"):
                err = verdict["error"]
                line, filename = self._place(err.get("function"), err.get("offset"))
                report.problems.append(CompileProblem(err["message"], item["target"], line, filename,
                                                      list(item["sizes"]), bool(err.get("construct")),
                                                      bool(err.get("rule"))))
            report.notes += [n for n in verdict.get("notes", []) if n not in report.notes]
        return report


def start(kernel: Any, calls: list[tuple[list[Any], dict[str, Any]]], min_sm: int = T4,
          forbidden: tuple[str, ...] = ()) -> Check | None:
    """Begin checking `kernel` as called with each (args, kwargs) of `calls` (the first is the
    canonical size: the full compile runs there). None when the kernel cannot be described (no
    source, say): the interpreted verdict then stands alone. `forbidden`: triton.language functions
    the puzzle rules out, looked for in the Triton IR (`tt.dot` for "dot"), however the kernel
    reached them."""
    from puzzles.execution import unwrap_kernel

    fn = unwrap_kernel(kernel)
    spec = _kernel_source().describe_kernel(kernel)
    if fn is None or spec is None:
        return None
    config = getattr(kernel, "config", None)  # an autotune config's launch options (puzzles/autotune.py)
    options = {k: v for k, v in (("num_warps", getattr(config, "num_warps", None)),
                                 ("num_stages", getattr(config, "num_stages", None))) if isinstance(v, int)}
    signature = inspect.signature(fn).parameters
    params = list(signature)
    plain_ints = frozenset(n for n, p in signature.items() if p.annotation is inspect.Parameter.empty)
    by_key: dict[str, dict] = {}  # sizes that compile alike share one check
    stable = _stable(spec)
    for index, (args, kwargs) in enumerate(calls):
        argspec = describe_args(args, kwargs, params, plain_ints)
        if argspec is None:
            return None
        stages = [("front", 80)] + ([("full", t) for t in targets_for(min_sm)] if index == 0 else [])
        for stage, target in stages:
            forbid = sorted(forbidden) if stage == "front" else []
            key = _key(stable, argspec, stage, target, options, forbid)
            item = by_key.setdefault(key, {"stage": stage, "target": target, "args": argspec, "key": key,
                                           "options": options, "sizes": [], "forbid": forbid})
            item["sizes"].append(index)
    items = list(by_key.values())
    results = {}
    for i, item in enumerate(items):
        hit = _cached(item["key"])
        if hit is not None:
            results[i] = hit
    todo = [i for i in range(len(items)) if i not in results]
    jobs = {}
    for kind in ("front", "full"):
        mine = [(i, items[i]) for i in todo if items[i]["stage"] == kind]
        if mine:
            worker = _worker(kind)
            jobs[kind] = (worker, worker.submit(spec, mine, str(cache_dir())))
    return Check(spec, items, results, jobs)


# -- into the verdict -------------------------------------------------------------------------------------


def begin(kernel: Any, args_for: Any, cases: list[Any], puzzle: Any = None, flag: bool | str = True) -> Check | None:
    """The harness's hook, before the interpreted run: start checking at every case's size."""
    if not enabled(flag):
        return None
    try:
        return start(kernel, [args_for(case) for case in cases], getattr(puzzle, "min_sm", T4),
                     tuple(getattr(puzzle, "forbidden_calls", ())))
    except Exception:  # noqa: BLE001 - the check must never break grading
        return None


def apply(check: Check | None, result: Any, started: float, flag: bool | str = True) -> None:
    """Fold the check into `result`: a compile failure fails the sizes the interpreter passed."""
    if check is None:
        return
    import linecache

    def where_of(target: int) -> str:
        return "a GPU" if target in ALWAYS_TARGETS else f"sm_{target} (Colab's T4)"

    from puzzles.execution import KernelError

    report = check.report(True if flag == "full" else 0.0)  # the front end, always
    if flag != "full" and report.pending:
        report = check.report(min(FULL_GRACE, max(0.0, BUDGET - (time.perf_counter() - started))))
    errors: dict[tuple[str, int | None], KernelError] = {}
    unplaced: list[str] = []
    # One wording per distinct error: the GPU targets of every course first, then the T4.
    for problem in sorted(report.problems, key=lambda p: (p.target not in ALWAYS_TARGETS, p.sizes)):
        key = (problem.message, problem.line)
        if key not in errors:
            where = where_of(problem.target)
            source = linecache.getline(problem.filename, problem.line) if problem.filename and problem.line else ""
            if problem.rule:  # the message reads on from "Puzzle N"
                errors[key] = KernelError("rule", f"{str(result.puzzle).split(':')[0]} {problem.message}",
                                          problem.line, source, problem.filename)
            else:
                errors[key] = KernelError("compile", f"runs in the interpreter but would not compile for {where}: "
                                          f"{problem.message}", problem.line, source, problem.filename)
        for index in problem.sizes:
            if index < len(result.outcomes):
                _fail(result.outcomes[index], problem, errors[key], where_of(problem.target), unplaced)
    result.notes += [n for n in unplaced if n not in result.notes]
    result.notes += [n for n in report.notes if n not in result.notes]
    if report.pending and not report.problems:
        result.notes.append(f"compiles for a GPU; the full compile for {', '.join(sorted(set(report.pending)))} is "
                            "still running: a re-run shows its notes (`python -m puzzles grade` waits for it)")


def _fail(outcome: Any, problem: CompileProblem, error: Any, where: str, unplaced: list[str]) -> None:
    """A compile failure at one size: it fails a size the interpreter passed; where the interpreter
    failed too, its error stands (unless the compiler names a known interpreter-only construct),
    and so does evidence of wrong values, with the compiler's message as a note."""
    from puzzles.execution import KernelError

    if outcome.status == "compile error":
        return
    if problem.rule:  # breaking the puzzle's rule fails every size, whatever the interpreter made of it
        outcome.status, outcome.error, outcome.status_map = "error", error, None
        return
    if outcome.status == "passed":
        outcome.status, outcome.error, outcome.status_map = "compile error", error, None
    elif outcome.status == "error" and outcome.error is not None and problem.construct:
        # The interpreter failed too, on a construct only it accepts (a nested def): the compiler's
        # message, with what to write instead, replaces its (if it does not say the same).
        if problem.message.split(" (")[0] not in outcome.error.message:
            outcome.status, outcome.status_map = "compile error", None
            outcome.error = KernelError("compile", f"would not compile for {where}: "
                                        f"{problem.message}", error.line, error.source, error.filename)
    elif outcome.status == "error" and outcome.error is not None and \
            problem.message.split(" (")[0] in outcome.error.message:
        pass  # the interpreter's error says it already
    else:
        text = error.describe().replace("\n  ", " ")
        if text not in unplaced:
            unplaced.append(text)


# -- the worker process, seen from the grader ---------------------------------------------------------------


class _Worker:
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
             f"import runpy; runpy.run_path({str(Path(__file__))!r}, run_name='__main__')"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
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


_WORKERS: dict[str, _Worker] = {}


def _worker(kind: str) -> _Worker:
    if kind not in _WORKERS or not _WORKERS[kind].alive():
        _WORKERS[kind] = _Worker(kind)
    return _WORKERS[kind]


def wait_idle(seconds: float = 600.0) -> bool:
    """Wait until the worker has loaded the compiler and finished every check it was given
    (benchmarks and tests use it; grading never needs to). False if it did not in time."""
    deadline = time.monotonic() + seconds
    done = True
    for kind in ("front", "full"):
        worker = _worker(kind)
        job = worker.submit({}, [(0, {"stage": "ping"})], str(cache_dir()))
        got: dict[int, dict] = {}
        worker.wait(job, [0], max(0.0, deadline - time.monotonic()), got)
        done = done and 0 in got
    return done


start_worker_and_wait = wait_idle


def warm_up() -> None:
    """Start the worker now (it loads the compiler in the background)."""
    if enabled():
        _worker("front")
        _worker("full")


# -- inside the worker ---------------------------------------------------------------------------------------


def _worker_main() -> None:  # pragma: no cover - runs in the worker process
    import queue

    import triton  # noqa: F401 - loads the compiler (with TRITON_INTERPRET=0)

    kind = os.environ.get("PUZZLES_COMPILE_WORKER", "full")
    if kind == "full":
        # The learner waits for the interpreted run and the front end: let them have the CPU.
        try:
            os.nice(10)
        except OSError:
            pass

    inbox: queue.Queue = queue.Queue()

    def read() -> None:
        stream = sys.stdin.buffer
        while True:
            head = stream.read(8)
            if len(head) < 8:
                inbox.put(None)
                return
            inbox.put(pickle.loads(stream.read(int.from_bytes(head, "little"))))

    threading.Thread(target=read, daemon=True).start()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # Triton prints on failures; keep the reply stream clean
    pending: list[tuple[int, dict, dict, int, dict]] = []  # (job, request, builder, index, item)
    built: dict[int, Any] = {}
    _warm_compiler(full=kind == "full")
    while True:
        block = not pending
        while True:
            try:
                request = inbox.get(block=block)
            except queue.Empty:
                break
            if request is None:
                return
            block = False
            pending += [(request["job"], request, {}, i, item) for i, item in request["items"]]
        # Front ends first (the grading cell waits for them), newest request first; a ping is
        # answered once nothing else is left.
        pending.sort(key=lambda p: (p[4]["stage"] != "front", p[4]["stage"] == "ping", -p[0]))
        job, request, _, index, item = pending.pop(0)
        if item["stage"] == "ping":
            data = pickle.dumps({"job": job, "index": index, "verdict": {}})
            out.write(len(data).to_bytes(8, "little") + data)
            out.flush()
            continue
        try:
            if job not in built:
                built.clear()
                for entry in request.get("path", []):  # the learner's own modules, as the grader sees them
                    if entry not in sys.path:
                        sys.path.append(entry)
                built[job] = _kernel_source().rebuild_kernel(request["spec"])
            verdict = _check(built[job], item)
        except Exception as exc:  # noqa: BLE001 - a kernel this check cannot rebuild is not failed for it
            verdict = {"skipped": f"{type(exc).__name__}: {exc}", "transient": True}
        if not verdict.get("transient"):
            _store(request["cache"], item["key"], verdict)
        data = pickle.dumps({"job": job, "index": index, "verdict": verdict})
        out.write(len(data).to_bytes(8, "little") + data)
        out.flush()


def _warm_compiler(full: bool) -> None:  # pragma: no cover - runs in the worker process
    """Compile a trivial kernel once: the first compile in a process pays for loading MLIR and
    LLVM (Triton's cache would answer a full compile without compiling: bypass it)."""
    import tempfile

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = "import triton\nimport triton.language as tl\n@triton.jit\ndef _warm(x, B: tl.constexpr):\n" \
             "    tl.store(x + tl.arange(0, B), tl.arange(0, B))\n"
    path = Path(tempfile.gettempdir()) / "triton_puzzles_warm.py"
    try:
        import linecache

        linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))
        scope: dict[str, Any] = {"triton": triton, "tl": tl, "__name__": "_warm"}
        exec(compile(source, str(path), "exec"), scope)
        src = ASTSource(scope["_warm"], {"x": "*i32", "B": "constexpr"}, {"B": 16})
        if not full:
            _front_end(src, GPUTarget("cuda", 80, 32))
            return
        saved = triton.knobs.compilation.always_compile
        triton.knobs.compilation.always_compile = True
        try:
            triton.compile(src, target=GPUTarget("cuda", 80, 32))
        finally:
            triton.knobs.compilation.always_compile = saved
    except Exception:  # noqa: BLE001 - only a warm-up
        pass


def _store(cache: str, key: str, verdict: dict) -> None:  # pragma: no cover - runs in the worker process
    try:
        os.makedirs(cache, exist_ok=True)
        tmp = Path(cache) / f"{key}.json.{os.getpid()}"
        tmp.write_text(json.dumps(verdict))
        tmp.replace(Path(cache) / f"{key}.json")
    except OSError:
        pass


def _signature(fn: Any, argspec: list[tuple]) -> tuple[dict[str, str], dict[str, Any]]:  # pragma: no cover
    signature, constexprs = {}, {}
    for param, arg in zip(fn.params, argspec, strict=False):
        name = param.name
        if arg[0] == "default":
            value = param.default
            if value is inspect.Parameter.empty:
                raise TypeError(f"{fn.__name__}() is missing its argument {name}")
            arg = ("scalar", value)
        if arg[0] == "typed" and not param.is_constexpr:
            signature[name] = arg[1]
        elif param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", arg[1]
        elif arg[0] == "ptr":
            signature[name] = "*" + arg[1]
        elif isinstance(arg[1], bool):
            signature[name] = "i1"
        elif isinstance(arg[1], int):
            signature[name] = "i32" if -(2**31) <= arg[1] < 2**31 else "i64"
        elif isinstance(arg[1], float):
            signature[name] = "fp32"
        elif arg[1] is None:
            signature[name], constexprs[name] = "constexpr", None
        else:
            raise TypeError(f"{fn.__name__}: cannot pass {arg[1]!r} as {name}")
    return signature, constexprs


def _check(built: dict[str, Any], item: dict) -> dict:  # pragma: no cover - runs in the worker process
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    fn = built["root"]
    signature, constexprs = _signature(fn, item["args"])  # raises (skipped) when an argument is unknown
    target = GPUTarget("cuda", item["target"], 32)
    src = ASTSource(fn, signature, constexprs)
    options = item.get("options") or {}
    try:
        if item["stage"] == "front":
            found = _front_end(src, target, options, item.get("forbid"))
            return {"error": _forbidden_in_ir(found, built)} if found else {}
        import triton

        compiled = triton.compile(src, target=target, options=options)
    except CompilationError as exc:
        return {"error": _compilation_error(exc, built)}
    except Exception as exc:  # noqa: BLE001 - MLIR pass failures, ptxas errors
        returned = _kernel_returns_a_value(built["root_entry"])
        if returned is not None:  # MLIR says only "PassManager::run failed"
            return {"error": returned}
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return {"error": {"message": f"{type(exc).__name__}: {message}"}}
    return {"notes": _needs(compiled, item["target"])}


def _front_end(src: Any, target: Any, launch: dict | None = None,
               forbid: list[str] | None = None) -> list[tuple[str, str, int]]:  # pragma: no cover - in the worker
    """Python to Triton IR to GPU IR, without the LLVM and ptxas stages; returns the ops of `forbid`
    (triton.language names) found in the Triton IR as generated, before any pass: (name, file, line)."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    backend = make_backend(target)
    options = backend.parse_options(dict(launch or {}))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                         context)
    found = ops_in_ir(module.str(), forbid) if forbid else []
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    metadata: dict[str, Any] = {}
    for ext in ("ttir", "ttgir"):
        module = stages[ext](module, metadata)
    return found


def ops_in_ir(text: str, names: list[str]) -> list[tuple[str, str, int]]:
    """(name, file, line) of each `tt.<name>` op in a printed Triton IR module, its location followed
    through the module's `#locN = loc(...)` aliases (named values wrap the file location)."""
    import re

    aliases = dict(re.findall(r"^(#loc\d*) = (loc\(.*\))\s*$", text, re.M))

    def place(loc: str, depth: int = 0) -> tuple[str, int] | None:
        at = re.match(r'loc\("((?:[^"\\]|\\.)*)":(\d+):\d+\)', loc)
        if at:
            return at.group(1), int(at.group(2))
        ref = re.search(r"#loc\d*", loc)
        if ref and depth < 20 and ref.group(0) in aliases:
            return place(aliases[ref.group(0)], depth + 1)
        return None

    found = []
    for name in names:
        for op in re.finditer(rf"= tt\.{re.escape(name)}\b[^\n]*?(loc\((?:#loc\d*|\"[^\n]*)\))\s*$", text, re.M):
            where = place(op.group(1))
            if where is not None:
                found.append((name, *where))
    return found


def _forbidden_in_ir(found: list[tuple[str, str, int]], built: dict[str, Any]) -> dict:  # pragma: no cover
    """The first forbidden op as an error at the learner's line (in the function that holds it)."""
    name, filename, line = found[0]
    entries = [e for e in built["by_src"].values() if e["filename"] == filename] or [built["root_entry"]]
    entry = next((e for e in entries if e["first_line"] <= line < e["first_line"] + len(e["source"].splitlines())),
                 built["root_entry"])
    root = built["root_entry"]["name"]
    where = entry["name"] if entry is built["root_entry"] else f"{entry['name']} (called from {root})"
    return {"message": f"asks you not to use tl.{name} (its statement says why), and {where} does: the compiled "
                       f"kernel has a tt.{name}", "function": entry["name"], "offset": line - entry["def_line"],
            "rule": True}


def _compilation_error(exc: Any, built: dict[str, Any]) -> dict:  # pragma: no cover - runs in the worker
    """The compiler's own message and the file line it points at: the deepest point of the error
    that is in the learner's code (a helper of theirs, or the kernel), not in Triton's library."""
    import re

    from triton.compiler.errors import CompilationError

    chain, cause = [], exc
    while isinstance(cause, CompilationError) and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__
    mine = [c for c in chain if c.src in built["by_src"]] or [exc]
    at = mine[-1]
    entry = built["by_src"].get(at.src, built["root_entry"])
    lineno = getattr(at.node, "lineno", None)
    line = entry["def_line"] + lineno - 1 if lineno is not None else None
    message = next((c.error_message for c in reversed(chain) if c.error_message), None)
    if not message and cause is not None:
        message = f"{type(cause).__name__}: {cause}"
    message = (message or type(exc).__name__).strip()
    # Name errors and the like arrive as repr() strings: show the inner text plainly.
    found = re.fullmatch(r"(\w+)\((['\"])(.*)\2\)", message, re.S)
    if found:
        message = f"{found.group(1)}: {found.group(3)}"
    message = " ".join(message.split())
    if message.startswith("NameError: Cannot access global variable"):
        message = message.split(" function.", 1)[0] + " function"  # the rest is about an escape hatch
    hint = _hint(message, at.node, entry["source"], entry["globals"])
    if hint and _bare(message):
        message = hint  # Triton's own assertion says nothing a learner can act on
    elif hint:
        message = f"{message} ({hint})"
    elif _bare(message):  # not a construct we know: say at least that much (the line says where)
        message = ("Triton's compiler stopped on this line without a message (an internal assertion): the line "
                   "uses something the interpreter accepts but the compiler does not support")
    if entry is not built["root_entry"]:
        message += f" [in {entry['name']}, called from {built['root_entry']['name']}]"
    offset = line - entry["def_line"] if line is not None else None
    return {"message": message, "function": entry["name"], "offset": offset, "construct": bool(hint)}


def _kernel_returns_a_value(entry: dict) -> dict | None:
    """The kernel's `return <value>`, as an error at its line: a launched kernel has nowhere to return it."""
    try:
        tree = ast.parse(textwrap.dedent(entry["source"]))
    except SyntaxError:
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Return) and node.value is not None:
            line = entry["first_line"] + node.lineno - 1
            return {"message": "a kernel cannot return a value (a launch has nowhere to put it): write the result "
                               "through a pointer with tl.store; a @triton.jit helper it calls may return values",
                    "function": entry["name"], "offset": line - entry["def_line"], "construct": True}
    return None


def _bare(message: str) -> bool:
    """An error from inside Triton's front end that carries no text (a bare `assert`)."""
    return message.rstrip(": ") in ("AssertionError", "")


def _assigned_names(source: str) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _hint(message: str, node: Any, source: str = "", scope: dict | None = None) -> str:
    """What to write instead, for the constructs that only the interpreter accepts (and for the front
    end's errors whose own text does not say what is wrong)."""
    if isinstance(node, ast.FunctionDef) or (message.startswith("StopIteration") and node is not None):
        return "a function defined inside the kernel is not supported: define it at module level with @triton.jit"
    if "Lambda" in message:
        return "a lambda is not supported in a kernel: use a @triton.jit function at module level"
    if "arange's arguments must be of type tl.constexpr" in message:
        return "start at a constant and shift: j + tl.arange(0, B1)"
    if message.startswith("NameError: Cannot access global variable"):
        name = message.split("global variable ", 1)[1].split()[0]
        if tuple((scope or {}).get(name, ())) == ("opaque", "function"):
            return (f"{name} is a plain Python function: a kernel calls only @triton.jit functions (and "
                    f"triton.language's); decorate {name} with @triton.jit")
        return (f"declare it `{name} = tl.constexpr(...)` at module level, or pass it as an argument; "
                "the interpreter reads any global, the compiler only constants")
    if "multiple values for argument 'pid_" in message:  # a fifth value lands in print_if's pid_0
        return "compiled, print_if prints at most four values: split them over two print_if calls"
    if "Loop-carried variable" in message:
        return "give it its final type before the loop, e.g. tl.zeros([B0], dtype=tl.float32) instead of 0.0"
    if _bare(message) and node is not None and any(isinstance(n, ast.Subscript) for n in ast.walk(node)):
        # tl.tuple.__getitem__ asserts that a non-constant index is a slice, with no message.
        return ("a tuple indexed by a value the compiler does not know: a Triton tuple can only be indexed by a "
                "constant (`t[0]`) or by the variable of a `for i in tl.static_range(n)` loop, which the compiler "
                "unrolls; the variable of a `range` loop, or an index computed in the kernel, is only known when "
                "it runs")
    if message.startswith("unsupported tensor index"):
        return ("a block has no element access by position: pick an element with tl.sum(tl.where(offsets == i, x, "
                "0)), load it alone with tl.load(ptr + i), or add axes with x[:, None] / x[None, :]")
    if isinstance(node, ast.For) and "has no attribute 'func'" in message:
        return ("a loop in a kernel runs over range(...), tl.range(...) or tl.static_range(...): a block cannot "
                "be iterated element by element (work on the whole block, or loop over indices), and a tuple is "
                "walked with `for i in tl.static_range(len(t))` and t[i]")
    if message.startswith("unsupported AST node type: Break") or message.startswith(
            "unsupported AST node type: Continue"):
        return ("Triton kernels have no break or continue: give the loop the bound it needs, or guard the rest "
                "of the body with an if (or a mask)")
    if "Boolean value of Tensor with more than one value is ambiguous" in message:
        return ("an if or while condition must be one value, not a block: to choose per element, use "
                "tl.where(condition, a, b)")
    if message.startswith("NameError:") and message.endswith("is not defined") and \
            message.split()[1] in _assigned_names(source):
        name = message.split()[1]
        return (f"if {name} is assigned only inside an if or a loop, assign it before as well: the compiler "
                "needs a value on every path, the interpreter only on the one it runs")
    return ""


def _needs(compiled: Any, arch: int) -> list[str]:  # pragma: no cover - runs in the worker process
    """Notes on what the compiled kernel needs: shared memory past the target's limit, spills."""
    import re
    import tempfile

    notes = []
    shared = getattr(compiled.metadata, "shared", 0) or 0
    limit = SHARED_LIMIT.get(arch)
    if limit and shared > limit:
        notes.append(f"on sm_{arch} the kernel needs {shared} bytes of shared memory, more than the {limit} a "
                     "block may use there: it would not launch (smaller blocks or fewer num_stages)")
    cubin = compiled.asm.get("cubin")
    if cubin:
        try:
            from triton.backends.nvidia import __file__ as nvidia_dir

            tool = Path(nvidia_dir).parent / "bin" / "cuobjdump"
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(cubin)
                f.flush()
                usage = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True,
                                       text=True, timeout=30).stdout
            # Spilled registers live on the thread's stack (Triton kernels use none otherwise, but
            # for the arguments of a printf: print_if and tl.device_print).
            stack = re.search(r"STACK:(\d+)", usage)
            printing = "vprintf" in (compiled.asm.get("ptx") or "")
            if stack and int(stack.group(1)) > 0 and not printing:
                notes.append(f"on sm_{arch} the kernel spills registers ({stack.group(1)} bytes of stack per "
                             "thread): it runs, but slower (smaller blocks or more num_warps help)")
        except (OSError, subprocess.SubprocessError, ImportError):
            pass
    return notes


if __name__ == "__main__":  # pragma: no cover - the worker
    _worker_main()
