"""Shared fixtures. `import puzzles` first: it turns on Triton's interpreter when there is no GPU."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import puzzles  # noqa: F401  - must precede any triton import

TESTS = Path(__file__).parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))


def pythonpath_without_checkout() -> str:
    """PYTHONPATH less this checkout: a test that runs a copy of the course must import the copy's own
    `puzzles`, yet keep packages that this environment gets through PYTHONPATH (as on a GPU machine
    whose notebook packages are carried in)."""
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != ROOT.resolve()]
    return os.pathsep.join(kept)


def load_kernel_source(source: str, name: str, tmp_path: Path):
    """Import a kernel from source text (Triton reads a kernel's source from its file)."""
    path = tmp_path / f"kernel_{uuid.uuid4().hex}.py"
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@pytest.fixture
def load_kernel(tmp_path):
    return lambda source, name: load_kernel_source(source, name, tmp_path)


def copy_checkout(dest: Path) -> None:
    """What a fresh clone holds: the tracked files (and new ones not ignored), nothing built."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


# -- how `make test` spreads the suite over two cores (pytest -n 2 --dist loadfile --no-loadscope-reorder) --------
# Each file runs whole on one worker (its module fixtures run once: the executed notebooks, the wheel, ...). The
# files that take longest start first, longest first, and the short ones fill the gaps at the end: a long file
# started last runs alone while the other worker idles (the README's commands did, 52 s). Only the suite's speed
# depends on this list; --no-loadscope-reorder keeps it (pytest-xdist otherwise puts the files of most tests
# first). (`--dist loadgroup` would spread single tests, but pytest-xdist 3.8 cannot mark a group
# under pytest 9: it renames an attribute pytest no longer reads.)
LONGEST_FIRST = ["test_notebooks.py", "test_grade_class.py", "test_judging_holes_split_k.py", "test_judging_holes.py",
                 "test_gptq.py", "test_readme.py", "test_workspace.py", "test_handwritten_kernels.py",
                 "test_grade.py", "test_harness.py", "test_colab.py", "test_browser.py"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order
