"""Python support stated once and kept true (issue 46): pyproject.toml's requires-python, the doctor's check
(puzzles/running/compat.py) and ruff's target-version agree; the pinned set (requirements.txt, which includes
requirements-grading.txt, the Gradescope autograder's set) resolves on PyPI for every Python requires-python
admits; and the course's code stays valid Python 3.10 (no 3.11-only syntax or standard library).

The resolve is a pip dry run per Python (`--no-deps`: each pin has a wheel for that Python), in parallel,
skipped without network. pip evaluates environment
markers for the Python it runs under, whatever `--python-version` says, so each run uses that Python's own
pip where this machine has it (PATH, or pyenv's versions) and otherwise this one's, with the requirements'
own markers evaluated here for the target (puzzles/cli/requirements_file.py). torch and triton (and
triton-viz, which requires triton) are checked against PyPI's index instead: their wheels are hundreds of
MB, which pip would download to read their metadata, and torch's CPU build comes from PyTorch's own index.
"""

from __future__ import annotations

import ast
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from puzzles.cli import requirements_file
from puzzles.running import compat

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements.txt"
GRADING = ROOT / "requirements-grading.txt"
PYPI = "https://pypi.org/simple"
# Checked against the index, not resolved by pip (see the docstring).
FROM_INDEX = ("torch", "triton", "triton-viz")
# Ubuntu 22.04's glibc is 2.35 (24.04's 2.39 takes every wheel 22.04 does): the wheels an x86_64 Linux of
# that age installs, newest first.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + ["manylinux2014_x86_64"]


