"""The line of a kernel that a comment marks (`# LOOP_LINE`): what a verdict about compiled code or a rule must
name, found in the kernel's own source (under @triton.autotune and @triton.heuristics too)."""

from __future__ import annotations

import inspect

from puzzles.running.kernel import unwrap_kernel


def marked_line(kernel, marker: str) -> int:
    lines, first = inspect.getsourcelines(unwrap_kernel(kernel))
    return next(first + i for i, text in enumerate(lines) if marker in text)
