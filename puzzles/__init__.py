"""Triton puzzles: the library behind the notebooks, the tests and `python -m puzzles`.

Importing it on a machine without a CUDA GPU turns on Triton's CPU interpreter
(TRITON_INTERPRET=1) before Triton is loaded, so `@triton.jit` kernels run anywhere.
"""

from __future__ import annotations

import os as _os


def _choose_mode() -> None:
    if "TRITON_INTERPRET" in _os.environ:
        return  # the learner chose
    try:
        import torch

        gpu = torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch yet: the doctor command will say so
        gpu = False
    if not gpu:
        _os.environ["TRITON_INTERPRET"] = "1"


_choose_mode()

from puzzles import moved as _moved  # noqa: E402 - old module paths, for notebooks copied before the move

_moved.install()

try:
    from jaxtyping import Float32, Int32  # re-exported for the notebooks
    from torch import Tensor

    from puzzles.course import mxfp4  # puzzle 33's format, which its spec (shown in the notebook) reads
    from puzzles.course.catalog import PUZZLES, all_puzzles, get
    from puzzles.course.philox import rand
    from puzzles.course.puzzle import Puzzle, cdiv
    from puzzles.grading import on_gpu, test
    from puzzles.grading.result import TestResult
    from puzzles.grading.tensor_lists import compare_with_loop
    from puzzles.learner.autotune import sweep
    from puzzles.learner.compiled import compiled
    from puzzles.learner.inductor_code import compare_with_compiled, compiled_code, kernels_in
    from puzzles.learner.progress import progress
    from puzzles.running.debug import breakpoint_if, check_tensors, print_if
    from puzzles.running.sandbox import sandboxed
except Exception as _err:
    # A missing (or unsupported) torch, triton, numpy or jaxtyping must not stop `python -m puzzles
    # doctor`, which says what to install; anything else from the course's own modules is a bug.
    from puzzles.running import compat as _compat

    # An unsupported Python: whatever failed, the one thing to say is that (the doctor says it too).
    _old_python = _compat.python_problem()
    if not isinstance(_err, ImportError) and not _old_python:
        raise
    _top = (getattr(_err, "name", None) or "").split(".")[0]
    _unsupported = _old_python or _compat.triton_problem()
    if _top not in _compat.REQUIRED_PACKAGES and not _unsupported:
        raise ImportError(f"the course's own module failed to import: {_err}. If you edited puzzles/, "
                          "undo that edit; else run `python -m puzzles doctor`.") from _err
    _WHY = _old_python or (_compat.missing_package_message(_err) if _top in _compat.REQUIRED_PACKAGES
                           else _unsupported)
    _CAUSE = _err

    def __getattr__(name: str) -> object:
        if name in __all__:
            raise ImportError(f"puzzles.{name} is unavailable: {_WHY}") from _CAUSE
        raise AttributeError(f"module 'puzzles' has no attribute {name!r}")
else:
    import sys as _sys

    # `python -m puzzles CMD` imports this package while sys.argv[0] is still "-m". No command has a learner
    # reading while a process loads: the compile check's processes start with the first compile the verdicts
    # cache cannot answer (a grading of cached kernels starts none), and only `grade` uses the GPU worker.
    _command = _sys.argv[:1] == ["-m"]
    if _os.environ.get("TRITON_INTERPRET") == "1" and not _command:
        # Load the GPU compiler in its workers now, while the learner reads: the first grading cell
        # then finds it ready (see puzzles/running/compile_check/; PUZZLES_COMPILE_CHECK=0 turns it off).
        from puzzles.running import compile_check as _compile_check

        _compile_check.warm_up()
    elif (not _command or _sys.argv[1:2] == ["grade"]) and _os.environ.get("PUZZLES_IN_WORKER") != "1" and on_gpu():
        # Learner kernels compiled for the GPU run in a worker process with its own CUDA context (a
        # fault there cannot poison this one): start it now, it loads CUDA while the learner reads.
        from puzzles.running import gpu_worker as _gpu_worker

        _gpu_worker.warm_up()

# What a notebook imports: `from puzzles import ...` only, never a module's path (tests/course/test_notebooks.py
# checks).
__all__ = [
    "PUZZLES",
    "Float32",
    "Int32",
    "Puzzle",
    "Tensor",
    "TestResult",
    "all_puzzles",
    "breakpoint_if",
    "cdiv",
    "check_tensors",
    "compare_with_compiled",
    "compare_with_loop",
    "compiled",
    "compiled_code",
    "get",
    "kernels_in",
    "mxfp4",
    "on_gpu",
    "print_if",
    "progress",
    "rand",
    "sandboxed",
    "sweep",
    "test",
]
