"""Puzzle 28's slips as learners write them from the notebook (issue 48): each fails at every one of 20 seeds and
is named with its line and its fix, in the words of the result it breaks (dQ, dK, dV, not "matrices 0 of z"),
and a race on dQ is told by its coordinates. The slips the first tests name: tests/course/test_attention_backward.py."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
from judging import SEEDS, grade, interpreted_only

from puzzles import on_gpu
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py


@triton.jit
def _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
                  B1: tl.constexpr, SLIP: tl.constexpr):
    """The notebook's kernel (one program per key block, dQ added atomically) with one slip, chosen by SLIP:
    "dq unscaled", "dk unscaled", "scores unscaled", "dk from p", "dv from ds", "block softmax", "exp2 lse",
    "exp2 no log2e", "dq stored", "block delta"."""
    LOG2E: tl.constexpr = 1.4426950408889634
    scale = 1.0 / (D ** 0.5)
    cols = tl.arange(0, D)
    keys = tl.program_id(0) * B1 + tl.arange(0, B1)
    keys_in = keys < T
    k = tl.load(k_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0)
    v = tl.load(v_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0)
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
        s = tl.dot(q, tl.trans(k))
        if SLIP != "scores unscaled":
            s = s * scale
        if SLIP == "block softmax":
            s = tl.where(keys_in[None, :], s, -float("inf"))
            e = tl.exp(s - tl.max(s, 1)[:, None])
            p = e / tl.sum(e, 1)[:, None]
        elif SLIP == "exp2 lse":
            p = tl.exp2(s * LOG2E - lse[:, None])
        elif SLIP == "exp2 no log2e":
            p = tl.exp2(s - lse[:, None])
        else:
            p = tl.exp(s - lse[:, None])
        p = tl.where(rows_in[:, None] & keys_in[None, :], p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        if SLIP == "block delta":
            ds = p * (dp - tl.sum(p * dp, 1)[:, None])
        else:
            ds = p * (dp - tl.sum(do * o, 1)[:, None])
        if SLIP == "dv from ds":
            dv += tl.dot(tl.trans(ds), do)
        else:
            dv += tl.dot(tl.trans(p), do)
        if SLIP == "dk from p":
            dk += tl.dot(tl.trans(p), q)
        else:
            dk += tl.dot(tl.trans(ds), q)
        dq = tl.dot(ds, k)
        if SLIP != "dq unscaled":
            dq = dq * scale
        if SLIP == "dq stored":
            tl.store(dqkv_ptr + at, dq, mask=rows_in[:, None])
        else:
            tl.atomic_add(dqkv_ptr + at, dq, mask=rows_in[:, None])
    if SLIP != "dk unscaled":
        dk = dk * scale
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk, mask=keys_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])


@triton.jit
def dq_without_scale(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
                     B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "dq unscaled")


@triton.jit
def dk_without_scale(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
                     B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "dk unscaled")


@triton.jit
def scores_unscaled(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
                    B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "scores unscaled")


@triton.jit
def dk_from_p(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
              B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "dk from p")


@triton.jit
def dv_from_ds(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr, B0: tl.constexpr,
               B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "dv from ds")


@triton.jit
def softmax_per_key_block(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                          B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "block softmax")


@triton.jit
def exp2_with_natural_lse(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                          B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "exp2 lse")


@triton.jit
def exp2_without_log2e(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                       B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "exp2 no log2e")


@triton.jit
def dq_stored_not_added(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                        B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "dq stored")


@triton.jit
def delta_over_one_key_block(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                             B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "block delta")


# (kernel, words of its named slip, the results it leaves right)
NAMED = [
    (dq_without_scale, "dQ misses the factor 1/sqrt(D)", "dK and dV are right"),
    (dk_without_scale, "dK misses the factor 1/sqrt(D)", "dQ and dV are right"),
    (scores_unscaled, "s = tl.dot(q, tl.trans(k)) * scale", ""),
    (dk_from_p, "dK is built from P", "dQ and dV are right"),
    (dv_from_ds, "dV is built from dS", "dQ and dK are right"),
    (softmax_per_key_block, "softmax over each block of B1 keys", ""),
    (exp2_with_natural_lse, "tl.exp2((s - lse[:, None]) * LOG2E)", ""),
    (exp2_without_log2e, "LOG2E = 1.4426950408889634", ""),
    (delta_over_one_key_block, "delta = tl.sum(do * o, 1)", "dV is right"),
]


@pytest.mark.parametrize(("kernel", "slip", "which"), NAMED, ids=lambda k: getattr(k, "__name__", None))
def test_each_slip_fails_at_every_seed_and_is_named_with_its_fix(kernel, slip, which):
    for seed in SEEDS:
        result = grade(28, kernel, seed)
        assert not result.passed, f"seed {seed}: {result}"
        if on_gpu():  # TF32 leaves a slip's output a few percent away from the slip's float64 one
            continue
        failure = result.first_failure
        assert SLIP_NOTE in failure.reason() and slip in failure.reason(), f"seed {seed}: {result}"
        assert which in failure.reason() and "matrices" not in failure.reason(), f"seed {seed}: {result}"
        assert not any("float16 or bfloat16" in o.reason() for o in result.outcomes), f"seed {seed}: {result}"


def test_a_wrong_element_is_named_in_its_result():
    failure = grade(28, dk_without_scale).first_failure
    assert "first dK[" in failure.reason() and "z[" not in failure.reason(), failure.reason()
    assert "dK[" in str(grade(28, dk_without_scale)), "the detail lines name dK too"


@interpreted_only
def test_dq_stored_by_every_key_block_is_a_race_told_by_its_coordinates():
    failure = grade(28, dq_stored_not_added).first_failure
    assert failure is not None and failure.status == "race", str(failure)
    assert "dQ[" in failure.error.message and "element" not in failure.error.message, failure.error.message


@interpreted_only
def test_a_race_on_an_output_that_packs_nothing_is_told_by_its_coordinates():
    from test_judging_holes_matmuls import splitk_store_then_add

    failure = grade(17, splitk_store_then_add, 1).first_failure
    assert failure is not None and failure.status == "race", str(failure)
    message = failure.error.message
    assert "both write z[" in message and "element" not in message, message
