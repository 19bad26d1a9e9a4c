"""A submission's files loaded and graded in this process: what `python -m puzzles grade`, `progress()`
and a class's grading worker (puzzles/classroom/worker.py) run.

Each file is read, never run as a whole: from every code cell only the definitions are taken
(imports, functions, constant assignments to names, and assignments with calls whose names a
function uses, such as `CONFIGS = [triton.Config(...) for ...]` above an autotuned kernel), so
grading cells, bare expressions, shell commands, experiments and assignments into other objects
(`os.environ["PUZZLES_COMPILE_CHECK"] = "0"` would switch a check off) are skipped. Before any of
them runs, the load rules (puzzles/submissions/load_rules.py) check what they would evaluate: no class
definitions, and calls only from an allowlist (Triton's decorators and configs, `tl.constexpr`,
`math`, computing builtins) through the file's own imports. A refused statement is not run; it is
a loading problem with its line and why, and fails only the kernels that read what it would define
("line 7: a class definition is not allowed in a graded file; ..."). Kernels are then found by
their canonical names and graded by the same `test()` as the notebooks, against the catalog's own
spec (a spec edited in the notebook does not change what is graded). The files are never modified.

This runs the definitions in this process: it is the learner's scoreboard over their own work.
Submissions of others are graded by puzzles/classroom/roster.py, in isolated processes, under the same rules.
"""

from __future__ import annotations

import ast
import contextlib
import json
import linecache
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from puzzles.course import catalog
from puzzles.course.notebooks import is_setup_cell
from puzzles.course.puzzle import Puzzle
from puzzles.course.solution_source import is_starter, starter_source
from puzzles.grading import test
from puzzles.running.limits import KernelTimeout, time_limit
from puzzles.submissions.kernel_body import kernel_body_error
from puzzles.submissions.load_rules import LoadRules, free_names, loaded_names

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
# Calls that grade or show results: a statement that makes them is a grading cell, never a definition.
GRADING_CALLS = frozenset({"test", "progress", "display", "print"})
LOAD_SECONDS = 10.0  # one statement of a learner's file, while loading its definitions


@dataclass
class Grade:
    puzzle: Puzzle
    status: str  # "passed", "failed", "not attempted"
    reason: str = ""
    source: str = ""
    seconds: float = 0.0
    result: Any = None
    seed: int | None = None

    def record(self) -> dict:
        return {"puzzle": self.puzzle.number, "id": self.puzzle.id, "kernel": self.puzzle.kernel_name,
                "status": self.status, "reason": self.reason, "source": self.source,
                "seconds": round(self.seconds, 3), "seed": self.seed}


def code_cells(path: Path) -> list[tuple[str, str]]:
    """(label, source) of each code cell of a notebook, or the whole file for a .py file."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
            raise ValueError("not a notebook: no list of cells")
        cells = []
        for index, cell in enumerate(nb.get("cells", [])):
            if not isinstance(cell, dict):
                raise ValueError(f"not a notebook: cell {index} is a {type(cell).__name__}")
            if cell.get("cell_type") == "code":
                source = cell.get("source", "")
                if isinstance(source, list) and all(isinstance(line, str) for line in source):
                    source = "".join(source)
                if not isinstance(source, str):  # a malformed file fails as unreadable, never the grader
                    raise ValueError(f"not a notebook: cell {index}'s source is not text")
                cells.append((f"{path} [cell {index}]", source))
        return cells
    return [(str(path), path.read_text())]


def strip_magics(source: str) -> str:
    """IPython lines (%pip, !ls) are not Python: make them `pass`, keeping indentation and line numbers."""
    return "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in source.splitlines())


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Call) and not _is_constexpr_call(sub) for sub in ast.walk(node))


def _is_constexpr_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "constexpr"


def _calls_grader_or_launches(node: ast.AST) -> bool:
    """`test(...)`, `progress()`, or a kernel launch `kernel[grid](...)`: a grading cell or an experiment."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in GRADING_CALLS or isinstance(func, ast.Subscript):
                return True
    return False


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]


