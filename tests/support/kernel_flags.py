"""A kernel with its constexpr flags set through @triton.heuristics, as Triton applies them: the tests make each
slip of a puzzle from one kernel whose flags switch the slip on (tests/kernels/pNN_*.py)."""

from __future__ import annotations

import triton


def with_flags(kernel, defaults: dict, **flags):
    """`kernel` with its constexpr flags set: the defaults (the right kernel) with `flags` changed."""
    values = {**defaults, **flags}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in values.items()})(kernel)
