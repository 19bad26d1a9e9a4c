"""Puzzle 28's statement on bfloat16 (issue 52): what it changes, measured numbers, and the fast path a learner
can try. Its claim is checked here: bfloat16 tiles into every tl.dot (P, dS and the accumulators float32) pass
the float32 spec at every graded size on a CPU, where the grader computes bfloat16 as a GPU does
(puzzles/running/bfloat16.py), and on a GPU where there is one."""

from __future__ import annotations

import p28_attention_backward as p28

from puzzles import test
from puzzles.course import catalog


def test_the_statement_says_what_bfloat16_changes_and_what_to_try():
    statement = catalog.get(28).statement
    assert "0.194 ms" in statement and "H200" in statement and "1.99 ms" in statement
    assert "tl.bfloat16" in statement and "test(..., perf=True)" in statement


def test_bfloat16_tiles_pass_the_float32_spec_at_every_graded_size():
    p = catalog.get(28)
    result = test(p28.attention_backward_bfloat16_tiles, p.spec, quiet=True)
    assert result.passed, str(result)
    assert len(result.outcomes) == len(p.sizes)
