"""The learner's work is never lost: `my-notebooks/` is made once and never overwritten, a newer course
merges in keeping the answers, and the maintainers' commands (`make notebooks`, `make diagrams`, the
suite's checks) neither touch it nor are disturbed by it; an answer typed into the course's own
notebook is refused, not overwritten."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_checkout, pythonpath_without_checkout

from puzzles.course import catalog, notebooks
from puzzles.course.solution_source import reference_source
from puzzles.learner import workspace

ROOT = Path(__file__).resolve().parents[2]
P1 = catalog.get(1)
NAME = f"{P1.id}.ipynb"


def _answer(path: Path, source: str) -> None:
    nb = json.loads(path.read_text())
    (cell,) = [c for c in nb["cells"] if "starter" in c.get("metadata", {}).get("tags", [])]
    cell["source"] = source
    path.write_text(json.dumps(nb, indent=1))


def _kernel(path: Path) -> str:
    nb = json.loads(path.read_text())
    (cell,) = [c for c in nb["cells"] if "starter" in c.get("metadata", {}).get("tags", [])]
    return "".join(cell["source"])



def _publish_newer_course(tmp_path: Path, monkeypatch) -> None:
    """A newer course for the workspace to update from: puzzle 1's statement changed (and so its digest)."""
    course = tmp_path / "course"
    shutil.copytree(notebooks.NOTEBOOK_DIR, course)
    new = json.loads((course / NAME).read_text())
    new["cells"][0]["source"] = ["# Puzzle 1, revised"]
    new["metadata"][notebooks.META_KEY]["digest"] = notebooks.content_digest(new)
    (course / NAME).write_text(notebooks.dumps(new))
    monkeypatch.setattr(workspace, "NOTEBOOK_DIR", course)

def test_workspace_copies_missing_notebooks_and_never_overwrites(tmp_path):
    copied, stale = workspace.create(tmp_path)
    assert {p.name for p in copied} == {p.name for p in notebooks.NOTEBOOK_DIR.glob("*.ipynb")} and stale == []
    _answer(tmp_path / NAME, "# my answer\n")
    (tmp_path / "02_constant_add_block.ipynb").unlink()
    copied, stale = workspace.create(tmp_path)
    assert [p.name for p in copied] == ["02_constant_add_block.ipynb"] and stale == []
    assert _kernel(tmp_path / NAME) == "# my answer\n"


