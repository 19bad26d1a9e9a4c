"""The learner's workspace: `my-notebooks/`, a copy of the course's notebooks that no command overwrites.

    python -m puzzles workspace           # copy the notebooks that are missing (never overwrites one)
    python -m puzzles workspace --update  # merge a newer course in, keeping your kernels, grading cells and own cells

`notebooks/` is the course as published (generated, checked by the suite); `my-notebooks/` is git-ignored
and holds the learner's answers. `make lab` runs the first command and opens the copy.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from puzzles.course.notebooks import META_KEY, NOTEBOOK_DIR, cell_digest, dumps
from puzzles.course.solution_source import ROOT

WORKSPACE = ROOT / "my-notebooks"
BACKUP = ".backup"
# The cells that hold a learner's answer, found by their tags in both versions.
KEPT_TAGS = ("starter", "grade")
# Ids the generator gives its cells; any other id is a cell the learner added.
_GENERATED_ID = re.compile(r"^(p\d+-|progress-)")


def default_folder() -> Path:
    """The learner's workspace (my-notebooks/) when it holds notebooks, else the course's notebooks/:
    what `python -m puzzles grade` and `progress()` grade when told no folder."""
    return WORKSPACE if any(WORKSPACE.glob("*.ipynb")) else NOTEBOOK_DIR


def _digest(nb: dict) -> str | None:
    return nb.get("metadata", {}).get(META_KEY, {}).get("digest")


def _course() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in sorted(NOTEBOOK_DIR.glob("*.ipynb"))}


def create(directory: Path = WORKSPACE) -> tuple[list[Path], list[Path]]:
    """Copy the course notebooks that are not in `directory` yet. Returns (copied, out of date):
    the learner's copies made from an older course (never touched here)."""
    directory.mkdir(parents=True, exist_ok=True)
    copied, stale = [], []
    for name, nb in _course().items():
        mine = directory / name
        if not mine.exists():
            shutil.copyfile(NOTEBOOK_DIR / name, mine)
            copied.append(mine)
        elif _digest(_load(mine)) != _digest(nb):
            stale.append(mine)
    return copied, stale


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except ValueError:
        return {}


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _describe(cell: dict) -> str:
    first = next((line.strip() for line in _source(cell).splitlines() if line.strip()), "")
    first = first if len(first) <= 60 else first[:57] + "..."
    return f"{cell.get('cell_type', 'cell')} cell {cell.get('id')} ({first!r})"


def _replaced(cell: dict, recorded: dict[str, str], course_cell: dict) -> str | None:
    """How the learner's version of a course cell is lost to the update, if it is. The course records each
    cell's digest when it generates a notebook, so an edit is told from a change of the course; a copy
    made before it did so can only be compared with the new course's cell."""
    if cell.get("id") in recorded:
        return "your edit of the course's" if cell_digest(cell) != recorded[cell.get("id")] else None
    if _source(cell) != _source(course_cell) or cell.get("cell_type") != course_cell.get("cell_type"):
        return "your copy's (edited by you or changed by the course: this copy predates per-cell records)"
    return None


@dataclass
class Merge:
    """A merged notebook, and the course cells whose learner's version it replaced (described)."""

    notebook: dict
    replaced: list[str] = field(default_factory=list)


def merge(course: dict, mine: dict) -> Merge:
    """The course's new version with the learner's answer cells (by tag) and the cells the learner
    added, each kept right after the course cell it followed (a helper above the kernel stays above
    it). A course cell the learner edited gets the course's new text: it is listed in `replaced`."""
    merged = json.loads(json.dumps(course))
    theirs = {tag: cell for cell in mine.get("cells", []) for tag in cell.get("metadata", {}).get("tags", [])
              if tag in KEPT_TAGS}
    for cell in merged["cells"]:
        for tag in cell.get("metadata", {}).get("tags", []):
            if tag in theirs:
                cell["source"] = theirs[tag].get("source", "")
    course_cells = {cell.get("id"): cell for cell in merged["cells"]}
    recorded = mine.get("metadata", {}).get(META_KEY, {}).get("cells", {})
    # Walk the learner's copy: each added cell is anchored to the last course cell above it.
    after: dict[str | None, list[dict]] = {}
    anchor, replaced = None, []
    for cell in mine.get("cells", []):
        cid = cell.get("id")
        tags = cell.get("metadata", {}).get("tags", [])
        if cid in course_cells:
            anchor = cid
            how = None if any(tag in KEPT_TAGS for tag in tags) else _replaced(cell, recorded, course_cells[cid])
            if how:
                replaced.append(f"{how} {_describe(cell)}")
        elif _GENERATED_ID.match(str(cid or "")) or any(tag in KEPT_TAGS for tag in tags):
            if _source(cell).strip() and cid in recorded and cell_digest(cell) != recorded[cid]:
                replaced.append(f"your edit of the course's {_describe(cell)}, which the new course no longer has")
        else:
            after.setdefault(anchor, []).append(cell)
    cells = after.get(None, [])
    for cell in merged["cells"]:
        cells.append(cell)
        cells += after.get(cell.get("id"), [])
    merged["cells"] = cells
    return Merge(merged, replaced)


@dataclass
class Update:
    """What `update` did: the notebooks copied or merged, the backup folder, and per notebook the
    course cells whose learner's version was replaced (the backup holds it)."""

    changed: list[Path]
    backup: Path | None
    replaced: dict[str, list[str]] = field(default_factory=dict)


def update_workspace(directory: Path = WORKSPACE) -> Update:
    """Bring every copy to the course's version, keeping the learner's answers and own cells in place;
    each replaced copy is first saved under `<directory>/.backup/<time>/`."""
    copied, stale = create(directory)
    if not stale:
        return Update(copied, None)
    backup = directory / BACKUP / datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    backup.mkdir(parents=True, exist_ok=True)
    course = _course()
    replaced = {}
    for mine in stale:
        shutil.copy2(mine, backup / mine.name)
        result = merge(course[mine.name], _load(mine))
        mine.write_text(dumps(result.notebook))
        if result.replaced:
            replaced[mine.name] = result.replaced
    return Update(copied + stale, backup, replaced)


def update(directory: Path = WORKSPACE) -> tuple[list[Path], Path | None]:
    """`update_workspace`, as (updated notebooks, backup folder or None)."""
    done = update_workspace(directory)
    return done.changed, done.backup


def main(directory: Path | None = None, merge_newer: bool = False) -> int:
    directory = directory or WORKSPACE
    shown = directory.relative_to(ROOT) if directory.is_relative_to(ROOT) else directory
    if merge_newer:
        done = update_workspace(directory)
        for path in done.changed:
            print(f"updated {path.name}")
            for cell in done.replaced.get(path.name, []):
                print(f"  replaced {cell}; your version: {done.backup / path.name}")
        if done.backup is not None:
            print(f"your previous copies are in {done.backup}")
        print(f"{shown}/ matches the course" if not done.changed
              else f"{shown}/: {len(done.changed)} notebook(s) updated")
        return 0
    copied, stale = create(directory)
    for path in copied:
        print(f"copied {path.name} into {shown}/")
    if stale:
        print(f"{len(stale)} of your notebooks come from an older course ({', '.join(p.name for p in stale)}); "
              "`python -m puzzles workspace --update` merges the new version in, keeping your kernels "
              f"(a backup goes to {shown}/{BACKUP}/).")
    print(f"your workspace: {shown}/ (your answers live there; no course command overwrites it)")
    return 0
