"""scripts/setup.py (`make setup`): torch's CPU build where there is no NVIDIA GPU, the default index
where there is one or where PyTorch's CPU index cannot be reached; `--plan` runs nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("course_setup", ROOT / "scripts" / "setup.py")
setup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(setup)
REQUIREMENTS = ROOT / "requirements.txt"


def _torch_steps(steps: list[list[str]]) -> list[list[str]]:
    return [s for s in steps if any(a.startswith("torch==") for a in s)]


def test_no_gpu_installs_the_cpu_build_first():
    steps, why = setup.plan("py", REQUIREMENTS, gpu=False, cpu_index_up=True)
    (torch,) = _torch_steps(steps)
    assert torch[-2:] == ["--index-url", setup.CPU_INDEX] and "CPU build" in why
    # torch comes before the requirements, so they find it satisfied and fetch no CUDA build.
    assert steps.index(torch) < steps.index(steps[-1]) and steps[-1][-2:] == ["-r", str(REQUIREMENTS)]


def test_unreachable_cpu_index_falls_back_to_the_default_index():
    steps, why = setup.plan("py", REQUIREMENTS, gpu=False, cpu_index_up=False)
    assert _torch_steps(steps) == [] and "unreachable" in why
    assert not any("--index-url" in s for s in steps)


def test_gpu_uses_the_default_index():
    steps, why = setup.plan("py", REQUIREMENTS, gpu=True, cpu_index_up=True)
    assert _torch_steps(steps) == [] and "NVIDIA GPU is present" in why


def test_the_pin_is_read_from_requirements():
    assert setup.torch_pin(REQUIREMENTS).startswith("torch==")


def test_plan_prints_and_runs_nothing():
    # An address nothing answers: the probe fails at once and the plan says so.
    env = {"PATH": "/usr/bin:/bin", "TRITON_PUZZLES_CPU_INDEX": "http://127.0.0.1:9"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "setup.py"), "--plan"], capture_output=True,
                          text=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("setup: ") and "-r " in proc.stdout