def test_update_merges_a_newer_course_keeping_answers_and_own_cells(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    workspace.create(mine)
    _answer(mine / NAME, "# my answer\n")
    nb = json.loads((mine / NAME).read_text())
    nb["cells"].append({"cell_type": "code", "id": "a1b2c3d4", "metadata": {}, "source": "print('mine')",
                        "outputs": [], "execution_count": None})
    (mine / NAME).write_text(json.dumps(nb))
    _publish_newer_course(tmp_path, monkeypatch)

    assert [p.name for p in workspace.create(mine)[1]] == [NAME]  # told, not touched
    assert _kernel(mine / NAME) == "# my answer\n"
    changed, backup = workspace.update(mine)
    assert [p.name for p in changed] == [NAME]
    merged = json.loads((mine / NAME).read_text())
    assert "".join(merged["cells"][0]["source"]) == "# Puzzle 1, revised"
    assert _kernel(mine / NAME) == "# my answer\n"
    assert merged["cells"][-1]["source"] == "print('mine')"
    assert _kernel(backup / NAME) == "# my answer\n" and backup.parent.name == workspace.BACKUP
    assert workspace.update(mine) == ([], None)  # now up to date


def test_update_keeps_a_helper_above_the_kernel_and_lists_the_course_cells_it_replaced(tmp_path, monkeypatch,
                                                                                      capsys):
    mine = tmp_path / "mine"
    workspace.create(mine)
    _answer(mine / NAME, "@triton.jit\ndef add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n    helper()\n")
    nb = json.loads((mine / NAME).read_text())
    ids = [c["id"] for c in nb["cells"]]
    helper = {"cell_type": "code", "id": "c0ffee00", "metadata": {}, "source": "def helper():\n    pass",
              "outputs": [], "execution_count": None}
    nb["cells"].insert(ids.index(f"p{P1.number}-kernel"), helper)  # above the kernel, where Run All needs it
    (hints,) = [c for c in nb["cells"] if c["id"] == f"p{P1.number}-hints"]
    hints["source"] = "### Hints\n\nmy notes on the hints"  # an edit to a course cell
    (mine / NAME).write_text(json.dumps(nb))
    _publish_newer_course(tmp_path, monkeypatch)

    assert workspace.main(mine, merge_newer=True) == 0
    out = capsys.readouterr().out
    merged = json.loads((mine / NAME).read_text())
    order = [c["id"] for c in merged["cells"]]
    assert order.index("c0ffee00") == order.index(f"p{P1.number}-kernel") - 1, order  # still right above
    assert order.count("c0ffee00") == 1 and "kept-cells" not in order
    (backup,) = (mine / workspace.BACKUP).iterdir()
    # The hints cell got the course's text back; the learner is told which cell and where their text is.
    (line,) = [ln for ln in out.splitlines() if "replaced your edit of the course's" in ln]
    assert f"p{P1.number}-hints" in line and "my notes" not in line and str(backup / NAME) in line
    assert "my notes on the hints" in (backup / NAME).read_text()
    # The title changed in the course, not by the learner: not listed as the learner's edit.
    assert f"p{P1.number}-title" not in out
    assert "helper()" in _kernel(mine / NAME)


def test_update_of_a_copy_without_per_cell_records_lists_every_differing_course_cell(tmp_path, monkeypatch,
                                                                                     capsys):
    # A copy made by an older course (no per-cell digests): an edit cannot be told from a course change,
    # so every course cell that differs is listed, saying so.
    mine = tmp_path / "mine"
    workspace.create(mine)
    nb = json.loads((mine / NAME).read_text())
    del nb["metadata"][notebooks.META_KEY]["cells"]
    nb["metadata"][notebooks.META_KEY]["digest"] = "older"
    (hints,) = [c for c in nb["cells"] if c["id"] == f"p{P1.number}-hints"]
    hints["source"] = "### Hints\n\nmy notes"
    (mine / NAME).write_text(json.dumps(nb))
    assert workspace.main(mine, merge_newer=True) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if "replaced" in ln]
    assert f"p{P1.number}-hints" in line and "predates per-cell records" in line and ".backup" in line



