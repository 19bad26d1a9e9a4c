"""Notebook 00 (the primer): its demos launch where a mistake cannot hurt the notebook (a child process,
or the GPU worker where they run compiled); tests/course/test_notebooks.py also runs it with the other notebooks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from puzzles.course.notebooks import primer_notebook
from puzzles.grading import on_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def primer_script() -> str:
    """The primer's code cells, in order, as one script (a cell's last expression is just dropped)."""
    return "\n\n".join("".join(cell["source"]) for cell in primer_notebook()["cells"] if cell["cell_type"] == "code")


def test_every_demo_launches_where_a_mistake_cannot_hurt_the_notebook():
    launches = [line for line in primer_script().splitlines() if re.search(r"\w+\)?\[\(.*\)\]\(", line)]
    assert len(launches) == 5 and all(line.startswith("sandboxed(") for line in launches), launches
    assert "device=" not in primer_script()  # the tensors stay on the CPU: the launch carries them to the GPU


# demo 3 edited as a learner might: no mask, and a stride where none belongs
WILD_STORE = "tl.store(z_ptr + offsets * 100000000, offsets * 10)"


@pytest.mark.gpu
def test_the_primer_runs_with_a_wild_demo_and_the_notebook_lives_on(tmp_path):
    """As shipped, and with demo 3 writing through a wild pointer: that launch ends in a message, the
    demos after it and the grading cell still run; on a GPU the demos run compiled (print_if becomes
    a device print) and the notebook's own process never touches CUDA."""
    script = primer_script()
    assert "tl.store(z_ptr + offsets, offsets * 10, mask=offsets < N0)" in script
    script = script.replace("tl.store(z_ptr + offsets, offsets * 10, mask=offsets < N0)", WILD_STORE)
    path = tmp_path / "primer.py"
    path.write_text(script + "\nprint('primer done', result.passed, result.first_failure.status)"
                    "\nprint('cuda in the notebook', torch.cuda.is_initialized())\n")
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"})
    out = proc.stdout
    assert proc.returncode == 0, (out + proc.stderr)[-4000:]
    assert "The launch stopped" in out and "primer done False out of bounds" in out, out[-4000:]
    assert "cuda in the notebook False" in out, out[-4000:]
    if on_gpu():
        assert "pid (1, 0, 0)" in out and "program 1 writes" in out  # print_if, compiled
        assert "pid (0, 0, 0)" in out  # the demos' own prints
    else:
        assert "program 1 writes" in out and "offsets [0 1 2 3 4 5 6 7]" in out, out[-4000:]


@pytest.mark.interpreter("on a GPU the launch runs in the GPU worker, under its own limit")
def test_a_demo_stopped_at_its_time_limit_says_how_to_raise_that_limit(load_kernel, capsys):
    import torch

    from puzzles import sandboxed

    spin = load_kernel("@triton.jit\ndef spin(z_ptr, N0, B0: tl.constexpr):\n    i = 0\n    while i < N0:\n"
                       "        i = i * 2\n", "spin")
    sandboxed(spin, timeout=1)[(1,)](torch.zeros(4), 4, B0=4)
    out = capsys.readouterr().out
    # Raised where the launch is written (no test() is in sight), and no advice about bad addresses.
    assert "The launch stopped" in out and "raise the limit: sandboxed(kernel, timeout=60)[grid](...)" in out, out
    assert "test(..., timeout" not in out and "bad address" not in out, out
