"""`python -m puzzles grade`: the scoreboard over notebooks or Python files.

Each file is read, never run as a whole: from every code cell only the definitions (imports,
functions, classes, constant assignments) are taken, so grading cells, shell commands and
long-running demos are skipped. Kernels are then found by their canonical names and graded by
the same `test()` as the notebooks, against the catalog's own spec (a spec edited in the
notebook does not change what is graded). The files are never modified.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from puzzles import catalog
from puzzles.harness import test
from puzzles.puzzle import Puzzle
from puzzles.solution_source import is_starter

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


@dataclass
class Grade:
    puzzle: Puzzle
    status: str  # "passed", "failed", "not attempted"
    reason: str = ""
    source: str = ""
    seconds: float = 0.0
    result: Any = None

    def record(self) -> dict:
        return {"puzzle": self.puzzle.number, "id": self.puzzle.id, "kernel": self.puzzle.kernel_name,
                "status": self.status, "reason": self.reason, "source": self.source,
                "seconds": round(self.seconds, 3)}


def code_cells(path: Path) -> list[tuple[str, str]]:
    """(label, source) of each code cell of a notebook, or the whole file for a .py file."""
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text())
        cells = []
        for index, cell in enumerate(nb.get("cells", [])):
            if cell.get("cell_type") == "code":
                source = cell.get("source", "")
                cells.append((f"{path} [cell {index}]", "".join(source) if isinstance(source, list) else source))
        return cells
    return [(str(path), path.read_text())]


def _strip_magics(source: str) -> str:
    # IPython lines (%pip, !ls) are not Python: make them `pass`, keeping indentation and line numbers.
    return "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in source.splitlines())


def _is_definition(node: ast.stmt) -> bool:
    """Imports, functions, classes, and assignments of constants: nothing that runs the learner's
    experiments (an assignment such as `result = test(...)` or `x = torch.rand(...)` is skipped)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return node.value is not None and not any(
            isinstance(sub, ast.Call) and not _is_constexpr_call(sub) for sub in ast.walk(node.value))
    return isinstance(node, _DEFINITIONS)


def _is_constexpr_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "constexpr"


_DEF = re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE)


def load_definitions(path: Path, broken: dict[str, str] | None = None,
                     ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Execute only the definitions of a file; return the namespace, where each name was
    defined, and the problems met (a cell that does not parse, a definition that raised).
    `broken`, when given, receives for each function that could not be defined why (so a
    syntax error in a kernel's cell is a failure, not "not attempted")."""
    namespace: dict[str, Any] = {"__name__": f"graded_{path.stem}"}
    origins: dict[str, str] = {}
    problems: list[str] = []
    for label, source in code_cells(path):
        text = _strip_magics(source)
        try:
            tree = ast.parse(text)
        except SyntaxError as err:
            problem = f"{label}: line {err.lineno}: SyntaxError: {err.msg}"
            problems.append(problem)
            if broken is not None:
                for name in _DEF.findall(text):
                    broken[name] = problem
            continue
        # Register the source so Triton (and error messages) can read it by file name.
        linecache.cache[label] = (len(text), None, text.splitlines(keepends=True), label)
        for node in tree.body:
            if not _is_definition(node):
                continue
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), label, "exec"), namespace)
            except Exception as err:  # noqa: BLE001 - a learner's cell can raise anything
                problem = f"{label}: line {node.lineno}: {type(err).__name__}: {err}"
                problems.append(problem)
                if broken is not None and isinstance(node, ast.FunctionDef):
                    broken[node.name] = problem
                continue
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                origins[node.name] = label
    return namespace, origins, problems


def _kernel_source(label: str, name: str) -> str:
    text = "".join(linecache.cache.get(label, (0, None, [], label))[2])
    for node in ast.parse(_strip_magics(text)).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(text.splitlines()[start - 1 : node.end_lineno])
    return ""


