"""Puzzle 28's statement on bfloat16 (issue 52): what it changes, measured numbers, and the fast path a learner
can try. Its claim is checked here: bfloat16 tiles into every tl.dot (P, dS and the accumulators float32) pass
the float32 spec at every graded size on a CPU, where the grader computes bfloat16 as a GPU does
(puzzles/running/bfloat16.py), and on a GPU where there is one."""

from __future__ import annotations

import triton
import triton.language as tl

from puzzles import test
from puzzles.course import catalog


@triton.jit
def attention_backward_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                              B0: tl.constexpr, B1: tl.constexpr):
    scale = 1.0 / (D ** 0.5)
    cols = tl.arange(0, D)
    keys = tl.program_id(0) * B1 + tl.arange(0, B1)
    keys_in = keys < T
    k = tl.load(k_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0).to(tl.bfloat16)
    v = tl.load(v_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0).to(tl.bfloat16)
    dk = tl.zeros([B1, D], dtype=tl.float32)
    dv = tl.zeros([B1, D], dtype=tl.float32)
    for i0 in range(0, T, B0):
        rows = i0 + tl.arange(0, B0)
        rows_in = rows < T
        at = rows[:, None] * D + cols[None, :]
        q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0)
        o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
        do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
        lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
        q16, do16 = q.to(tl.bfloat16), do.to(tl.bfloat16)
        p = tl.exp(tl.dot(q16, tl.trans(k)) * scale - lse[:, None])
        p = tl.where(rows_in[:, None] & keys_in[None, :], p, 0.0)
        dv += tl.dot(tl.trans(p.to(tl.bfloat16)), do16)
        delta = tl.sum(do * o, axis=1)
        ds = p * (tl.dot(do16, tl.trans(v)) - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(tl.bfloat16)), q16)
        tl.atomic_add(dqkv_ptr + at, tl.dot(ds.to(tl.bfloat16), k) * scale, mask=rows_in[:, None])
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk * scale, mask=keys_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])


def test_the_statement_says_what_bfloat16_changes_and_what_to_try():
    statement = catalog.get(28).statement
    assert "0.194 ms" in statement and "H200" in statement and "1.99 ms" in statement
    assert "tl.bfloat16" in statement and "test(..., perf=True)" in statement


def test_bfloat16_tiles_pass_the_float32_spec_at_every_graded_size():
    p = catalog.get(28)
    result = test(attention_backward_kernel, p.spec, quiet=True)
    assert result.passed, str(result)
    assert len(result.outcomes) == len(p.sizes)
