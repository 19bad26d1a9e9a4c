"""The learner's kernel as the grader holds it: the Python function under its decorators, and its file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch
import triton


def on_gpu() -> bool:
    """True when kernels are compiled for a CUDA GPU rather than interpreted (the mode `import puzzles`
    chose): where the grader, the notebook cells' safe path and the learner's API run kernels."""
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"


def unwrap_kernel(kernel: Any) -> Callable[..., Any] | None:
    """The plain Python function behind a @triton.jit kernel (through autotune/heuristics)."""
    seen = 0
    while not hasattr(kernel, "arg_names") or isinstance(kernel, (triton.runtime.Autotuner, triton.runtime.Heuristics)):
        if not hasattr(kernel, "fn") or seen > 5:
            return None
        kernel, seen = kernel.fn, seen + 1
    return getattr(kernel, "fn", None)


def kernel_file(kernel: Any) -> str | None:
    fn = unwrap_kernel(kernel)
    return fn.__code__.co_filename if fn is not None else None