def grade(paths: list[Path], puzzles: list[Puzzle], timeout: float = 20.0, viz_dir: Path | None = None) -> list[Grade]:
    """Grade every puzzle whose kernel the files define. When several files define a kernel, the
    last one that is not the starter is graded and the others are named in a warning (stderr)."""
    found: dict[str, list[tuple[Any, str]]] = {}
    broken: dict[str, str] = {}
    problems: list[str] = []
    for path in paths:
        file_broken: dict[str, str] = {}
        namespace, origins, file_problems = load_definitions(path, file_broken)
        problems += file_problems
        for p in puzzles:
            if p.kernel_name in namespace:
                found.setdefault(p.kernel_name, []).append(
                    (namespace[p.kernel_name], origins.get(p.kernel_name, str(path))))
            elif p.kernel_name in file_broken:
                broken[p.kernel_name] = file_broken[p.kernel_name]
    grades = []
    for p in puzzles:
        candidates = found.get(p.kernel_name, [])
        attempts = [c for c in candidates if not is_starter(_kernel_source(c[1], p.kernel_name), p)]
        if not attempts and p.kernel_name in broken:  # the learner wrote it, but it does not even define
            grades.append(Grade(p, "failed", broken[p.kernel_name], broken[p.kernel_name].split(": line")[0]))
            continue
        if not candidates:
            grades.append(Grade(p, "not attempted", f"no {p.kernel_name} found"))
            continue
        kernel, origin = (attempts or candidates)[-1]
        others = [o for _, o in candidates if o != origin]
        if others:
            problems.append(f"{p.kernel_name} is defined in {len(candidates)} places; graded the one in {origin}, "
                            f"not {', '.join(others)}")
        if not attempts:
            grades.append(Grade(p, "not attempted", "still the starter", origin))
            continue
        result = test(kernel, p.spec, puzzle=p, quiet=True, timeout=timeout, compile_check="full")
        if viz_dir is not None:
            from puzzles import viz

            viz.save_pngs(result, viz_dir / p.id)
        grades.append(Grade(p, "passed" if result.passed else "failed", "" if result.passed else result.reason(),
                            origin, result.seconds, result))
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    return grades


def scoreboard(grades: list[Grade]) -> str:
    width = max(len(g.puzzle.title) for g in grades) + 4
    lines = [f"{'':3}{'puzzle':{width}}{'status':16}details"]
    for g in grades:
        mark = {"passed": "✓", "failed": "✗", "not attempted": "·"}[g.status]
        detail = g.reason.splitlines()[0] if g.reason else f"{g.seconds:.2f} s"
        if len(detail) > 160:  # the full reason is in --json and in the notebook's verdict
            detail = detail[:159] + "…"
        lines.append(f"{mark:3}{f'{g.puzzle.number:2d} {g.puzzle.title}':{width}}{g.status:16}{detail}")
    passed = sum(g.status == "passed" for g in grades)
    attempted = sum(g.status != "not attempted" for g in grades)
    lines.append(f"\n{passed} passed, {attempted - passed} failed, {len(grades) - attempted} not attempted")
    return "\n".join(lines)


def default_folder() -> Path:
    """The learner's workspace (my-notebooks/) when it holds notebooks, else the course's notebooks/."""
    from puzzles.notebooks import NOTEBOOK_DIR
    from puzzles.workspace import WORKSPACE

    return WORKSPACE if any(WORKSPACE.glob("*.ipynb")) else NOTEBOOK_DIR


def default_paths() -> list[Path]:
    return sorted(default_folder().glob("*.ipynb"))


