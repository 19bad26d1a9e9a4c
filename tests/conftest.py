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

# Reading a notebook (nbformat) imports jsonschema, which imports rfc3987_syntax where it is installed (JupyterLab's
# event schemas bring it), and that builds some thirty parsers at import: about 3 s of CPU in each process that
# reads a notebook. It serves only the "iri" format, which no notebook schema uses; as absent, it is skipped.
SKIPPED_IMPORTS = {"rfc3987_syntax": None}
for name, stand_in in SKIPPED_IMPORTS.items():
    sys.modules.setdefault(name, stand_in)

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# The suite is laid out like the package (tests/running/, tests/grading/, ...); the shared helpers are in
# tests/support/ and the kernel collections in tests/kernels/. Every folder is on the path, so that a test imports
# a helper, a collection or another test module's kernels by its name, wherever it lives.
SUPPORT, KERNELS = TESTS / "support", TESTS / "kernels"
TEST_FOLDERS = sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in ("__pycache__", "browser"))
for folder in [TESTS, *TEST_FOLDERS]:
    sys.path.insert(0, str(folder))



def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The course's two skip marks, defined here only: `gpu` (kernels compiled on a CUDA GPU, skipped without one)
    and `interpreter("why")` (kernels under Triton's CPU interpreter, skipped on a GPU with the reason given)."""
    from puzzles import on_gpu

    gpu = on_gpu()
    for item in items:
        if not gpu and item.get_closest_marker("gpu") is not None:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (kernels compile there)"))
        marker = item.get_closest_marker("interpreter")
        if gpu and marker is not None:
            why = marker.args[0] if marker.args else "runs under the interpreter"
            item.add_marker(pytest.mark.skip(reason=f"without a GPU only: {why}"))

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


@pytest.fixture
def memoized_launches():
    """The production kernels' tests (`pytestmark = pytest.mark.usefixtures("memoized_launches")`): each launch of
    Triton's interpreter patched and memoized as grading's are (puzzles/running/interpreter.py), about a third of
    the plain interpreter's time. Not for the tests of the interpreter's memos themselves (test_spread_sizes.py)."""
    from puzzles.running.interpreter import memoized_plain_launches

    with memoized_plain_launches():
        yield


@pytest.fixture(scope="module")
def module_compile_cache(tmp_path_factory):
    """One compile-check cache for a test module (`pytestmark = pytest.mark.usefixtures("module_compile_cache")`),
    not the user's, and the check on: the files that read compiled code."""
    patch = pytest.MonkeyPatch()
    patch.setenv("PUZZLES_COMPILE_CACHE", str(tmp_path_factory.mktemp("compile-cache")))
    patch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    yield
    patch.undo()
