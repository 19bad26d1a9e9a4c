"""The diagrams in assets/ are the ones the catalog draws today.

A change of sizes, shapes or grid must be followed by `python -m puzzles diagrams` (or
`python -m puzzles.diagrams`); these tests say which files are out of date.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

from puzzles import catalog, diagrams

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
REGENERATE = "run `python -m puzzles diagrams` to redraw them"


def _pinned_matplotlib() -> str | None:
    m = re.search(r"^matplotlib==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    return m.group(1) if m else None


def _committed(name: str) -> bytes | None:
    path = ASSETS / name
    return path.read_bytes() if path.is_file() else None


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("assets")
    return {path.name: path.read_bytes() for path in diagrams.write_all(out)}


def test_every_puzzle_has_its_diagram() -> None:
    missing = [f"{p.id}.svg" for p in catalog.all_puzzles() if not (ASSETS / f"{p.id}.svg").is_file()]
    assert not missing, f"no diagram in assets/ for {missing}: {REGENERATE}"


def test_no_diagram_without_a_puzzle() -> None:
    ids = {p.id for p in catalog.all_puzzles()}
    stray = sorted(path.name for path in ASSETS.glob("*.svg") if path.stem not in ids)
    assert not stray, f"assets/ has diagrams of no puzzle in the catalog: {stray}"


def test_committed_diagrams_match_the_catalog(regenerated: dict[str, bytes]) -> None:
    pinned = _pinned_matplotlib()
    if pinned and matplotlib.__version__ != pinned:
        pytest.skip(f"the committed SVGs are drawn with matplotlib {pinned}, this is {matplotlib.__version__}")
    stale = sorted(name for name, data in regenerated.items() if _committed(name) != data)
    assert not stale, f"out of date in assets/: {stale}: {REGENERATE}"


def test_output_is_deterministic_and_undated(regenerated: dict[str, bytes], tmp_path: Path) -> None:
    puzzle = catalog.all_puzzles()[-1]
    again = tmp_path / f"{puzzle.id}.svg"
    diagrams.save(diagrams.draw(puzzle), again, title=f"Puzzle {puzzle.number}: {puzzle.title}")
    data = regenerated[f"{puzzle.id}.svg"]
    assert again.read_bytes() == data
    assert b"<dc:date>" not in data and b"Matplotlib v" not in data


def test_every_diagram_fits_a_notebook(regenerated: dict[str, bytes]) -> None:
    """Notebook width (8 in = 576 pt), and not taller than a screen."""
    for name, data in regenerated.items():
        m = re.search(rb'<svg[^>]* width="([\d.]+)pt" height="([\d.]+)pt"', data)
        assert m, name
        width, height = float(m.group(1)), float(m.group(2))
        assert width == diagrams.FIG_W * 72 and 144 < height < 11 * 72, (name, width, height)
