"""Amounts as the course states them: a puzzle's sizes (`N0=4096 B0=1024`), the fewest bytes its spec
moves, and bytes, FLOPs and counts in short (33.6 MB, 2.1 GFLOP, 268M). The notebooks' speed sections
(puzzles/course/notebooks.py) and the grader's speed report (puzzles/grading/perf.py) both write them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import torch

from puzzles.course.puzzle import Sizes
from puzzles.course.spec import spec_signature


def size_text(sizes: Sizes, sep: str = " ") -> str:
    """The sizes as `N0=4096 B0=1024`; a tensor-list puzzle's many lengths (L0, L1, ...) are left
    out, its count K and total T say enough."""
    return sep.join(f"{k}={v}" for k, v in sizes.items() if not re.fullmatch(r"L\d+", k))


def fmt_count(n: float) -> str:
    """A count in short: 268M, 4.1K, 12."""
    return scaled(n, ("", "K", "M", "G", "T")).replace(" ", "")


def fewest_bytes(spec: Callable[..., Any], sizes: Sizes) -> tuple[int, int]:
    """(bytes read, bytes written) when each of the spec's inputs is read once and its output
    written once (a list of tensors counts as the spec sees it: laid end to end)."""
    inputs, out = spec_signature(spec)

    def nbytes(t: Any) -> int:
        return math.prod(t.shape(sizes)) * torch.empty((), dtype=t.dtype).element_size()

    return sum(nbytes(t) for t in inputs), nbytes(out)


def scaled(value: float, units: tuple[str, ...]) -> str:
    """Three significant figures in the largest unit (steps of 1000) that keeps the number >= 1."""
    i = 0
    while i + 1 < len(units) and abs(value) >= 1000:
        value, i = value / 1000, i + 1
    return f"{value:.0f} {units[i]}" if i == 0 or value >= 100 else f"{value:.3g} {units[i]}"


def fmt_bytes(n: float) -> str:
    """Bytes a learner can read: 512 B, 4.1 KB, 33.6 MB (a small puzzle moves KB, never "0 MB")."""
    return scaled(n, ("B", "KB", "MB", "GB", "TB"))


def fmt_flops(n: float) -> str:
    """Floating-point operations: 131 kFLOP, 2.1 MFLOP, 68.7 GFLOP (never "0 GFLOP")."""
    return scaled(n, ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"))
