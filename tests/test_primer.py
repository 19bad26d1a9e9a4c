"""Notebook 00 (the primer) on a GPU: its demos run compiled, on tensors in the GPU's memory.
(On a CPU, tests/test_notebooks.py runs it with the other notebooks.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from puzzles.harness import on_gpu
from puzzles.notebooks import primer_notebook

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def primer_script() -> str:
    """The primer's code cells, in order, as one script (a cell's last expression is just dropped)."""
    return "\n\n".join("".join(cell["source"]) for cell in primer_notebook()["cells"] if cell["cell_type"] == "code")


def test_every_demo_makes_its_tensors_where_the_kernels_run():
    script = primer_script()
    assert 'device = "cuda" if on_gpu() else "cpu"' in script
    made = [line for line in script.splitlines() if "= torch." in line and "(" in line]
    assert made and all("device=device" in line for line in made), made


@pytest.mark.gpu
@pytest.mark.skipif(not on_gpu(), reason="needs a CUDA GPU (kernels compile there)")
def test_the_primer_runs_on_a_gpu(tmp_path):
    path = tmp_path / "primer.py"
    path.write_text(primer_script() + "\nprint('primer done', result.passed, result.first_failure.status)\n")
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "primer done False out of bounds" in proc.stdout, proc.stdout[-4000:]
    assert "pid (1, 0, 0)" in proc.stdout and "program 1 writes" in proc.stdout  # print_if, compiled
    assert "pid (0, 0, 0)" in proc.stdout  # the demos' own prints