def _targets(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {sub.id for t in targets for sub in ast.walk(t) if isinstance(sub, ast.Name)}


def _defines_names(node: ast.Assign | ast.AnnAssign) -> bool:
    """Every target is a name (or a tuple of names): `os.environ["X"] = "0"` or `module.attr = v`
    changes an object the grader may share (an environment variable it reads, a module of the
    harness), so it is not a definition and grading never runs it."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]

    def names_only(target: ast.expr) -> bool:
        if isinstance(target, ast.Name):
            return True
        if isinstance(target, ast.Starred):
            return names_only(target.value)
        return isinstance(target, (ast.Tuple, ast.List)) and all(names_only(t) for t in target.elts)

    return all(names_only(t) for t in targets)


def select_definitions(statements: list[ast.stmt]) -> list[ast.stmt]:
    """The statements grading would run, in order (the load rules then refuse some: every class, a
    call off their allowlist): imports, functions, classes, assignments to names without calls, and
    assignments to names with calls whose names a function or class (or another selected
    assignment) uses. Grading cells, kernel launches, bare expressions, loops and
    assignments into other objects (`os.environ[...] = ...`, `module.attr = ...`) are left out."""
    plain, with_calls = [], []
    for node in statements:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None or _calls_grader_or_launches(node.value) or not _defines_names(node):
                continue
            (with_calls if _has_call(node.value) else plain).append(node)
        elif isinstance(node, _DEFINITIONS):
            plain.append(node)
    needed = set().union(*(free_names(n) for n in plain if isinstance(n, (ast.FunctionDef, ast.ClassDef))))
    chosen: set[int] = set()
    grew = True
    while grew:  # an assignment a kernel needs may itself need another one
        grew = False
        for node in with_calls:
            if id(node) not in chosen and _targets(node) & needed:
                chosen.add(id(node))
                needed |= loaded_names(node.value)
                grew = True
    keep = {id(n) for n in plain} | chosen
    return [n for n in statements if id(n) in keep]


_DEF = re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE)


@dataclass
class Loaded:
    """What the definitions of one file made: the namespace, where each function or class was
    defined, the problems met, why each function that could not be defined failed, and the
    statements the load rules refused (puzzles/submissions/load_rules.py), each as a message."""

    namespace: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)
    failed_names: dict[str, str] = field(default_factory=dict)  # name -> why its assignment raised
    refusals: list[str] = field(default_factory=list)  # the statements refused for what they are


def load_file(path: Path) -> Loaded:
    """Execute only the definitions of a file (see `select_definitions`) that the load rules allow
    (puzzles/submissions/load_rules.py: no class, calls from an allowlist), checked over all its cells before
    any runs. A cell that does not parse, a refused statement and a statement that raises are
    reported, not fatal; a function that could not be defined is recorded in `broken` (so a syntax
    error in a kernel's cell is a failure, not "not attempted"), with the failed assignment it
    needed when that was the cause."""
    loaded = Loaded({"__name__": f"graded_{path.stem}"})
    failed_names = loaded.failed_names
    cells: list[tuple[str, list[ast.stmt]]] = []
    for label, source in code_cells(path):
        text = strip_magics(source)
        try:
            tree = ast.parse(text)
        except SyntaxError as err:
            problem = f"{label}: line {err.lineno}: SyntaxError: {err.msg}"
            loaded.problems.append(problem)
            for name in _DEF.findall(text):
                loaded.broken[name] = problem
            continue
        # Register the source so Triton (and error messages) can read it by file name.
        linecache.cache[label] = (len(text), None, text.splitlines(keepends=True), label)
        chosen = select_definitions(tree.body)
        if " [cell " in label and is_setup_cell(text):  # the course's set-up cell installs
            chosen = [n for n in chosen if not isinstance(n, (ast.Import, ast.ImportFrom))]  # the course: not run
        cells.append((label, chosen))
    statements = [node for _, nodes in cells for node in nodes]
    refused = LoadRules(statements).refusals(statements, {id(n): label for label, nodes in cells for n in nodes})
    for label, nodes in cells:
        for node in nodes:
            refusal = refused.get(id(node))
            if refusal is not None:
                problem = f"{label}: {refusal.message()}"
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                        _sibling_module(label, module) for module in _imported_modules(node)):
                    problem += SIBLING_ADVICE
                loaded.problems.append(problem)
                if not refusal.needs_refused:
                    loaded.refusals.append(problem)
                if isinstance(node, ast.FunctionDef):
                    loaded.broken[node.name] = problem
                else:  # `from solutions.p01 import add_kernel`, `add_kernel = ref.add_kernel`: a kernel it
                    for name in refusal.names:  # would bind fails with the refusal, not "not attempted"
                        loaded.broken.setdefault(name, problem)
                failed_names.update(dict.fromkeys(refusal.names, problem))
                continue
            _run_definition(node, label, loaded)
    return loaded


def _run_definition(node: ast.stmt, label: str, loaded: Loaded) -> None:
    try:
        with time_limit(LOAD_SECONDS):
            exec(compile(ast.Module(body=[node], type_ignores=[]), label, "exec"), loaded.namespace)
    except (Exception, KernelTimeout) as err:  # noqa: BLE001 - a learner's cell can raise anything
        problem = f"{label}: line {node.lineno}: {type(err).__name__}: {err}"
        if isinstance(err, KernelTimeout):
            problem = (f"{label}: line {node.lineno}: did not finish within {LOAD_SECONDS:g} s while "
                       "loading (an endless computation in a decorator, a default or an assigned value?)")
        elif isinstance(err, MemoryError):
            problem = (f"{label}: line {node.lineno}: MemoryError: it needs more memory than grading may use "
                       "(the memory limit)")
        elif isinstance(err, ModuleNotFoundError) and _sibling_module(label, err.name):
            problem += SIBLING_ADVICE
        cause = loaded.failed_names.get(getattr(err, "name", None) or "")
        if isinstance(err, NameError) and cause:
            problem += f" (because {cause})"
        loaded.problems.append(problem)
        if isinstance(node, ast.FunctionDef):
            loaded.broken[node.name] = problem
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            loaded.failed_names.update(dict.fromkeys(_targets(node), problem))
        return
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        loaded.origins[node.name] = label


SIBLING_ADVICE = (" (a module of your own next to the file: the grader loads each file alone, without its folder "
                  "on the import path; put the @triton.jit helpers you import from it in the file itself)")


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]


def _sibling_module(label: str, name: str | None) -> bool:
    """Whether `name` is a module of the learner's own beside the file a cell (`label`) comes from."""
    folder = Path(label.split(" [cell ")[0]).parent
    top = (name or "").split(".")[0]
    return bool(top) and ((folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file())


def load_definitions(path: Path, broken: dict[str, str] | None = None,
                     ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """`load_file` as a tuple (namespace, origins, problems), filling `broken` when given."""
    loaded = load_file(path)
    if broken is not None:
        broken.update(loaded.broken)
    return loaded.namespace, loaded.origins, loaded.problems


def _kernel_source(label: str, name: str) -> str:
    text = "".join(linecache.cache.get(label, (0, None, [], label))[2])
    for node in ast.parse(strip_magics(text)).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(text.splitlines()[start - 1 : node.end_lineno])
    return ""


def _parameters(source: str, name: str) -> list[str] | None:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [a.arg for a in _all_args(node.args)]
    return None


def renamed_kernel(paths: list[Path], p: Puzzle) -> str | None:
    """"no kernel named X; found Y with the same parameters" when a decorated function of the
    files has the starter's parameters under another name (read from the source, never run)."""
    wanted = _parameters(starter_source(p), p.kernel_name)
    if not wanted:
        return None
    other_kernels = {q.kernel_name for q in catalog.all_puzzles()}  # puzzles 1 and 2 take the same parameters
    for path in paths:
        try:
            cells = code_cells(path)
        except (OSError, ValueError):
            continue
        for label, source in cells:
            try:
                tree = ast.parse(strip_magics(source))
            except SyntaxError:
                continue
            for node in tree.body:
                if (isinstance(node, ast.FunctionDef) and node.decorator_list and node.name not in other_kernels
                        and [a.arg for a in _all_args(node.args)] == wanted):
                    return (f"no kernel named {p.kernel_name}; found {node.name} with the same parameters "
                            f"({label}, line {node.lineno}): name it {p.kernel_name} to have it graded")
    return None


@dataclass
class Submission:
    """The kernels the files define, per kernel name: (kernel, where), in file order; why a
    kernel could not be defined; and the problems met while loading."""

    paths: list[Path]
    found: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    failed_names: dict[str, str] = field(default_factory=dict)
    refusals: dict[str, list[str]] = field(default_factory=dict)  # file -> statements the load rules refused

    def refused_in(self, origin: str) -> list[str]:
        """The refusals of the file a kernel came from (`origin`: the file, or its "file [cell N]")."""
        return next((found for path, found in self.refusals.items()
                     if origin == path or origin.startswith(f"{path} [cell ")), [])


def collect(paths: list[Path], puzzles: list[Puzzle]) -> Submission:
    """Load the definitions of every file and keep the puzzles' kernels. The environment is put
    back as it was once they are loaded: the grader reads its own variables (PUZZLES_COMPILE_CHECK,
    TRITON_INTERPRET), and a definition that set one (`X = os.environ.update(...)`) must not
    change how the kernels are graded. What loading prints goes to stderr: stdout is the
    scoreboard's (`--json` lines a script reads), and a printed verdict must not pass for one."""
    environment = dict(os.environ)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return _collect(paths, puzzles)
    finally:
        if dict(os.environ) != environment:
            os.environ.clear()
            os.environ.update(environment)


def _collect(paths: list[Path], puzzles: list[Puzzle]) -> Submission:
    submission = Submission(list(paths))
    for path in paths:
        try:
            loaded = load_file(path)
        except (OSError, ValueError, UnicodeDecodeError) as err:  # a truncated or corrupt notebook
            problem = f"{path}: cannot be read ({type(err).__name__}: {err})"
            submission.problems.append(problem)
            try:  # the puzzles this file was for: by its name, or the kernels still legible in it
                names = set(_DEF.findall(path.read_text(errors="replace")))
            except OSError:
                names = set()
            for p in puzzles:
                if p.kernel_name in names or path.stem == p.id:
                    submission.broken.setdefault(p.kernel_name, problem)
            continue
        submission.problems += loaded.problems
        submission.failed_names.update(loaded.failed_names)
        if loaded.refusals:
            submission.refusals[str(path)] = loaded.refusals
        for p in puzzles:
            if p.kernel_name in loaded.namespace:
                submission.found.setdefault(p.kernel_name, []).append(
                    (loaded.namespace[p.kernel_name], loaded.origins.get(p.kernel_name, str(path))))
            elif p.kernel_name in loaded.broken:
                submission.broken[p.kernel_name] = loaded.broken[p.kernel_name]
    return submission


def grade_puzzle(submission: Submission, p: Puzzle, timeout: float = 20.0, viz_dir: Path | None = None,
                 seed: int | None = None, perf: bool = False, observe: Any = None,
                 efficiency: bool | None = None, isolate: bool | None = None) -> Grade:
    """The verdict on one puzzle's kernel. When several files define it, the last one that is
    not the starter is graded and the others are named in `submission.problems`. `perf`: on a GPU,
    also time a passing kernel (its report in `Grade.result.perf`); `observe`: test()'s (each launch's raw runs);
    `isolate`: test()'s (True: every run in a forked child, whatever this process has loaded)."""
    candidates = submission.found.get(p.kernel_name, [])
    attempts = [c for c in candidates if not is_starter(_kernel_source(c[1], p.kernel_name), p)]
    if not attempts and p.kernel_name in submission.broken:  # the learner wrote it, but it does not even define
        problem = submission.broken[p.kernel_name]
        return Grade(p, "failed", problem, problem.split(": line")[0])
    if not candidates:
        renamed = renamed_kernel(submission.paths, p)
        if renamed:  # not graded (it may be a variant kept aside), but say what was found
            return Grade(p, "not attempted", renamed)
        # Say whether its notebook was there at all: a copy deleted or never made reads differently.
        notebooks = [path for path in submission.paths if path.suffix == ".ipynb"]
        missing = f" (no {p.id}.ipynb here)" if notebooks and all(n.stem != p.id for n in notebooks) else ""
        return Grade(p, "not attempted", f"no {p.kernel_name} found{missing}")
    kernel, origin = (attempts or candidates)[-1]
    others = [o for _, o in candidates if o != origin]
    if others:
        submission.problems.append(f"{p.kernel_name} is defined in {len(candidates)} places; graded the one in "
                                   f"{origin}, not {', '.join(others)}")
    if not attempts:
        return Grade(p, "not attempted", "still the starter", origin)
    refused = kernel_body_error(kernel)  # before it runs or compiles: what its body names, resolved
    if refused is not None:
        return Grade(p, "failed", f"{origin}: {refused.describe()}", origin)
    result = test(kernel, p.spec, puzzle=p, quiet=True, timeout=timeout, compile_check="full", seed=seed, perf=perf,
                  observe=observe, efficiency=efficiency, isolate=isolate)
    if viz_dir is not None:
        from puzzles import viz

        viz.save_pngs(result, viz_dir / p.id, puzzle=p)
    reason = "" if result.passed else result.reason()
    for name, problem in submission.failed_names.items():  # a name the kernel needed was never defined
        if f"'{name}'" in reason:
            reason += f" ({name} was not defined: {problem})"
    refused = [r.split(";")[0] for r in submission.refused_in(origin) if r not in reason]
    if reason and refused:  # the kernel does not read them, but what they did is not there: say so
        reason += (f" (grading did not run {len(refused)} statement(s) of this file, the loading problems say "
                   f"why: {'; '.join(refused[:3])})")
    return Grade(p, "passed" if result.passed else "failed", reason, origin, result.seconds, result, result.seed)


def grade(paths: list[Path], puzzles: list[Puzzle], timeout: float = 20.0, viz_dir: Path | None = None,
          seed: int | None = None) -> list[Grade]:
    """Grade every puzzle whose kernel the files define, in this process; the problems met
    (files that do not parse, kernels defined twice) are printed as warnings (stderr)."""
    submission = collect(paths, puzzles)
    grades = [grade_puzzle(submission, p, timeout, viz_dir, seed) for p in puzzles]
    for problem in submission.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return grades
