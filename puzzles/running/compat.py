"""Which Triton versions the course supports, and the shims that make them behave alike.

The guarded interpreter (puzzles/running/recording.py, puzzles/running/interpreter.py) wraps internals of
`triton.runtime.interpreter`: the builder's masked load/store/atomic methods, the language layer's load that
sees `other=`, `TensorHandle`, `InterpretedFunction`, `InterpreterError` and `_patch_lang`, found on each
version by what they receive (puzzles/running/interpreter_hooks.py, which refuses a Triton where one is
missing). Those are not a public API, so the course states the range it is tested with (`make versions` runs
every test file that judges kernels under each version in `TESTED`) and refuses any other version with a
message that says what to install, rather than failing inside the harness.

This module imports neither torch nor triton at import time: `python -m puzzles doctor` uses it
on a machine where either is missing.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

# The Pythons the course supports: pyproject.toml's requires-python (">=3.10,<3.15"), which
# tests/cli/test_requirements.py checks against this and resolves the pinned set for each. Triton 3.7.1
# has wheels up to 3.14; numpy >= 2.3 and jaxtyping >= 0.3.8 need 3.11, so 3.10 has pins of its own.
PYTHON_OLDEST = (3, 10)
PYTHON_BELOW = (3, 15)  # first unsupported
PYTHON_SUPPORTED = "3.10 to 3.14"
PYTHON_INSTALL = ("install one (Ubuntu 22.04 and later have 3.10 or newer: `sudo apt install python3 python3-venv`; "
                  "elsewhere `uv python install 3.12` or pyenv), then `make setup PYTHON=python3.12` "
                  "(the Python that `make setup` builds the .venv with)")

MINIMUM = (3, 5)  # oldest supported minor version
BELOW = (3, 10)  # first unsupported one (not yet tested); raise it once `make versions` passes there
# Every version `make versions` grades under, with the numpy it is tested with there
# (triton-viz 3.0 needs numpy < 2.4 with triton 3.4 to 3.6). torch 2.14 requires triton 3.8, torch 2.15 triton 3.9.
TESTED: dict[str, str] = {"3.5.1": "2.3.5", "3.6.0": "2.3.5", "3.7.1": "2.4.6", "3.8.0": "2.4.6", "3.9.0": "2.4.6"}
SUPPORTED = "3.5 to 3.9"
INSTALL = "pip install 'triton>=3.5,<3.10'"
# triton-viz (only `puzzles.viz.launch_triton_viz` uses it) does not import with triton 3.8 and later.
TRITON_VIZ_BELOW = (3, 8)
# Set to 1 to try an unsupported Triton anyway (the course then may fail inside Triton).
OVERRIDE = "PUZZLES_ANY_TRITON"
# The third-party packages `import puzzles` needs, by import name -> what to install.
REQUIRED_PACKAGES = {"torch": "torch", "triton": "triton", "numpy": "numpy", "jaxtyping": "jaxtyping"}


def python_problem(version: tuple[int, ...] | None = None) -> str | None:
    """None when this (or the given) Python is supported, else one line: what is supported and what to install."""
    version = tuple(sys.version_info[:3]) if version is None else tuple(version)
    if PYTHON_OLDEST <= version[:2] < PYTHON_BELOW:
        return None
    shown = ".".join(str(n) for n in version)
    return (f"Python {shown} is not supported: the course needs Python {PYTHON_SUPPORTED} (its pinned packages "
            f"have wheels for those); {PYTHON_INSTALL}")


def parse(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '3.6.0+git1234' or '3.7.1'."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def installed_triton() -> str | None:
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def triton_problem(version: str | None = None) -> str | None:
    """None when the installed (or given) Triton is supported, else what is wrong and what to install."""
    version = installed_triton() if version is None else version
    if version is None:
        return f"Triton is not installed; the course needs triton {SUPPORTED}: {INSTALL}"
    if MINIMUM <= parse(version) < BELOW:
        return None
    if os.environ.get(OVERRIDE) == "1":
        return None
    tested = ", ".join(TESTED)
    return (f"triton {version} is not supported: the course's checked interpreter is tested with triton {SUPPORTED} "
            f"({tested}). Install one: {INSTALL} (or `make setup` for the pinned set; "
            f"set {OVERRIDE}=1 to try this version anyway)")


def triton_viz_note(version: str | None = None) -> str | None:
    """Why triton-viz's optional viewer cannot be used with the installed (or given) Triton, or None."""
    version = installed_triton() if version is None else version
    if version is None or parse(version) < TRITON_VIZ_BELOW:
        return None
    return (f"triton-viz 3.0 does not import with triton 3.8 and later (this is {version}); it is optional: "
            "only `puzzles.viz.launch_triton_viz` (the 3-D viewer) needs it, and `test(..., viz=True)` "
            "draws the memory accesses without it")


def wrong_environment_message(err: ImportError) -> str:
    """A command run by a Python that lacks the course's packages: usually not the course's .venv."""
    name = (getattr(err, "name", None) or "").split(".")[0]
    return (f"this Python ({sys.executable}) has no {name}, which the course needs. The course's environment "
            "is the checkout's .venv (`make setup` makes it): use the make targets (`make grade`, `make doctor`, "
            "`make workspace`), or run `.venv/bin/python -m puzzles ...`, or `source .venv/bin/activate` first. "
            f"`{sys.executable} -m puzzles doctor` lists what this Python lacks.")


