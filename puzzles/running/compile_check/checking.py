"""The grader's side of the compile check: describe the kernel and its calls, answer from the cache
what it can, hand the rest to the compiler processes (puzzles/running/compile_check/pool.py) and collect
their verdicts into a `CompileReport`."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from puzzles.running import kernel_source
from puzzles.running.compile_check import settings
from puzzles.running.compile_check.messages import TF32_NOTE
from puzzles.running.compile_check.pool import Worker, worker_for
from puzzles.running.compile_check.settings import FRONT_WAIT, FULL_WAIT, T4, VERSION, cache_dir, targets_for

TORCH_TYPES = {  # torch dtype -> Triton's name for the element type
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}



def describe_args(args: list[Any], kwargs: dict[str, Any], params: list[str],
                  plain_ints: frozenset[str] = frozenset()) -> list[tuple] | None:
    """Per parameter of the kernel: ("ptr", element type), ("typed", i32|i64) for an int passed to
    a parameter without annotation (never a constexpr), or ("scalar", value)."""
    bound: dict[str, Any] = dict(zip(params, args, strict=False))
    bound.update(kwargs)
    out = []
    for name in params:
        if name not in bound:
            out.append(("default",))
            continue
        value = bound[name]
        if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            ty = TORCH_TYPES.get(str(value.dtype).replace("torch.", ""))
            if ty is None:
                return None
            out.append(("ptr", ty))
        elif isinstance(value, int) and not isinstance(value, bool) and name in plain_ints:
            # Only its type reaches the compiled code: sizes that differ only here share a check.
            out.append(("typed", "i32" if -(2**31) <= value < 2**31 else "i64"))
        elif kernel_source.plain_value(value) is not kernel_source.OPAQUE:
            out.append(("scalar", value))
        else:
            return None
    return out


def specialization(args: list[Any], kwargs: dict[str, Any], params: list[str]) -> dict[str, str]:
    """What a real launch specializes the compiled kernel on (Triton's JIT, for these values): each pointer "D"
    (a tensor's storage starts at a multiple of 16 bytes), each integer that is a multiple of 16 "D"
    (tt.divisibility), each integer equal to 1 "1" (compiled as the constant). Constexpr parameters are the
    worker's to leave out."""
    bound: dict[str, Any] = dict(zip(params, args, strict=False))
    bound.update(kwargs)
    special = {}
    for name, value in bound.items():
        if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            special[name] = "D"
        elif isinstance(value, int) and not isinstance(value, bool):
            if value == 1:
                special[name] = "1"
            elif value % 16 == 0:
                special[name] = "D"
    return special


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
    compiled_rule: bool = False  # the compiled code lacks what the puzzle asks of it (Puzzle.compiled_rule)


@dataclass
class Unchecked:
    """Sizes the compiler gave no verdict on, where one was waited for: the kernel was not checked."""

    why: str
    target: int
    sizes: list[int] = field(default_factory=list)  # indices of the tested sizes


@dataclass
class CompileReport:
    problems: list[CompileProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # full compiles not waited for, still running
    unchecked: list[Unchecked] = field(default_factory=list)  # waited for, but no verdict came


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
    if not settings.READ_CACHE:
        return None
    try:
        return json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def cached_listing(key: str) -> dict | None:
    """A full compile's listing, stored beside its verdict (worker.store)."""
    if not settings.READ_CACHE:
        return None
    try:
        return json.loads(gzip.decompress((cache_dir() / f"{key}.listing.json.gz").read_bytes()))
    except (OSError, ValueError, EOFError):
        return None


class Check:
    """A compile check under way: `start()` hands it to the worker, `report()` collects it."""

    def __init__(self, spec: dict, items: list[dict], results: dict[int, dict],
                 jobs: dict[str, tuple[Worker, int]], tf32_matters: bool = True, rule: Any = None,
                 size_count: int = 1) -> None:
        self.spec = spec
        self.tf32_matters = tf32_matters  # the puzzle's tolerance is tighter than TF32's: keep that note
        self.items = items
        self.results = results  # index -> verdict (from the cache or the workers)
        self.jobs = jobs  # worker kind -> (that worker, its job number), for the items not in the cache
        self.started = time.perf_counter()
        self.rule = rule  # the puzzle's CompiledRule: judged on the full compile for its target
        self.size_count = size_count  # the sizes checked (a compiled rule's failure fails each)

    def listing(self, target: int, wait: float = FULL_WAIT) -> tuple[dict | None, CompileProblem | Unchecked | None]:
        """The full compile for `target`: (its listing, None), or (None, why there is none: the compiler's
        error, or no verdict within `wait` seconds). The listing comes from the compiler's answer, else from
        the cache."""
        index = next((i for i, it in enumerate(self.items) if it["stage"] == "full" and it["target"] == target),
                     None)
        if index is None:
            return None, Unchecked(f"no full compile for sm_{target} was asked for", target)
        item = self.items[index]
        if index not in self.results and "full" in self.jobs:
            worker, job = self.jobs["full"]
            worker.wait(job, [index], wait, self.results)
        verdict = self.results.get(index)
        if verdict is None or verdict.get("skipped"):
            return None, Unchecked(self._why_unchecked(item, verdict, wait), target, list(item["sizes"]))
        if verdict.get("error"):
            err = verdict["error"]
            line, filename = self._place(err.get("function"), err.get("offset"))
            return None, CompileProblem(err["message"], target, line, filename, list(item["sizes"]),
                                        bool(err.get("construct")), bool(err.get("rule")))
        listing = verdict.get("listing") or cached_listing(item["key"])
        if listing is None:
            return None, Unchecked("its listing was not kept (the compile cache could not be written)", target)
        return listing, None

    def own_functions(self) -> dict[str, dict]:
        """The learner's functions as they are now, by name (not the course's helpers, such as print_if)."""
        course = str(Path(__file__).resolve().parents[2])  # the puzzles package
        return {e["name"]: e for e in self.spec["functions"].values() if not e["filename"].startswith(course)}

    def _place(self, function: str | None, offset: int | None) -> tuple[int | None, str | None]:
        """The file line of an error stored as (function, lines after its `def`)."""
        entries = list(self.spec["functions"].values())
        entry = next((e for e in entries if e["name"] == function), entries[0] if entries else None)
        if entry is None or offset is None:
            return None, entry["filename"] if entry else None
        return entry["def_line"] + offset, entry["filename"]

    def _why_unchecked(self, item: dict, verdict: dict | None, full_wait: float) -> str:
        stage = "its front end" if item["stage"] == "front" else "its full compile"
        if verdict is not None:
            return (f"the compiler's process could not rebuild it from its source and the globals it reads "
                    f"({verdict['skipped']}); a GPU worker rebuilds a kernel the same way. A default value or "
                    "an annotation that reads a global object (a dict, a list, a tensor) is the usual cause: "
                    "use a number or a tl.constexpr")
        worker = self.jobs.get(item["stage"], (None, 0))[0]
        if worker is None or not worker.alive():
            return (f"the compiler's process stopped during {stage} for sm_{item['target']} (does the kernel "
                    "end processes, or crash Triton's compiler?)")
        seconds = FRONT_WAIT if item["stage"] == "front" else full_wait
        return (f"{stage} for sm_{item['target']} did not finish within {seconds:.0f} s (a tl.static_range "
                "loop unrolled very many times, or a branch with a very long body?)")

    def report(self, wait_full: bool | float = False) -> CompileReport:
        """Wait for the front end always; for the full compile, as long as `wait_full` says
        (True: until done; a number: that many seconds at most)."""
        front = [i for i, it in enumerate(self.items) if it["stage"] == "front"]
        full = [i for i, it in enumerate(self.items) if it["stage"] == "full"]
        if "front" in self.jobs:
            worker, job = self.jobs["front"]
            worker.wait(job, front, FRONT_WAIT, self.results)
        full_wait = FULL_WAIT if wait_full is True else float(wait_full or 0.0)
        if "full" in self.jobs:
            worker, job = self.jobs["full"]
            worker.wait(job, full, full_wait, self.results)
        report = CompileReport()
        if self.rule is not None:  # graded on the compiled code: its target's full compile is always waited for
            self._judge_rule(report, FULL_WAIT)
        for i, item in enumerate(self.items):
            verdict = self.results.get(i)
            waited = item["stage"] == "front" or wait_full is True
            if verdict is None and not waited:
                report.pending.append(f"sm_{item['target']}")
                continue
            if verdict is None or verdict.get("skipped"):
                # Where the grader waited for a verdict, none is no pass: a kernel whose compile never
                # ends, that stops the compiler's process, or that cannot be rebuilt in it is unchecked.
                report.unchecked.append(Unchecked(self._why_unchecked(item, verdict, full_wait),
                                                  item["target"], list(item["sizes"])))
                continue
            if verdict.get("error"):
                err = verdict["error"]
                line, filename = self._place(err.get("function"), err.get("offset"))
                report.problems.append(CompileProblem(err["message"], item["target"], line, filename,
                                                      list(item["sizes"]), bool(err.get("construct")),
                                                      bool(err.get("rule"))))
            report.notes += [n for n in verdict.get("notes", [])
                             if n not in report.notes and (self.tf32_matters or n != TF32_NOTE)]
        return report

    @property
    def kernel_name(self) -> str:
        return self.spec["functions"][self.spec["root"]]["name"]

    def _judge_rule(self, report: CompileReport, wait: float) -> None:
        """The puzzle's compiled rule, on the full compile for its target: a CompileProblem that fails every
        size, or a note naming each load and store and its width. A compile that failed is already reported."""
        from puzzles.running.compiled_code import from_listing, judge

        listing, why = self.listing(self.rule.target, wait)
        every = list(range(self.size_count))
        if listing is None:
            if isinstance(why, Unchecked):
                report.unchecked.append(Unchecked(f"its compiled code could not be read: {why.why}", why.target, every))
            return
        # The rule reads the PTX's loads and stores: the SASS is not disassembled for it.
        verdict = judge(self.rule, from_listing(listing, self.kernel_name, self.rule.target, self.own_functions(),
                                                with_sass=False))
        if verdict.problem is None:
            report.notes.append(verdict.note)
        else:
            report.problems.append(CompileProblem(verdict.problem, self.rule.target, verdict.line, verdict.filename,
                                                  every, compiled_rule=True))


def start(kernel: Any, calls: list[tuple[list[Any], dict[str, Any]]], min_sm: int = T4,
          forbidden: tuple[str, ...] = (), tf32_matters: bool = True, rule: Any = None,
          rule_only: bool = False) -> Check | None:
    """Begin checking `kernel` as called with each (args, kwargs) of `calls` (the first is the
    canonical size: the full compile runs there). None when the kernel cannot be described (no
    source, say): the interpreted verdict then stands alone. `forbidden`: triton.language functions
    the puzzle rules out, looked for in the Triton IR (`tt.dot` for "dot"), however the kernel
    reached them. `tf32_matters`: whether a tl.dot computed in TF32 on a GPU may miss the puzzle's tolerance.
    `rule`: the puzzle's CompiledRule, judged on the full compile's code for its target; `rule_only`: that
    compile alone (where the check is off, or on a GPU: the puzzle is graded on its compiled code all the same)."""
    described = _describe(kernel)
    if described is None:
        return None
    spec, params, plain_ints, options = described
    by_key: dict[str, dict] = {}  # sizes that compile alike share one check
    stable = _stable(spec)
    for index, (args, kwargs) in enumerate(calls):
        argspec = describe_args(args, kwargs, params, plain_ints)
        if argspec is None:
            return None
        # The front end at sm_80, or the puzzle's oldest GPU where that is newer (fp8 tl.dot: sm_89 and up).
        front = max(80, targets_for(min_sm)[0])
        wanted = [] if rule_only else [_item(stable, "front", front, argspec, options, sorted(forbidden))]
        if index == 0:
            special = specialization(args, kwargs, params)
            targets = [rule.target] if rule_only else targets_for(min_sm)
            # The compiled rule's target first: the grading waits for it (the worker takes a job's items in order).
            wanted += [_item(stable, "full", target, argspec, options, [], special)
                       for target in sorted(targets, key=lambda t: rule is None or t != rule.target)]
        for item in wanted:
            by_key.setdefault(item["key"], item)["sizes"].append(index)
    listed = {rule.target} if rule is not None else set()
    return _submit(spec, list(by_key.values()), tf32_matters, rule, len(calls), listed)


def start_listing(kernel: Any, call: tuple[list[Any], dict[str, Any]], target: int,
                  options: dict[str, int] | None = None) -> Check | None:
    """The full compile of `kernel` for `target`, as called with `call`, for its listing (puzzles.compiled()):
    the same compile (and the same cache entry) as the compile check's at that size, unless `options`
    (num_warps, num_stages, maxnreg) differ from the launch's. None when the kernel cannot be described."""
    request = listing_request(kernel, call, target, options)
    if request is None:
        return None
    spec, item = request
    return _submit(spec, [item], True, None, 1, {target})


def listing_request(kernel: Any, call: tuple[list[Any], dict[str, Any]], target: int,
                    options: dict[str, int] | None = None) -> tuple[dict, dict] | None:
    """(the kernel as the compiler's process rebuilds it, the full compile to ask for): its "key" names the
    compile (the same kernel, arguments' kinds and options: the same key). None when it cannot be described."""
    described = _describe(kernel)
    if described is None:
        return None
    spec, params, plain_ints, launch = described
    args, kwargs = call
    argspec = describe_args(args, kwargs, params, plain_ints)
    if argspec is None:
        return None
    item = _item(_stable(spec), "full", target, argspec, {**launch, **(options or {})}, [],
                 specialization(args, kwargs, params))
    item["sizes"].append(0)
    return spec, item


def submit_listing(spec: dict, item: dict) -> Check:
    """Start (or answer from the cache) the compile that `listing_request` described."""
    return _submit(spec, [item], True, None, 1, {item["target"]})


def _describe(kernel: Any) -> tuple[dict, list[str], frozenset[str], dict[str, int]] | None:
    """The kernel as the compiler's process rebuilds it, its parameters, those without an annotation, and an
    autotune config's launch options (a `ConfigLaunch`, puzzles/running/kernel.py)."""
    from puzzles.running.kernel import KernelHandle

    handle = KernelHandle.of(kernel)  # `kernel` may be test()'s handle already: nothing is read again
    spec = handle.description
    if handle.fn is None or spec is None:
        return None
    config = getattr(handle.kernel, "config", None)
    options = {k: v for k, v in (("num_warps", getattr(config, "num_warps", None)),
                                 ("num_stages", getattr(config, "num_stages", None))) if isinstance(v, int)}
    plain_ints = frozenset(p.name for p in handle.parameters if p.annotation is inspect.Parameter.empty)
    return spec, handle.param_names, plain_ints, options


def _item(stable: list, stage: str, target: int, argspec: list[tuple], options: dict[str, int], forbid: list[str],
          special: dict[str, str] | None = None) -> dict:
    """One compile to ask for, keyed by what decides its verdict (sizes that compile alike share it)."""
    item = {"stage": stage, "target": target, "args": argspec, "options": options, "sizes": [], "forbid": forbid,
            "key": _key(stable, argspec, stage, target, options, forbid, special or {})}
    if special is not None:
        item["special"] = special
    return item


def _submit(spec: dict, items: list[dict], tf32_matters: bool, rule: Any, size_count: int,
            listed: set[int]) -> Check:
    """Answer from the cache what it holds (a full compile whose listing is wanted: only with its listing) and
    hand the rest to the compiler processes."""
    results = {}
    for i, item in enumerate(items):
        hit = _cached(item["key"])
        if hit is None:
            continue
        listing_lost = (item["stage"] == "full" and item["target"] in listed and not hit.get("error")
                        and not (cache_dir() / f"{item['key']}.listing.json.gz").exists())
        if not listing_lost:
            results[i] = hit
    todo = [i for i in range(len(items)) if i not in results]
    jobs = {}
    for kind in ("front", "full"):
        mine = [(i, items[i]) for i in todo if items[i]["stage"] == kind]
        if mine:
            worker = worker_for(kind)
            jobs[kind] = (worker, worker.submit(spec, mine, str(cache_dir())))
    return Check(spec, items, results, jobs, tf32_matters, rule, size_count)
