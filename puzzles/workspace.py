"""The learner's workspace: `my-notebooks/`, a copy of the course's notebooks that no command overwrites.

    python -m puzzles workspace           # copy the notebooks that are missing (never overwrites one)
    python -m puzzles workspace --update  # merge a newer course in, keeping your kernels and grading cells

`notebooks/` is the course as published (generated, checked by the suite); `my-notebooks/` is git-ignored
and holds the learner's answers. `make lab` runs the first command and opens the copy.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

from puzzles.notebooks import META_KEY, NOTEBOOK_DIR, dumps
from puzzles.solution_source import ROOT

WORKSPACE = ROOT / "my-notebooks"
BACKUP = ".backup"
# The cells that hold a learner's answer, found by their tags in both versions.
KEPT_TAGS = ("starter", "grade")
# Ids the generator gives its cells; any other id is a cell the learner added.
_GENERATED_ID = re.compile(r"^(p\d+-|progress-)")


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


def merge(course: dict, mine: dict) -> dict:
    """The course's new version with the learner's answer cells (by tag) and the cells the learner
    added (appended at the end, in their order)."""
    merged = json.loads(json.dumps(course))
    theirs = {tag: cell for cell in mine.get("cells", []) for tag in cell.get("metadata", {}).get("tags", [])
              if tag in KEPT_TAGS}
    for cell in merged["cells"]:
        for tag in cell.get("metadata", {}).get("tags", []):
            if tag in theirs:
                cell["source"] = theirs[tag].get("source", "")
    course_ids = {cell.get("id") for cell in merged["cells"]}
    added = [cell for cell in mine.get("cells", [])
             if cell.get("id") not in course_ids and not _GENERATED_ID.match(str(cell.get("id", "")))]
    if added:
        merged["cells"].append({"cell_type": "markdown", "id": "kept-cells", "metadata": {},
                                "source": "## Your own cells (kept from your previous copy)"})
        merged["cells"] += added
    return merged


def update(directory: Path = WORKSPACE) -> tuple[list[Path], Path | None]:
    """Bring every copy to the course's version, keeping the learner's answers; each replaced copy is
    first saved under `<directory>/.backup/<time>/`. Returns (updated, backup folder or None)."""
    copied, stale = create(directory)
    if not stale:
        return copied, None
    backup = directory / BACKUP / datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    backup.mkdir(parents=True, exist_ok=True)
    course = _course()
    for mine in stale:
        shutil.copy2(mine, backup / mine.name)
        mine.write_text(dumps(merge(course[mine.name], _load(mine))))
    return copied + stale, backup


def main(directory: Path | None = None, merge_newer: bool = False) -> int:
    directory = directory or WORKSPACE
    shown = directory.relative_to(ROOT) if directory.is_relative_to(ROOT) else directory
    if merge_newer:
        changed, backup = update(directory)
        for path in changed:
            print(f"updated {path.name}")
        if backup is not None:
            print(f"your previous copies are in {backup}")
        print(f"{shown}/ matches the course" if not changed else f"{shown}/: {len(changed)} notebook(s) updated")
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
