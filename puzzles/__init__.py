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

from jaxtyping import Float32, Int32  # noqa: E402  - re-exported for the notebooks
from torch import Tensor  # noqa: E402

from puzzles.catalog import PUZZLES, all_puzzles, get  # noqa: E402
from puzzles.debug import breakpoint_if, check_tensors, print_if  # noqa: E402
from puzzles.harness import on_gpu, test  # noqa: E402
from puzzles.puzzle import Puzzle, cdiv  # noqa: E402
from puzzles.result import TestResult  # noqa: E402

if _os.environ.get("TRITON_INTERPRET") == "1":
    # Load the GPU compiler in its worker now, while the learner reads: the first grading cell
    # then finds it ready (see puzzles/compile_check.py; PUZZLES_COMPILE_CHECK=0 turns it off).
    from puzzles import compile_check as _compile_check

    _compile_check.warm_up()

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
    "get",
    "on_gpu",
    "print_if",
    "test",
]
