"""What the two files of issue 21's judging holes share (tests/grading/test_judging_holes.py and
tests/grading/test_judging_holes_matmuls.py): the 20 seeds the issue asks for, the interpreter-only mark, and the
grading call (which the message and quantization-track tests use too)."""

from __future__ import annotations

import pytest

from puzzles import test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses and poison")
SEEDS = range(1, 21)


def grade(number: int, kernel, seed: int = 1234, compile_check: bool = False, **kwargs):
    """Graded as a cell grades, without the compile check unless a test's verdict comes from it (its verdicts:
    tests/running/test_compile_check.py): the judging is the same either way, and each kernel's compiles for three
    targets cost more CPU than its grading."""
    return test(kernel, catalog.get(number).spec, quiet=True, seed=seed, compile_check=compile_check, **kwargs)
