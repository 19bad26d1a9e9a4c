"""The reference kernels in `solutions/` and the starters cut out of them.

A reference kernel marks the part the learner writes:

    @triton.jit
    def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
        # BEGIN SOLUTION
        ...
        # END SOLUTION

The starter is the same kernel with that region replaced by a "Finish me (about N lines)"
marker, so the signature, the docstring and any scaffolding exist exactly once.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import textwrap
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parents[2]
# What grading needs of the references, without their answers: each kernel's starter and signature. A class's
# worker reads them before it drops its privileges (`preload_starters`), after which the references are out of
# its reach; the Gradescope autograder ships this file instead of solutions/ (classroom/gradescope_build.py).
STARTERS_FILE = Path(__file__).resolve().parent / "starters.json"
PRELOADED: dict[str, dict[str, str]] = {}  # solution module -> {"starter": ..., "signature": ...}
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
FINISH_ME = "# Finish me (about {n} lines)"


class PuzzleRecord(Protocol):
    """What this module reads of a `puzzles.course.puzzle.Puzzle` (which sits above it and calls it)."""

    number: int
    kernel_name: str

    @property
    def solution_module(self) -> str: ...


class MarkerError(ValueError):
    """A reference whose solution markers are missing, unbalanced or nested."""


def solution_path(p: PuzzleRecord) -> Path:
    spec = importlib.util.find_spec(p.solution_module)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"no reference for puzzle {p.number}: expected {p.solution_module}")
    return Path(spec.origin)


def _kernel_lines(p: PuzzleRecord) -> list[str]:
    """The kernel's source in its solution file: decorators, signature and body."""
    path = solution_path(p)
    return list(_read_kernel_lines(path, path.stat().st_mtime_ns, p.kernel_name))


@functools.lru_cache(maxsize=128)
def _read_kernel_lines(path: Path, mtime_ns: int, kernel_name: str) -> tuple[str, ...]:
    """Read once per version of the file: the statement's signature, the starter and the notebook all
    come from these lines, and grading asks for the signature every time it runs."""
    text = path.read_text()
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel_name:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            lines = text.splitlines()
            last = node.end_lineno
            # The AST ends at the last statement; keep the body's trailing comments (# END SOLUTION).
            while last < len(lines) and lines[last].startswith((" ", "\t")) and lines[last].strip().startswith("#"):
                last += 1
            return tuple(lines[first - 1 : last])
    raise MarkerError(f"{path.name} defines no function {kernel_name}")


def _solution_region(lines: list[str], where: str) -> tuple[int, int]:
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise MarkerError(f"{where}: needs exactly one '{BEGIN}' followed by one '{END}' "
                          f"(found {len(begins)} and {len(ends)})")
    return begins[0], ends[0]


def reference_source(p: PuzzleRecord) -> str:
    """The reference kernel without its markers (what a correct notebook cell holds)."""
    lines = _kernel_lines(p)
    b, e = _solution_region(lines, p.solution_module)
    return "\n".join(lines[:b] + lines[b + 1 : e] + lines[e + 1 :]) + "\n"


def solution_line_count(p: PuzzleRecord) -> int:
    lines = _kernel_lines(p)
    b, e = _solution_region(lines, p.solution_module)
    return sum(1 for line in lines[b + 1 : e] if line.strip() and not line.strip().startswith("#"))


def starters_record(puzzles: list[PuzzleRecord]) -> dict[str, dict[str, str]]:
    """Each puzzle's starter and signature, by its reference's module: all that grading reads of a reference."""
    return {p.solution_module: {"starter": starter_source(p), "signature": kernel_signature(p)} for p in puzzles}


def preload_starters(puzzles: list[PuzzleRecord]) -> None:
    """Read the starters and signatures of `puzzles` now (while the references can be read) and forget the
    references' text: from then on grading asks neither solutions/ nor its own memory for an answer."""
    PRELOADED.update(starters_record(puzzles))
    _read_kernel_lines.cache_clear()


def _preloaded(p: PuzzleRecord) -> dict[str, str] | None:
    if not PRELOADED and STARTERS_FILE.is_file():  # an autograder without solutions/
        import json

        PRELOADED.update(json.loads(STARTERS_FILE.read_text()))
    return PRELOADED.get(p.solution_module)


def starter_source(p: PuzzleRecord) -> str:
    """The kernel as the learner first sees it."""
    known = _preloaded(p)
    if known is not None:
        return known["starter"]
    lines = _kernel_lines(p)
    b, e = _solution_region(lines, p.solution_module)
    indent = lines[b][: len(lines[b]) - len(lines[b].lstrip())]
    stub = [indent + FINISH_ME.format(n=solution_line_count(p)), indent + "pass"]
    return "\n".join(lines[:b] + stub + lines[e + 1 :]) + "\n"


def kernel_signature(p: PuzzleRecord) -> str:
    """`add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr)`, read from the reference."""
    known = _preloaded(p)
    if known is not None:
        return known["signature"]
    source = textwrap.dedent("\n".join(_kernel_lines(p)))
    match = re.search(r"def\s+(\w+\s*\(.*?\))\s*(->.*?)?:", source, re.S)
    if match is None:
        raise MarkerError(f"cannot read the signature of {p.kernel_name}")
    return re.sub(r"\s+", " ", match.group(1)).replace("( ", "(").replace(", )", ")")


def is_starter(source: str, p: PuzzleRecord) -> bool:
    """True when `source` is still the untouched starter (whitespace aside)."""
    def norm(s: str) -> str:
        return re.sub(r"\s+", "", s)

    return norm(source) == norm(starter_source(p))
