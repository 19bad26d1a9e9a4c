"""`python -m puzzles grade`'s helpers: the files and the puzzles a command line names.

Loading and grading the files is puzzles/submissions/grade.py's; the table printed is
puzzles/learner/progress.py's `scoreboard`, the one a notebook's `progress()` shows.
"""

from __future__ import annotations

from pathlib import Path

from puzzles.course import catalog
from puzzles.course.puzzle import Puzzle
from puzzles.learner.progress import progress  # noqa: F401 - notebooks shipped until 2026-11 import it from here
from puzzles.learner.workspace import default_folder


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


