"""Grading a class: every student's submission in its own sandboxed process, verdicts checked
by the grader itself, students graded in parallel.

    python -m puzzles grade CLASS/ --out gradebook/        # one student per sub-folder
    python -m puzzles grade --student CLASS/ada --out results/ada.json   # one job of a batch system

Per student, a worker process (puzzles/classroom/worker.py, limits in puzzles/classroom/isolation.py) loads the
submission and runs each kernel. That process is untrusted once the submission is loaded, so
this module decides the verdicts: a puzzle passes only when every output the worker returned
matches, element by element, what this process computes from the catalog's spec for the same
size, seed and index, and when those outputs cover every size of the puzzle. A worker that
dies, stalls or floods its report costs the puzzle it was on (named as such), and a fresh
worker grades the remaining puzzles. Its events are accepted in one order only (started, ready,
loaded, one verdict per puzzle in the order asked, done): anything else is a forged report, and
every verdict of that worker fails with what was attempted (`FORGED_REPORT`).
"""

from __future__ import annotations

import ast
import base64
import concurrent.futures
import hashlib
import os
import queue
import random
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from puzzles.classroom.isolation import (
    GIB,
    MEMORY_WATCH,
    Limits,
    Worker,
    can_switch_user,
    job_uid,
    limits_dict,
    prepare_folder,
    symbolic_links,
)
from puzzles.course import catalog
from puzzles.course.puzzle import Puzzle
from puzzles.course.solution_source import is_starter
from puzzles.grading.cases import case_from_spec
from puzzles.grading.job import size_list
from puzzles.grading.judging import values_close
from puzzles.submissions.grade import code_cells, strip_magics

CLASS_TIMEOUT = 5.0  # seconds per size: the same verdicts as 20 s on the course's kernels, 4x cheaper on loops
SUBMISSION_SUFFIXES = (".ipynb", ".py")
FORGED_REPORT = "forged report"  # the words an instructor can search the gradebook for
MAX_EVIDENCE = 256  # outputs one puzzle's verdict may come with (its sizes times its configs: a few dozen)
_DTYPES = {"float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"}


@dataclass
class Student:
    name: str
    files: list[Path]


@dataclass
class PuzzleVerdict:
    number: int
    status: str  # "passed", "failed", "not attempted"
    message: str = ""
    seconds: float = 0.0
    source: str = ""
    # With --speed on a GPU, a passing kernel's speed (`speed_record`): its time, torch.compile's, how far
    # toward the puzzle's goal (0-1, None where it could not be judged) and the report's lines.
    speed: dict | None = None


@dataclass
class StudentResult:
    student: str
    files: list[str]
    seed: int
    verdicts: list[PuzzleVerdict] = field(default_factory=list)
    protections: list[str] = field(default_factory=list)
    missing_protections: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    grader_error: str = ""  # the grader (not the submission) failed: the student was not graded
    seconds: float = 0.0
    speed: bool = False  # graded with --speed (on a GPU): the gradebook has speed points


@dataclass
class Options:
    timeout: float = CLASS_TIMEOUT
    seed: int | None = None
    limits: Limits = field(default_factory=Limits)
    startup_seconds: float = 180.0  # importing torch and Triton, before any submitted code
    load_seconds: float | None = None  # loading the definitions (default: 4 x timeout, at least 15 s)
    puzzle_seconds: float | None = None  # one puzzle, every size and config (default: 40 + 8 x timeout)
    speed: bool = False  # also judge each passing kernel's speed, for speed points (gradebook.py) ...
    speed_source: str = "gpu"  # ... timed on this GPU, or "model": predicted by the efficiency model (no GPU)


# One puzzle's timing with --speed: the device's limits (measured once per worker) and torch.compile(spec).
SPEED_SECONDS = 120.0


# -- finding the students ------------------------------------------------------------------------

def submission_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in SUBMISSION_SUFFIXES and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def is_roster(folder: Path) -> bool:
    """A folder of student folders (and no submission files of its own)."""
    return folder.is_dir() and any(p.is_dir() and not p.name.startswith(".") for p in folder.iterdir()) and \
        not any(p.suffix in SUBMISSION_SUFFIXES for p in folder.iterdir() if p.is_file())


