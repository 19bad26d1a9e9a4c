"""Every puzzle of the course, by number. Each module `pNN_<slug>.py` defines one `PUZZLE`."""

from __future__ import annotations

import importlib
import pkgutil

from puzzles.course.puzzle import Puzzle


def _load() -> dict[int, Puzzle]:
    found: dict[int, Puzzle] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("p"):
            continue
        puzzle = importlib.import_module(f"{__name__}.{info.name}").PUZZLE
        expected = f"p{puzzle.id}"
        if info.name != expected:
            raise ImportError(f"{info.name}.py defines puzzle {puzzle.id}; rename it {expected}.py")
        if puzzle.number in found:
            raise ImportError(f"two puzzles are numbered {puzzle.number}")
        found[puzzle.number] = puzzle
    return found


PUZZLES: dict[int, Puzzle] = _load()


def get(number: int) -> Puzzle:
    try:
        return PUZZLES[number]
    except KeyError:
        raise KeyError(f"there is no puzzle {number}; the puzzles are {sorted(PUZZLES)}") from None


def find(*, spec_name: str | None = None, kernel_name: str | None = None) -> Puzzle | None:
    """The puzzle whose spec or kernel has this name, if any."""
    for p in PUZZLES.values():
        if (spec_name and p.spec_name == spec_name) or (kernel_name and p.kernel_name == kernel_name):
            return p
    return None


def all_puzzles() -> list[Puzzle]:
    return [PUZZLES[n] for n in sorted(PUZZLES)]