def missing_package_message(err: ImportError) -> str:
    """What to do when `import puzzles` fails for want of a third-party package."""
    name = (getattr(err, "name", None) or "").split(".")[0]
    what = REQUIRED_PACKAGES.get(name, name)
    return (f"the course needs {what}, which is not installed ({err}). Run `python -m puzzles doctor` to see "
            f"what is missing, then `make setup` (or `pip install -r requirements.txt`).")


# -- shims for the interpreter internals that differ between supported versions ---------------------


class _Snapshot:
    """Restores the attributes `_patch_lang` changed, for Triton 3.5, whose `_patch_lang`
    returns no scope (and never undoes its patches). Only what the patch itself changed is put back: an
    attribute someone else set while it was in force (the launch's memoized constructors, which undo
    themselves first) must not be restored to the value it had when the patch was taken."""

    def __init__(self, objects: list[Any]) -> None:
        self.saved = [(obj, dict(vars(obj))) for obj in objects]
        self.changed: list[tuple[Any, dict[str, Any], set[str]]] = []

    def taken(self) -> None:
        """Call right after the patch: note, per object, the names it added and the values it replaced."""
        for obj, before in self.saved:
            now = dict(vars(obj))
            added = now.keys() - before.keys()
            replaced = {name: value for name, value in before.items()
                        if name not in ("__dict__", "__weakref__", "__doc__") and now.get(name, _UNSET) is not value}
            self.changed.append((obj, replaced, added))

    def restore(self) -> None:
        for obj, replaced, added in self.changed:
            for name in added:
                if name in vars(obj):
                    delattr(obj, name)
            for name, value in replaced.items():
                setattr(obj, name, value)


_UNSET = object()


def patch_lang(original: Any, fn: Any) -> Any:
    """Call the interpreter's `_patch_lang(fn)` and return an object whose `restore()` undoes it,
    whatever the Triton version (3.6 and 3.7 return their own scope; 3.5 returns None)."""
    import triton.language as tl
    from triton.runtime import interpreter

    if hasattr(interpreter, "_LangPatchScope"):  # 3.6 and later: the interpreter keeps its own undo list
        scope = original(fn)
        scope.set_attr(tl.core.tensor, "__index__", _scalar_index)  # undone with the rest, in reverse order
        return scope
    core = tl.core
    patched = [tl, core, tl.math, core.tensor, core.dtype]
    if hasattr(core, "tensor_descriptor_base"):
        patched.append(core.tensor_descriptor_base)
    snapshot = _Snapshot(patched)
    original(fn)
    core.tensor.__index__ = _scalar_index  # the snapshot restores it
    snapshot.taken()
    return snapshot


def _scalar_index(self: Any) -> int:
    """`range(0, H)` on a scalar argument. Triton 3.5 and 3.6's interpreter call `int()` on a one-element
    array, which NumPy 2.5 refuses ("only 0-dimensional arrays can be converted to Python scalars"); a
    GPU machine's torch may bring that NumPy. `.item()` takes any one-element array."""
    return int(self.handle.data.item())


def _descriptor_check_counts_elements(handle_class: Any) -> bool:
    """Triton 3.5's interpreter checks a tensor descriptor's strides as multiples of 16 elements, not 16 bytes
    (rows of 24 floats, 96 bytes, are refused; a GPU takes them): probed on a 4-float (16-byte) row stride."""
    import numpy as np
    import triton.language as tl

    def value(n: int) -> Any:
        return SimpleNamespace(data=np.array(n, dtype=np.int64))

    probe = SimpleNamespace(base=SimpleNamespace(data=np.array(64, dtype=np.uint64), dtype=tl.pointer_type(tl.float32)),
                            ndim=2, shape=[value(4), value(4)], strides=[value(4), value(1)], block_shape=[4, 4])
    try:
        handle_class.validate(probe)
    except AssertionError:
        return True
    except Exception:  # noqa: BLE001 - another Triton's check that this probe does not fit: leave it alone
        return False
    return False


@contextlib.contextmanager
def descriptor_strides_in_bytes() -> Iterator[None]:
    """For the duration, a tensor descriptor's strides are checked in bytes where this Triton's interpreter
    counts elements (3.5), so that every version grades a descriptor as a GPU takes it; nothing elsewhere."""
    from triton.runtime import interpreter

    handle_class = getattr(interpreter, "TensorDescHandle", None)
    if handle_class is None or not _descriptor_check_counts_elements(handle_class):
        yield
        return
    import numpy as np

    original = handle_class.validate

    def validate(self: Any) -> None:
        itemsize = self.base.dtype.element_ty.primitive_bitwidth // 8
        in_bytes = [SimpleNamespace(data=np.asarray(s.data) * itemsize) for s in self.strides[:-1]]
        original(SimpleNamespace(**{**vars(self), "strides": [*in_bytes, *self.strides[-1:]]}))

    handle_class.validate = validate
    try:
        yield
    finally:
        handle_class.validate = original