def discover(paths: list[Path], per_file: bool = False) -> list[Student]:
    """Students from the command line: each sub-folder of a roster folder, each folder named, or
    (per_file) each file of the folders named."""
    students: list[Student] = []
    for path in paths:
        if per_file and path.is_dir():
            students += [Student(f.stem, [f]) for f in sorted(path.iterdir()) if f.suffix in SUBMISSION_SUFFIXES]
        elif per_file or path.is_file():
            students.append(Student(path.stem, [path]))
        elif is_roster(path):
            students += [Student(d.name, submission_files(d)) for d in sorted(path.iterdir())
                         if d.is_dir() and not d.name.startswith(".")]
        else:
            students.append(Student(path.name, submission_files(path)))
    names = [s.name for s in students]
    for s in students:  # two folders named alike in different places: keep both, apart
        if names.count(s.name) > 1:
            where = str(s.files[0].parent.parent if s.files else s.name)  # the same name in every run
            s.name = f"{s.name}@{hashlib.sha256(where.encode()).hexdigest()[:6]}"
    return students


def attempted(files: list[Path], puzzles: list[Puzzle]) -> set[int]:
    """Puzzles whose kernel the files define other than as the starter, read from the source
    (never run): what a worker that dies while loading costs."""
    found: set[int] = set()
    for path in files:
        try:
            cells = code_cells(path)
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        for _, source in cells:
            text = strip_magics(source)
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for node in tree.body:
                for p in puzzles:
                    if isinstance(node, ast.FunctionDef) and node.name == p.kernel_name:
                        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                        if not is_starter("\n".join(text.splitlines()[start - 1 : node.end_lineno]), p):
                            found.add(p.number)
    return found


# -- checking what a worker says -----------------------------------------------------------------

def decode_tensor(data: dict, limit: int = 1 << 22) -> torch.Tensor:
    """A tensor from a worker's report; anything malformed raises ValueError."""
    dtype, shape = data.get("dtype"), data.get("shape")
    if dtype not in _DTYPES or not isinstance(shape, list) or not all(isinstance(n, int) and 0 <= n for n in shape):
        raise ValueError("malformed output")
    raw = base64.b64decode(data.get("data", ""), validate=True)
    if int(np.prod(shape)) > limit:
        raise ValueError("output too large")
    if dtype == "bfloat16":
        return torch.frombuffer(bytearray(raw), dtype=torch.bfloat16).reshape(shape)
    return torch.from_numpy(np.frombuffer(raw, dtype=np.dtype(dtype)).copy().reshape(shape))


def _matches_base(sizes: dict, base: dict) -> bool:
    """A reported size is one of the puzzle's sizes (blocks and config values may differ, the
    problem sizes may not): the grader never builds inputs of a size the worker made up."""
    for key, value in sizes.items():
        if key in base and not key.startswith("B"):
            if type(value) is not type(base[key]) or value != base[key]:  # sizes, and puzzle 21's lr
                return False
        elif not (type(value) is int and 0 <= value <= 4096):  # blocks, config values
            return False
    return all(k in sizes for k in base)


def check_evidence(p: Puzzle, seed: int, evidence: list) -> str | None:
    """Why a claimed pass is not one (None when it is): every output must match the spec on the
    inputs this process rebuilds, and the outputs must cover every size of the puzzle."""
    bases = size_list(p, None, None, None)
    covered: set[int] = set()
    if isinstance(evidence, list) and len(evidence) > MAX_EVIDENCE:  # each costs this process an input build
        return f"{len(evidence)} outputs for one puzzle (a kernel is run at most {MAX_EVIDENCE} times)"
    for item in evidence if isinstance(evidence, list) else []:
        try:
            sizes, index = dict(item["sizes"]), int(item["index"])
            if item["seed"] != seed or not 0 <= index < 64:
                return f"an output for seed {item['seed']}, not the seed asked for ({seed})"
            matching = [i for i, b in enumerate(bases) if _matches_base(sizes, b)]
            if not matching:
                return f"an output for a size this puzzle does not have ({sizes})"
            out = decode_tensor(item["output"])
            case = case_from_spec(p.parsed_spec, p, {k: v for k, v in sizes.items()}, seed, index)
        except (KeyError, TypeError, ValueError) as err:
            return f"a malformed output ({type(err).__name__}: {err})"
        expected = case.expected
        if tuple(out.shape) != tuple(expected.shape) or out.dtype != expected.dtype:
            return f"at {sizes}: an output of shape {tuple(out.shape)} {out.dtype}, expected {tuple(expected.shape)}"
        wrong = int((~values_close(out, expected, case)).sum())
        if wrong:
            return f"at {sizes}: {wrong} of {expected.numel()} output elements differ from the spec"
        covered.update(matching)
    missing = [b for i, b in enumerate(bases) if i not in covered]
    if missing:
        return f"no output at {missing[0]}"
    return None