@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs make and a git checkout")
def test_maintainer_commands_leave_the_learner_answer_intact(tmp_path):
    repo = tmp_path / "course"
    copy_checkout(repo)
    env = {**os.environ, "PYTHONPATH": pythonpath_without_checkout()}  # the copy's own `puzzles`
    # This interpreter's environment, marked as set up (-o): the copy must not install anything.
    venv = Path(sys.prefix)
    make = ["make", "--no-print-directory", "-o", str(venv / ".installed"), f"VENV={venv}", f"PY={sys.executable}"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)

    # `make lab`, with a stand-in for JupyterLab that records its arguments.
    fake = tmp_path / "fake-venv"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "jupyter").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/jupyter-args\n')
    (fake / "bin" / "jupyter").chmod(0o755)
    proc = run("make", "--no-print-directory", "-o", str(fake / ".installed"), f"VENV={fake}", f"PY={sys.executable}",
               "lab", "ARGS=--port 8890 --no-browser")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = (tmp_path / "jupyter-args").read_text().split()
    assert args[0] == "lab" and args[-1] == "my-notebooks/00_primer.ipynb" and "--port" in args
    assert ("--allow-root" in args) == (os.geteuid() == 0)  # as root (Docker, cloud notebooks) it must start
    learner = repo / "my-notebooks" / NAME
    _answer(learner, reference_source(P1))
    proc = run(*make, "notebooks")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _kernel(learner) == reference_source(P1)
    # `make diagrams` is `puzzles diagrams`, which writes assets/ only (tests/course/test_diagrams.py draws them all),
    # then `puzzles notebooks`, run above: read from its recipe, not drawn again here (a third of this test).
    dry = run(*make, "-n", "diagrams")
    assert [line.split(" -m ")[-1] for line in dry.stdout.splitlines()] == ["puzzles diagrams", "puzzles notebooks"], \
        dry.stdout
    # The course's notebooks still match the catalog beside a learner's workspace (what `make test` checks).
    proc = run(sys.executable, "-m", "puzzles", "notebooks", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ruff = shutil.which("ruff") or str(venv / "bin" / "ruff")
    if Path(ruff).exists():
        proc = run(ruff, "check", "--no-cache", "--output-format", "concise", ".")
        assert "my-notebooks" not in proc.stdout
    # `make grade` grades the learner's copy.
    proc = run(*make, "grade")
    assert f"✓   1 {P1.title}" in proc.stdout, proc.stdout + proc.stderr

    # An answer typed into the course's own notebook: regenerating refuses and names it.
    course = repo / "notebooks" / NAME
    _answer(course, reference_source(P1))
    proc = run(*make, "notebooks")
    assert proc.returncode != 0 and f"notebooks/{NAME}" in proc.stderr and "--force" in proc.stderr
    assert _kernel(course) == reference_source(P1) and _kernel(learner) == reference_source(P1)
    proc = run(sys.executable, "-m", "puzzles", "notebooks", "--force")
    assert proc.returncode == 0 and _kernel(course) != reference_source(P1)


def test_regenerating_refuses_an_edited_notebook_unless_forced(tmp_path):
    written, refused = notebooks.write(tmp_path)
    assert refused == [] and len(written) == len(notebooks.all_notebooks())
    # Running a notebook (outputs only) does not count as an edit; typing into a cell does.
    ran = json.loads((tmp_path / NAME).read_text())
    ran["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi"}]
    (tmp_path / NAME).write_text(json.dumps(ran))
    assert not notebooks.edited(tmp_path / NAME)
    _answer(tmp_path / NAME, "# my answer\n")
    assert notebooks.edited(tmp_path / NAME)
    written, refused = notebooks.write(tmp_path)
    assert refused == [tmp_path / NAME] and written == [] and _kernel(tmp_path / NAME) == "# my answer\n"
    written, refused = notebooks.write(tmp_path, force=True)
    assert written == [tmp_path / NAME] and refused == [] and notebooks.drift(tmp_path) == []


def test_update_recognizes_the_unfolded_set_up_cell_of_an_older_copy(tmp_path, capsys):
    # A copy made before the set-up cell was folded away: its set-up cell has no #@title line and no metadata.
    # The update knows it by its id and gives it the course's folded cell, without calling it the learner's edit.
    mine = tmp_path / "mine"
    workspace.create(mine)
    nb = json.loads((mine / NAME).read_text())
    (setup,) = [c for c in nb["cells"] if c["id"] == f"p{P1.number}-setup"]
    assert setup["metadata"] == {"cellView": "form", "jupyter": {"source_hidden": True}}
    setup["source"] = notebooks.SETUP_SOURCE.split("\n", 1)[1]  # without the #@title line
    setup["metadata"] = {}
    nb["metadata"][notebooks.META_KEY]["cells"][setup["id"]] = notebooks.cell_digest(setup)
    nb["metadata"][notebooks.META_KEY]["digest"] = "older"
    (mine / NAME).write_text(json.dumps(nb))
    assert workspace.main(mine, merge_newer=True) == 0
    assert "replaced" not in capsys.readouterr().out
    merged = json.loads((mine / NAME).read_text())
    setups = [c for c in merged["cells"] if "Set-up" in "".join(c["source"])]
    assert [c["id"] for c in setups] == [f"p{P1.number}-setup"]
    assert "".join(setups[0]["source"]).startswith(notebooks.SETUP_TITLE)
    assert setups[0]["metadata"]["jupyter"] == {"source_hidden": True}