def requires_python() -> tuple[tuple[int, int], tuple[int, int]]:
    text = re.search(r'^requires-python\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert text, "pyproject.toml states requires-python"
    low = re.search(r">=\s*3\.(\d+)", text.group(1))
    high = re.search(r"<\s*3\.(\d+)", text.group(1))
    assert low and high, f"requires-python {text.group(1)!r} needs both bounds: the pinned set is tested for each"
    return (3, int(low.group(1))), (3, int(high.group(1)))


def supported() -> list[tuple[int, int]]:
    (_, low), (_, high) = requires_python()
    return [(3, minor) for minor in range(low, high)]


def test_requires_python_the_doctor_and_ruff_agree():
    oldest, below = requires_python()
    assert (oldest, below) == (compat.PYTHON_OLDEST, compat.PYTHON_BELOW)
    assert compat.PYTHON_SUPPORTED == f"3.{oldest[1]} to 3.{below[1] - 1}"
    target = re.search(r'^target-version\s*=\s*"py3(\d+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert target and int(target.group(1)) == oldest[1], "ruff's target-version is the oldest supported Python"
    assert compat.python_problem((3, 9, 18)).startswith("Python 3.9.18 is not supported: the course needs Python")
    assert compat.python_problem(below) is not None and compat.python_problem(oldest + (0,)) is None


def test_each_python_gets_one_pin_per_package_and_3_10_its_own():
    grading = requirements_file.pins(GRADING, (3, 10))
    assert set(grading) == {"torch", "triton", "numpy", "jaxtyping"}  # what grading imports: nothing more
    for version in supported():
        everything = requirements_file.read(REQUIREMENTS, version)
        names = [r.name for r in everything if r.name]
        assert len(names) == len(set(names)), f"Python {version}: a package pinned twice"
        assert requirements_file.pins(GRADING, version).items() <= requirements_file.pins(REQUIREMENTS, version).items()
        assert not {"jupyterlab", "pytest", "ruff", "matplotlib"} & set(requirements_file.pins(GRADING, version))
    assert requirements_file.pins(REQUIREMENTS, (3, 10))["numpy"] == "2.2.6"
    assert requirements_file.pins(REQUIREMENTS, (3, 12))["numpy"] == "2.4.6"
    with pytest.raises(ValueError, match="unsupported marker"):
        requirements_file.marker_holds('sys_platform == "linux"', (3, 11))


def _online() -> bool:
    try:
        with urllib.request.urlopen(f"{PYPI}/pip/", timeout=5):
            return True
    except OSError:
        return False


def _interpreter(version: tuple[int, int]) -> str | None:
    """This machine's own Python of that version (PATH, then pyenv's), or None."""
    name = f"python{version[0]}.{version[1]}"
    found = shutil.which(name)
    if found and "pyenv/shims" not in found:  # a shim that may answer "command not found"
        return found
    matches = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version[0]}.{version[1]}.*/bin/{name}")))
    return matches[-1] if matches else None


def _index_problem(name: str, pinned: str, version: tuple[int, int]) -> str | None:
    """Why PyPI has no wheel of `name==pinned` for this Python on x86_64 Linux (None when it has one)."""
    request = urllib.request.Request(f"{PYPI}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        files = json.load(answer)["files"]
    tag = f"cp{version[0]}{version[1]}"
    for file in files:
        parts = file["filename"].removesuffix(".whl").split("-")
        if not file["filename"].endswith(".whl") or parts[1] != pinned:
            continue
        python, platform = parts[-3], parts[-1]
        if python in (tag, "py3") and ("manylinux" in platform and "x86_64" in platform or platform == "any"):
            return None
    return f"{name}=={pinned} has no wheel for Python {version[0]}.{version[1]} on x86_64 Linux"


def _resolve(version: tuple[int, int], folder: Path, requirements: Path = REQUIREMENTS) -> str | None:
    """A pip dry run of the requirements for this Python (less FROM_INDEX and `-e .`); None when it resolves."""
    lines = [r.line for r in requirements_file.read(requirements, version) if r.name and r.name not in FROM_INDEX]
    wanted = folder / f"{requirements.stem}-{version[1]}.txt"
    wanted.write_text("\n".join(lines) + "\n")
    own = _interpreter(version)
    python = [own] if own else [sys.executable]
    target = [] if own else ["--python-version", f"{version[0]}.{version[1]}"]
    # Each pin has a wheel for this Python. The dependencies they bring are not pinned (pip picks what fits):
    # resolving JupyterLab's and pytest's whole tree for five Pythons took a minute of CPU here.
    command = [*python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--only-binary=:all:",
               "--target", str(folder / f"target-{version[1]}-{requirements.stem}"), *target, "--no-deps",
               *[arg for platform in PLATFORMS for arg in ("--platform", platform)], "-r", str(wanted)]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode == 0:
        return None
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return f"Python {version[0]}.{version[1]} ({'its own pip' if own else 'emulated'}): " + " ".join(errors[-2:])


def test_the_pinned_set_resolves_for_every_supported_python():
    if not _online():
        pytest.skip("PyPI cannot be reached: the pinned set is resolved only where it can")
    project = re.search(r"^dependencies\s*=\s*\[([^\]]*)\]", (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    for version in supported():  # `-e .` adds nothing the pins do not fix (pip would build the course to see)
        pinned = requirements_file.pins(REQUIREMENTS, version)
        for dependency in re.findall(r'"([A-Za-z0-9_.\-]+)', project.group(1)):
            assert dependency.lower() in pinned, f"{dependency} (pyproject.toml) is not pinned for {version}"
    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(4) as pool:
        index = [pool.submit(_index_problem, name, requirements_file.pins(REQUIREMENTS, v)[name], v)
                 for v in supported() for name in FROM_INDEX]
        resolved = [pool.submit(_resolve, v, Path(folder)) for v in supported()]
        problems = [f.result() for f in index + resolved]
    assert not [p for p in problems if p], "\n".join(p for p in problems if p)


# -- the code stays Python 3.10 --------------------------------------------------------------------

# What 3.11 and later added that a module may not use unguarded (an import inside a try that catches
# ImportError is the guard: puzzles/course/notebooks.py reads pyproject.toml without tomllib on 3.10).
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_NAMES = {("typing", "Self"), ("typing", "LiteralString"), ("typing", "Never"), ("typing", "assert_never"),
               ("typing", "reveal_type"), ("typing", "Required"), ("typing", "NotRequired"), ("typing", "TypeVarTuple"),
               ("typing", "Unpack"), ("typing", "override"), ("enum", "StrEnum"), ("datetime", "UTC"),
               ("asyncio", "TaskGroup"), ("asyncio", "timeout"), ("contextlib", "chdir")}

NEWER_FLAGS = {"-P"}  # no unsafe path: 3.11+; python 3.10 stops with "Unknown option: -P"


def _sources() -> list[Path]:
    return sorted(p for folder in ("puzzles", "solutions", "scripts", "tests", "benchmarks")
                  for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _guarded(tree: ast.Module) -> set[int]:
    """Line numbers of imports inside a `try` that catches ImportError / ModuleNotFoundError."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            lines |= {sub.lineno for stmt in node.body for sub in ast.walk(stmt) if isinstance(sub, ast.stmt)}
    return lines


def test_the_code_is_python_3_10():
    problems = []
    for path in _sources():
        text = path.read_text()
        try:
            tree = ast.parse(text, str(path), feature_version=(3, 10))  # 3.11+ syntax: except*, PEP 695, ...
        except SyntaxError as err:
            problems.append(f"{path.relative_to(ROOT)}:{err.lineno}: not Python 3.10 syntax ({err.msg})")
            continue
        guarded = _guarded(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in guarded:
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                names = {(node.module, a.name) for a in node.names} if isinstance(node, ast.ImportFrom) else set()
                bad = [m for m in modules if m in NEWER_MODULES] + [f"{m}.{n}" for m, n in names & NEWER_NAMES]
                problems += [f"{path.relative_to(ROOT)}:{node.lineno}: {b} is Python 3.11+" for b in bad]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    (node.value.id, node.attr) in NEWER_NAMES:
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr} is Python 3.11+")
            elif isinstance(node, ast.List) and node.elts and ast.unparse(node.elts[0]) == "sys.executable" and \
                    any(isinstance(e, ast.Constant) and e.value in NEWER_FLAGS for e in node.elts) and \
                    "sys.version_info >= (3, 11)" not in text:  # a Python started with a flag 3.10 refuses
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: a 3.11+ flag of python "
                                "(-P: launcher.worker_command does it on 3.10 too)")
    assert not problems, "\n".join(problems)


def test_a_real_python_3_10_compiles_every_module():
    python = _interpreter((3, 10))
    if python is None:
        pytest.skip("no Python 3.10 here (PATH or pyenv): test_the_code_is_python_3_10 checks the syntax instead")
    program = ("import sys\nbad = []\nfor path in sys.argv[1:]:\n    try:\n"
               "        compile(open(path, encoding='utf-8').read(), path, 'exec')\n"
               "    except SyntaxError as err:\n        bad.append(f'{path}:{err.lineno}: {err.msg}')\n"
               "print('\\n'.join(bad))\nsys.exit(1 if bad else 0)\n")
    done = subprocess.run([python, "-c", program, *map(str, _sources())], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
