"""`python -m puzzles doctor` and `python -m puzzles notebooks --check`."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import torch
from commands import run_command

from puzzles import on_gpu
from puzzles.cli import doctor

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return run_command(list(args), ROOT)


def test_doctor_passes_on_the_pinned_set():
    """On a CPU (CI) the pinned set is installed; a GPU machine keeps its own torch and triton (say
    torch 2.11 and triton 3.6 beside the pins 2.13 and 3.7.1), which the doctor names as such."""
    proc = run("doctor")
    assert proc.returncode == 0, proc.stdout
    assert "a kernel ran and was graded" in proc.stdout
    if not on_gpu():
        assert "triton 3.7.1" in proc.stdout and "(Triton's CPU interpreter" in proc.stdout
        return
    pinned = doctor.pins()
    for name in ("torch", "triton"):
        version = importlib.metadata.version(name)
        if version.split("+")[0] == pinned[name]:
            assert f"ok   {name} {version}\n" in proc.stdout
        else:
            assert f"ok   {name} {version} (this GPU machine's own; the CPU set pins {pinned[name]})" in proc.stdout
    assert f"(compiled on {torch.cuda.get_device_name()}" in proc.stdout


def test_doctor_names_the_fix_for_a_wrong_version(tmp_path):
    pins = tmp_path / "requirements.txt"
    pins.write_text("triton==9.9.9\nnumpy==1.0.0  # comment\n")
    problems = [message for ok, message in doctor.diagnose(pins, run_kernel=False, gpu=False) if not ok]
    assert any("pip install triton==9.9.9" in m for m in problems)
    assert any("pip install numpy==1.0.0" in m for m in problems)
    assert len(problems) == 2
    # On a GPU machine (Colab) its own torch/triton are used: reported, not failed.
    on_gpu = doctor.diagnose(pins, run_kernel=False, gpu=True)
    assert all(ok for ok, _ in on_gpu) and any("this GPU machine's own" in m for _, m in on_gpu)


def test_help_lists_every_command():
    proc = run("--help")
    for command in ("grade", "doctor", "notebooks", "diagrams"):
        assert command in proc.stdout