def expand(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out += sorted(list(path.glob("*.ipynb")) + list(path.glob("*.py")))
        elif path.exists():
            out.append(path)
        else:
            raise FileNotFoundError(f"no such file or directory: {raw}")
    return out


def select(numbers: list[int] | None) -> list[Puzzle]:
    if not numbers:
        return catalog.all_puzzles()
    return [catalog.get(n) for n in numbers]


class Progress:
    """The scoreboard of a folder, shown in a notebook as a table with a link to each puzzle."""

    def __init__(self, grades: list[Grade], folder: Path, links: dict[int, str], looked: list[Path] | None = None):
        self.grades, self.folder, self.links = grades, folder, links
        self.looked = looked or [folder]  # the folders searched for puzzle notebooks, in order

    def found(self) -> bool:
        return bool(self.links)

    def note(self) -> str:
        """What was searched, when no puzzle notebook was found (else empty)."""
        if self.found():
            return ""
        where = "; ".join(str(f) + ("" if f.is_dir() else " (no such folder)") for f in self.looked)
        return (f"No puzzle notebook (01_constant_add.ipynb ... 21_multi_tensor_apply.ipynb) found: looked in {where}. "
                "Pass the folder that holds yours: progress(\"path/to/folder\"). On Colab, a notebook opened from "
                "GitHub is not a file of the runtime: save your copies to Google Drive, mount it "
                "(from google.colab import drive; drive.mount(\"/content/drive\")) and pass "
                "progress(\"/content/drive/MyDrive/Colab Notebooks\").")

    def __str__(self) -> str:
        return scoreboard(self.grades) + (f"\n\n{self.note()}" if self.note() else "")

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from html import escape

        rows = []
        for g in self.grades:
            mark = {"passed": "✓", "failed": "✗", "not attempted": "·"}[g.status]
            title = f"{g.puzzle.number:02d} {escape(g.puzzle.title)}"
            link = self.links.get(g.puzzle.number)
            name = f'<a href="{escape(link)}">{title}</a>' if link else title
            detail = escape(g.reason.splitlines()[0][:200]) if g.reason else f"{g.seconds:.2f} s"
            rows.append(f"<tr><td>{mark}</td><td style='text-align:left'>{name}</td><td>{g.status}</td>"
                        f"<td style='text-align:left'>{detail}</td></tr>")
        passed = sum(g.status == "passed" for g in self.grades)
        if not self.found():
            return f"<p><b>{escape(self.note())}</b></p>"
        return (f"<p><b>{passed} of {len(self.grades)} puzzles passed</b> (notebooks in {escape(str(self.folder))})</p>"
                "<table><tr><th></th><th style='text-align:left'>puzzle</th><th>status</th>"
                "<th style='text-align:left'>details</th></tr>" + "".join(rows) + "</table>")


def _notebook_folder() -> Path | None:
    """The folder of the notebook this kernel runs, where the front end says (Jupyter Server sets
    JPY_SESSION_NAME to the notebook's path, VS Code sets __vsc_ipynb_file__)."""
    import __main__

    path = os.environ.get("JPY_SESSION_NAME") or getattr(__main__, "__vsc_ipynb_file__", None)
    return Path(path).resolve().parent if path and Path(path).suffix == ".ipynb" else None


def progress(folder: str | Path | None = None, timeout: float = 20.0) -> Progress:
    """Grade the puzzle notebooks of `folder` (default: the current folder when it holds them, as in
    the progress notebook, else the open notebook's folder, else `make grade`'s folder) and return the
    scoreboard; when none holds a puzzle notebook, it says where it looked."""
    looked = [Path(folder)] if folder is not None else [Path.cwd(), _notebook_folder(), default_folder()]
    looked = list(dict.fromkeys(f for f in looked if f is not None))
    folder = next((f for f in looked if any(f.glob("[0-9][0-9]_*.ipynb"))), looked[0])
    puzzles = catalog.all_puzzles()
    grades = grade(sorted(folder.glob("*.ipynb")), puzzles, timeout=timeout)
    # Links relative to the notebook showing the table (the current folder), as Jupyter resolves them.
    links = {p.number: os.path.relpath(folder / f"{p.id}.ipynb", Path.cwd()) for p in puzzles
             if (folder / f"{p.id}.ipynb").exists()}
    return Progress(grades, folder, links, looked)