def speed_record(data: object) -> dict | None:
    """A worker's speed report, kept only in the shape the gradebook reads (None where malformed). The
    times are the worker's claim: unlike outputs, the grader cannot check them after the fact."""
    if not isinstance(data, dict):
        return None

    def number(value: object) -> float | None:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None

    ms, progress = number(data.get("ms")), number(data.get("progress"))
    if ms is None or not ms > 0:
        return None
    return {"ms": ms, "compiled_ms": number(data.get("compiled_ms")),
            "progress": None if progress is None else min(progress, 1.0), "line": str(data.get("line", ""))[:2000],
            "source": str(data.get("source") or "a GPU")[:200]}


def _verdict_from(event: dict, p: Puzzle, seed: int) -> PuzzleVerdict:
    status = event.get("status") if event.get("status") in ("passed", "failed", "not attempted") else "failed"
    verdict = PuzzleVerdict(p.number, status, str(event.get("reason", ""))[:4000],
                            float(event.get("seconds", 0.0) or 0.0), str(event.get("source", ""))[:500],
                            speed_record(event.get("speed")) if status == "passed" else None)
    if status == "passed":
        problem = check_evidence(p, seed, event.get("evidence"))
        if problem is not None:
            verdict.status = "failed"
            verdict.message = (f"the grading process reported a pass that the grader could not confirm: {problem} "
                               "(the submission interfered with grading, or the kernel is wrong)")
    return verdict


# -- one student ---------------------------------------------------------------------------------

def grade_student(student: Student, puzzles: list[Puzzle], options: Options, seed: int,
                  uid: int | None = None, scratch: Path | None = None) -> StudentResult:
    """Grade one student in sandboxed workers; never raises for anything the submission does."""
    started = time.perf_counter()
    result = StudentResult(student.name, [str(f) for f in student.files], seed, speed=options.speed)
    limits = Limits(**{**limits_dict(options.limits), "uid": uid})
    if limits.address_space is None:  # CUDA fails under an address-space limit: the memory watch alone there
        limits.address_space = not torch.cuda.is_available()
    load_limit = options.load_seconds or max(15.0, 4 * options.timeout)
    puzzle_limit = (options.puzzle_seconds or 40.0 + 8 * options.timeout) + (SPEED_SECONDS if options.speed else 0.0)
    result.problems += symbolic_links(student.files)
    files = [f for f in student.files if not f.is_symlink()]
    tried = attempted(files, puzzles)
    remaining = list(puzzles)
    base = Path(tempfile.mkdtemp(prefix="puzzles-class-", dir=scratch))
    base.chmod(0o711)  # the worker's own user may enter, not list
    try:
        while remaining:
            folder, names = prepare_folder(base / f"run{len(puzzles) - len(remaining)}", files, uid)
            # CPU time as a backstop to the deadlines (a process tree that escaped them still stops)
            cpu = limits.cpu_seconds or int(options.startup_seconds + load_limit + puzzle_limit * len(remaining))
            request = {"files": names, "puzzles": [p.number for p in remaining], "timeout": options.timeout,
                       "seed": seed, "limits": {**limits_dict(limits), "cpu_seconds": cpu}, "speed": options.speed,
                       "speed_source": options.speed_source,
                       # a puzzle graded at sizes other than the catalog's (Gradescope's hidden sizes)
                       "sizes": {str(p.number): [dict(s) for s in p.sizes] for p in remaining
                                 if p.sizes != catalog.get(p.number).sizes}}
            deadlines = {"start": options.startup_seconds, "started": options.startup_seconds,
                         "ready": load_limit, "default": puzzle_limit}
            worker = Worker(folder, request)
            try:
                remaining = _follow(worker, deadlines, remaining, tried, result, seed, names, files)
            finally:
                worker.stop()
            if result.grader_error:
                break
    finally:
        shutil.rmtree(base, ignore_errors=True)
    order = {p.number: i for i, p in enumerate(puzzles)}
    result.verdicts.sort(key=lambda v: order.get(v.number, 0))
    result.seconds = time.perf_counter() - started
    return result


