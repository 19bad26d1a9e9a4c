"""`python -m puzzles grade`: scoreboard, JSON records, exit codes; the graded files are never modified."""

from __future__ import annotations

import hashlib
import inspect
import json
import subprocess
from pathlib import Path

import nbformat
import p02_constant_add_block as p02
import p05_fused_outer_multiply as p05
from commands import run_command

from puzzles.course import catalog
from puzzles.course.solution_source import reference_source

ROOT = Path(__file__).resolve().parents[2]
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"


def run_grade(*args: str) -> subprocess.CompletedProcess:
    return run_command(["grade", *args], ROOT)


def records(proc: subprocess.CompletedProcess) -> dict[int, dict]:
    return {r["puzzle"]: r for r in map(json.loads, proc.stdout.splitlines())}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_file_of_correct_kernels_passes(tmp_path):
    chosen = [catalog.get(n) for n in (1, 2, 4, 7)]
    path = tmp_path / "answers.py"
    path.write_text(HEADER + "\n\n".join(reference_source(p) for p in chosen))
    before = digest(path)
    proc = run_grade(str(path), "--json", *sum((["--puzzle", str(p.number)] for p in chosen), []))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {n: r["status"] for n, r in records(proc).items()} == {1: "passed", 2: "passed", 4: "passed", 7: "passed"}
    assert digest(path) == before


def test_file_of_wrong_kernels_fails_with_reasons(tmp_path):
    # Two wrong kernels under the names the grader looks for.
    kernels = [(p02.add_mask2_kernel_no_mask, "add_mask2_kernel"), (p05.mul_relu_block_kernel_no_relu,
                                                                      "mul_relu_block_kernel")]
    source = "import triton\nimport triton.language as tl\n\n\n" + "\n\n".join(
        inspect.getsource(kernel.fn).replace(f"def {kernel.fn.__name__}(", f"def {name}(") for kernel, name in kernels)
    path = tmp_path / "wrong.py"
    path.write_text(source)
    proc = run_grade(str(path), "--json")
    assert proc.returncode == 1
    got = records(proc)
    assert got[2]["status"] == "failed" and "out of bounds" in got[2]["reason"]
    assert got[5]["status"] == "failed" and "wrong" in got[5]["reason"]
    assert got[1]["status"] == "not attempted"
    text = run_grade(str(path), "--puzzle", "2", "--puzzle", "5").stdout  # the scoreboard: the two failures again
    assert "0 passed, 2 failed" in text and "Constant add, in blocks" in text, text


def test_notebook_with_a_solution_passes_and_is_not_modified(tmp_path):
    p = catalog.get(3)
    nb = nbformat.read(ROOT / "notebooks" / f"{p.id}.ipynb", as_version=4)
    for cell in nb.cells:
        if "starter" in cell.metadata.get("tags", []):
            cell.source = reference_source(p)
    path = tmp_path / f"{p.id}.ipynb"
    nbformat.write(nb, path)
    before = digest(path)
    proc = run_grade(str(path), "--puzzle", "3", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert records(proc)[3]["status"] == "passed" and "[cell" in records(proc)[3]["source"]
    assert digest(path) == before
    # The other puzzles: their notebooks are not among the files, and the scoreboard says so.
    others = records(run_grade(str(path), "--puzzle", "4", "--json"))[4]
    assert others["status"] == "not attempted" and "(no 04_outer_vector_add_block.ipynb here)" in others["reason"]


def test_shipped_notebooks_are_all_not_attempted():
    proc = run_grade(str(ROOT / "notebooks"), "--json")
    assert proc.returncode == 1
    statuses = {r["status"] for r in records(proc).values()}
    assert statuses == {"not attempted"}
    assert len(records(proc)) == len(catalog.PUZZLES)


def test_missing_path_is_a_clear_error():
    proc = run_grade("no/such/file.ipynb")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_notebooks_with_every_reference_all_pass(tmp_path):
    for p in catalog.all_puzzles():
        nb = nbformat.read(ROOT / "notebooks" / f"{p.id}.ipynb", as_version=4)
        for cell in nb.cells:
            if "starter" in cell.metadata.get("tags", []):
                cell.source = reference_source(p)
        nbformat.write(nb, tmp_path / f"{p.id}.ipynb")
    proc = run_grade(str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {r["status"] for r in records(proc).values()} == {"passed"}
    assert len(records(proc)) == len(catalog.PUZZLES)
