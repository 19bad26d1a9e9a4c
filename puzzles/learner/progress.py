"""`progress()`: a notebook's scoreboard over the puzzle notebooks of a folder, and the table it prints
(`python -m puzzles grade` prints the same one). The files are graded by puzzles/submissions/grade.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from puzzles.course import catalog
from puzzles.grading.result import brief_reason
from puzzles.learner.workspace import default_folder
from puzzles.submissions.grade import Grade, grade


def scoreboard(grades: list[Grade]) -> str:
    width = max(len(g.puzzle.title) for g in grades) + 4
    lines = [f"{'':3}{'puzzle':{width}}{'status':16}details"]
    for g in grades:
        mark = {"passed": "✓", "failed": "✗", "not attempted": "·"}[g.status]
        detail = brief_reason(g.reason) if g.reason else f"{g.seconds:.2f} s"
        lines.append(f"{mark:3}{f'{g.puzzle.number:2d} {g.puzzle.title}':{width}}{g.status:16}{detail}")
    passed = sum(g.status == "passed" for g in grades)
    attempted = sum(g.status != "not attempted" for g in grades)
    lines.append(f"\n{passed} passed, {attempted - passed} failed, {len(grades) - attempted} not attempted")
    return "\n".join(lines)


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
            detail = escape(brief_reason(g.reason)) if g.reason else f"{g.seconds:.2f} s"
            whole = f" title='{escape(g.reason.strip(), quote=True)}'" if g.reason else ""  # all of it on hover
            rows.append(f"<tr><td>{mark}</td><td style='text-align:left'>{name}</td><td>{g.status}</td>"
                        f"<td style='text-align:left'{whole}>{detail}</td></tr>")
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