def _follow(worker: Worker, deadlines: dict, remaining: list[Puzzle], tried: set[int], result: StudentResult,
            seed: int, names: list[str], originals: list[Path]) -> list[Puzzle]:
    """Read one worker's report into `result`; return the puzzles still to grade."""
    by_number = {p.number: p for p in remaining}
    graded: set[int] = set()
    loaded = False

    def shown(text: str) -> str:  # the worker's copies are named by the student's files
        for name, original in zip(names, originals, strict=False):
            text = text.replace(name, str(original))
        return text

    mine: list[PuzzleVerdict] = []  # this worker's verdicts: void, every one, if its report turns out forged
    steps = iter(("started", "ready", "loaded"))
    step = next(steps)
    for event in worker.events(deadlines):
        kind = event["event"]
        left = [p for p in remaining if p.number not in graded]
        # The worker reports in one order: started, ready, loaded, then one verdict per puzzle in the order
        # asked, then done. Anything else was written by something other than the worker's own code.
        expected = step or (f"the verdict on puzzle {left[0].number}" if left else "done")
        forged = kind == "garbled" or (kind in ("started", "ready", "loaded") and kind != step) or \
            (kind == "puzzle" and (step is not None or not left or event.get("number") != left[0].number)) or \
            (kind == "done" and (step is not None or left)) or \
            kind not in ("started", "ready", "loaded", "puzzle", "done", "timeout", "died", "flooded", "memory")
        if forged:
            what = (f"a line that is not one of its events ({event.get('line', '')[:80]!r})" if kind == "garbled"
                    else f"a {kind!r} event" + (f" for puzzle {event.get('number')}" if kind == "puzzle" else ""))
            why = (f"{FORGED_REPORT}: the grading process's report held {what} where {expected} was due; the "
                   "submission wrote to the grader's report channel, and every verdict of that process is void")
            for verdict in mine:
                verdict.status, verdict.message, verdict.speed = "failed", why, None
            result.verdicts += [PuzzleVerdict(p.number, "failed", why) for p in left]
            result.problems.append(why)
            return []
        if kind in ("started", "ready", "loaded"):
            step = next(steps, None)
        if kind == "started" and not result.protections:
            result.protections = [str(a) for a in event.get("active", [])]
            result.missing_protections = [str(m) for m in event.get("missing", [])]
            if worker.memory_limit and MEMORY_WATCH.works():  # the grader's own protection, not a claim
                result.protections.append(f"memory limit {worker.memory_limit / GIB:.3g} GiB (resident, "
                                          "all its processes, watched by the grader)")
            elif worker.memory_limit:
                result.missing_protections.append("memory limit (no /proc here to measure the processes)")
        elif kind == "loaded":
            loaded = True
            result.problems += [shown(str(x)) for x in event.get("problems", [])][:50]
        elif kind == "done":  # what grading found on the way ("add_kernel is defined in 2 places; graded ...")
            later = [shown(str(x)) for x in event.get("problems", [])]
            result.problems += [x for x in later if x not in result.problems][: max(0, 70 - len(result.problems))]
        elif kind == "puzzle":
            verdict = _verdict_from(event, by_number[event["number"]], seed)
            verdict.message, verdict.source = shown(verdict.message), shown(verdict.source)
            result.verdicts.append(verdict)
            mine.append(verdict)
            graded.add(verdict.number)
        elif kind in ("timeout", "died", "flooded", "memory"):
            memory = (f"used more than the memory limit of {worker.memory_limit / GIB:.3g} GiB "
                      f"({int(event.get('used', 0)) / GIB:.3g} GiB resident in its processes): the grader stopped it")
            if event["after"] in ("start", "started"):  # before any submitted code ran: our failure
                result.grader_error = (f"the grading process {memory} before loading the submission (raise --memory)"
                                       if kind == "memory" else
                                       f"the grading process did not start ({kind}): {event.get('log', '')[-300:]}")
                return []
            if not loaded:
                why = {"timeout": f"loading the submission did not finish within {deadlines['ready']:.0f} s "
                                  "(an endless computation in a decorator, a default or an assigned value?)",
                       "died": "loading the submission killed the grading process (out of memory, or it killed "
                               "its own process)",
                       "flooded": "the submission flooded the grading process's report",
                       "memory": f"loading the submission {memory}"}[kind]
                for p in left:
                    result.verdicts.append(PuzzleVerdict(p.number, "failed" if p.number in tried else "not attempted",
                                                         why if p.number in tried else f"no {p.kernel_name} found"))
                return []
            current = left[0]  # the worker reports in order: it died or stalled on this one
            why = {"timeout": f"grading this puzzle did not finish within {deadlines['default']:.0f} s",
                   "died": "the kernel killed the process that graded it (out of memory, or it killed its parent)",
                   "flooded": "the submission flooded the grading process's report",
                   "memory": f"grading this puzzle {memory}"}[kind]
            result.verdicts.append(PuzzleVerdict(current.number, "failed", why))
            return left[1:]
    missing = [p for p in remaining if p.number not in graded]
    for p in missing:  # a worker that said "done" early
        result.verdicts.append(PuzzleVerdict(p.number, "failed", "the grading process gave no verdict"))
    return []


