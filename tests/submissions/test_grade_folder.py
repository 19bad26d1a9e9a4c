"""Grading a folder: a kernel defined twice names the file graded and warns about the other; a cell
that does not parse is a failure with its file and line; the progress board links each puzzle."""

from __future__ import annotations

import os

import nbformat

from puzzles.cli.grade import expand
from puzzles.course import catalog, notebooks
from puzzles.course.solution_source import reference_source, starter_source
from puzzles.learner import progress
from puzzles.submissions import grade

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"
P1 = catalog.get(1)


def test_a_kernel_defined_twice_names_the_graded_file(tmp_path, capsys):
    (tmp_path / "a.py").write_text(HEADER + reference_source(P1))
    (tmp_path / "b.py").write_text(HEADER + starter_source(P1))
    (g,) = grade.grade(expand([str(tmp_path)]), [P1])
    err = capsys.readouterr().err
    # The attempt wins over a later starter, and the warning (stderr) names both files.
    assert g.status == "passed" and g.source.endswith("a.py")
    assert "warning: add_kernel is defined in 2 places" in err and "a.py" in err and "b.py" in err


def test_a_syntax_error_is_a_failure_with_file_and_line(tmp_path, capsys):
    broken = reference_source(P1).replace("tl.arange(0, B0)", "tl.arange(0, B0", 1)
    (tmp_path / "a.py").write_text(HEADER + broken)
    (g,) = grade.grade([tmp_path / "a.py"], [P1])
    assert g.status == "failed" and "SyntaxError" in g.reason and "a.py: line" in g.reason
    assert "SyntaxError" in capsys.readouterr().err
    # Still a failure when another file holds the untouched starter.
    (tmp_path / "b.py").write_text(HEADER + starter_source(P1))
    (g,) = grade.grade([tmp_path / "a.py", tmp_path / "b.py"], [P1])
    assert g.status == "failed" and "SyntaxError" in g.reason


def test_progress_links_each_puzzle_notebook(tmp_path, monkeypatch):
    nb = nbformat.reads(notebooks.dumps(notebooks.puzzle_notebook(P1)), as_version=4)
    for cell in nb.cells:
        if "starter" in cell.metadata.get("tags", []):
            cell.source = reference_source(P1)
    nbformat.write(nb, tmp_path / f"{P1.id}.ipynb")
    monkeypatch.chdir(tmp_path)
    board = progress.progress()
    html = board._repr_html_()
    assert f'href="{P1.id}.ipynb"' in html and "1 of" in html
    assert f"✓   1 {P1.title}" in str(board)
    assert os.path.samefile(board.folder, tmp_path)
