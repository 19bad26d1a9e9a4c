"""`make setup`'s installer: requirements.txt into the running Python, with torch's CPU build on a
machine without an NVIDIA GPU.

    python scripts/setup.py          # install
    python scripts/setup.py --plan   # print what it would run, run nothing
    python scripts/setup.py --check-python   # is this Python supported (pyproject.toml's requires-python)?

Why: `torch==X` from the default index is the CUDA build on Linux (about 16 NVIDIA packages,
several GB) even on a laptop with no GPU. PyTorch's own CPU index serves the same version without
them (`2.13.0+cpu` satisfies `torch==2.13.0`), so torch is installed from there first and the
requirements then find it satisfied. Where that index is unreachable (a proxy, a mirror), the
default index is used.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def has_nvidia_gpu() -> bool:
    """An NVIDIA driver is installed (its tool or its kernel module), so the CUDA build is wanted."""
    return shutil.which("nvidia-smi") is not None or Path("/proc/driver/nvidia").exists()


def reachable(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url + "/torch/", timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def torch_pin(requirements: Path) -> str:
    """`torch==X` from the requirements file or a file it includes (`-r requirements-grading.txt`)."""
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if re.match(r"^torch\s*==", line):
            return line.split(";", 1)[0].strip().replace(" ", "")
        if line.startswith("-r "):
            try:
                return torch_pin(requirements.parent / line[3:].strip())
            except SystemExit:
                continue
    raise SystemExit(f"no `torch==` pin in {requirements}: keep torch pinned")


def python_problem(version: tuple[int, int], pyproject: Path = ROOT / "pyproject.toml") -> str | None:
    """One line when this Python is outside pyproject.toml's requires-python (what is supported, what to
    install), else None: pip would otherwise fail later on the first pin without a wheel for it."""
    found = re.search(r'^requires-python\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
    if found is None:
        return None
    oldest = re.search(r">=\s*3\.(\d+)", found.group(1))
    below = re.search(r"<\s*3\.(\d+)", found.group(1))
    low, high = int(oldest.group(1)) if oldest else 0, int(below.group(1)) if below else 99
    if low <= version[1] < high and version[0] == 3:
        return None
    supported = f"3.{low} to 3.{high - 1}" if below else f"3.{low} or newer"
    return (f"Python {version[0]}.{version[1]} is not supported: the course needs Python {supported}. Install one "
            "(Ubuntu 22.04 and later: `sudo apt install python3 python3-venv`; elsewhere `uv python install 3.12` "
            "or pyenv), remove .venv, and run `make setup PYTHON=python3.12` (that Python's name)")


def plan(python: str, requirements: Path, gpu: bool, cpu_index_up: bool,
         index: str = CPU_INDEX) -> tuple[list[list[str]], str]:
    """The pip commands to run, and one line saying why."""
    pip = [python, "-m", "pip", "install", "--quiet"]
    steps = [[*pip, "--upgrade", "pip"]]
    if gpu:
        why = "an NVIDIA GPU is present: torch from the default index (its CUDA build)"
    elif cpu_index_up:
        why = f"no NVIDIA GPU: torch's CPU build from {index}"
        steps.append([*pip, torch_pin(requirements), "--index-url", index])
    else:
        why = f"no NVIDIA GPU, but {index} is unreachable: torch from the default index (the larger CUDA build)"
    steps.append([*pip, "-r", str(requirements)])
    return steps, why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--check-python", action="store_true", help="only say whether this Python is supported")
    args = parser.parse_args(argv)
    problem = python_problem(sys.version_info[:2])
    if problem or args.check_python:
        print(f"setup: {problem}" if problem else f"setup: Python {sys.version.split()[0]} is supported",
              file=sys.stderr if problem else sys.stdout)
        return 1 if problem else 0
    gpu = has_nvidia_gpu()
    # Probe only when it matters: with a GPU the default index is the right one.
    index = os.environ.get("TRITON_PUZZLES_CPU_INDEX", CPU_INDEX)  # a mirror of PyTorch's CPU index
    up = False if gpu else reachable(index)
    steps, why = plan(sys.executable, args.requirements, gpu, up, index)
    print(f"setup: {why}")
    for step in steps:
        print("  " + " ".join(step))
        if args.plan:
            continue
        if "--index-url" in step:
            # The CPU build is an optimisation: if that index fails midway, the requirements still install.
            if subprocess.run(step, cwd=ROOT).returncode != 0:
                print(f"setup: warning: installing torch from {index} failed; using the default index")
            continue
        subprocess.run(step, check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