# -- a class -------------------------------------------------------------------------------------

def grade_class(students: list[Student], puzzles: list[Puzzle], options: Options, jobs: int | None = None,
                progress: bool = True) -> list[StudentResult]:
    """Every student, `jobs` at a time (default: the cores); a text progress bar on stderr."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    seed = options.seed if options.seed is not None else random.randrange(1, 10**6)
    # One unprivileged user per concurrent job, when we may switch users.
    slots: queue.Queue[int | None] = queue.Queue()
    for i in range(jobs):
        slots.put(job_uid(i) if can_switch_user() else None)
    bar = ProgressBar(len(students), enabled=progress)

    def one(student: Student) -> StudentResult:
        uid = slots.get()
        bar.start()
        try:
            return grade_student(student, puzzles, options, seed, uid)
        except Exception as err:  # noqa: BLE001 - one student's failure must not stop the class
            return StudentResult(student.name, [str(f) for f in student.files], seed,
                                 grader_error=f"{type(err).__name__}: {err}", speed=options.speed)
        finally:
            slots.put(uid)
            bar.finish(student.name)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(one, students))
    bar.close()
    return results


class ProgressBar:
    """`[#####-----] 5/10 students, 2 running, 0:42` on stderr, redrawn in place on a terminal,
    one line per student otherwise (logs of a batch job)."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total, self.enabled = total, enabled
        self.done = self.running = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.tty = sys.stderr.isatty()

    def start(self) -> None:
        with self.lock:
            self.running += 1
            self._draw("")

    def finish(self, name: str) -> None:
        with self.lock:
            self.running -= 1
            self.done += 1
            self._draw(name)

    def _draw(self, name: str) -> None:
        if not self.enabled or (not self.tty and not name):
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        elapsed = int(time.monotonic() - self.started)
        text = (f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} students, "
                f"{self.running} running, {elapsed // 60}:{elapsed % 60:02d}")
        if self.tty:
            sys.stderr.write("\r" + text)
        else:
            sys.stderr.write(f"{text} (graded {name})\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def puzzle_points(puzzles: list[Puzzle]) -> dict[int, float]:
    return {p.number: float(getattr(p, "points", 1.0)) for p in puzzles}


def all_puzzles(numbers: list[int] | None) -> list[Puzzle]:
    return [catalog.get(n) for n in numbers] if numbers else catalog.all_puzzles()
