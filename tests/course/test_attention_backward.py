"""Puzzle 28, attention backward: the spec is torch's gradient of softmax attention, correct kernels in other styles
pass (dq in a second pass without atomics, exp2 with the scale folded in), and each classic mistake fails for its
own reason, named in the verdict (the dq summed by a plain load, add and store is a race). The reference passing
and the starter failing at every size: tests/grading/test_harness.py; its compile check:
tests/running/test_compile_check.py."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


def grade(kernel, seed: int = 1234, **kwargs):
    return test(kernel, catalog.get(28).spec, quiet=True, seed=seed, compile_check=False, **kwargs)


def test_the_spec_is_torchs_gradient_of_attention_from_the_saved_logsumexp():
    from puzzles.course.bug_inputs import attention_backward_inputs

    p = catalog.get(28)
    for index, sizes in enumerate(p.sizes):
        i = attention_backward_inputs(sizes, index, torch.Generator().manual_seed(index))
        q, k, v = (i[name].double().requires_grad_() for name in ("q", "k", "v"))
        o = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
        torch.testing.assert_close(o.detach().float(), i["o"])
        o.backward(i["do"].double())
        z = p.spec(*(i[name].double() for name in ("q", "k", "v", "o", "do", "lse")))
        torch.testing.assert_close(z, torch.stack([q.grad, k.grad, v.grad]), rtol=1e-5, atol=1e-6)


# -- correct kernels in other styles ------------------------------------------------------------------------


@triton.jit
def attention_backward_two_passes(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                                  B0: tl.constexpr, B1: tl.constexpr):
    """No atomics: program j computes dk and dv of its B1 keys over all queries, then dq of the B1 queries
    j·B1 … over all keys (in chunks of B0 keys); exp2 with log2(e) folded into the scale."""
    LOG2E: tl.constexpr = 1.4426950408889634
    scale2 = LOG2E / (D ** 0.5)
    cols = tl.arange(0, D)
    mine = tl.program_id(0) * B1 + tl.arange(0, B1)
    mine_in = mine < T
    tile = mine[:, None] * D + cols[None, :]
    k = tl.load(k_ptr + tile, mask=mine_in[:, None], other=0.0)
    v = tl.load(v_ptr + tile, mask=mine_in[:, None], other=0.0)
    dk = tl.zeros([B1, D], dtype=tl.float32)
    dv = tl.zeros([B1, D], dtype=tl.float32)
    for i0 in range(0, T, B0):
        rows = i0 + tl.arange(0, B0)
        at = rows[:, None] * D + cols[None, :]
        q = tl.load(q_ptr + at, mask=(rows < T)[:, None], other=0.0)
        do = tl.load(do_ptr + at, mask=(rows < T)[:, None], other=0.0)
        delta = tl.sum(do * tl.load(o_ptr + at, mask=(rows < T)[:, None], other=0.0), 1)
        lse2 = tl.load(lse_ptr + rows, mask=rows < T, other=float("inf")) * LOG2E  # exp2(-inf) = 0 past T
        p = tl.exp2(tl.dot(q, tl.trans(k)) * scale2 - lse2[:, None])
        p = tl.where(mine_in[None, :], p, 0.0)
        dv += tl.dot(tl.trans(p), do)
        dk += tl.dot(tl.trans(p * (tl.dot(do, tl.trans(v)) - delta[:, None])), q)
    tl.store(dqkv_ptr + T * D + tile, dk * (scale2 / LOG2E), mask=mine_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + tile, dv, mask=mine_in[:, None])
    # The second pass: these B1 rows as queries.
    q = tl.load(q_ptr + tile, mask=mine_in[:, None], other=0.0)
    do = tl.load(do_ptr + tile, mask=mine_in[:, None], other=0.0)
    delta = tl.sum(do * tl.load(o_ptr + tile, mask=mine_in[:, None], other=0.0), 1)
    lse2 = tl.load(lse_ptr + mine, mask=mine_in, other=0.0) * LOG2E
    dq = tl.zeros([B1, D], dtype=tl.float32)
    for j0 in range(0, T, B0):
        keys = j0 + tl.arange(0, B0)
        at = keys[:, None] * D + cols[None, :]
        kj = tl.load(k_ptr + at, mask=(keys < T)[:, None], other=0.0)
        vj = tl.load(v_ptr + at, mask=(keys < T)[:, None], other=0.0)
        p = tl.exp2(tl.dot(q, tl.trans(kj)) * scale2 - lse2[:, None])
        p = tl.where((keys < T)[None, :], p, 0.0)
        dq += tl.dot(p * (tl.dot(do, tl.trans(vj)) - delta[:, None]), kj)
    tl.store(dqkv_ptr + tile, dq * (scale2 / LOG2E), mask=mine_in[:, None])


@triton.jit
def attention_backward_scaled_q(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                                B0: tl.constexpr, B1: tl.constexpr):
    """q scaled as it is loaded (so dk needs no factor after the loop), masks through other= alone (a row or key
    past T gets lse = +inf, so p = 0 there), dq's atomic add on a 2-D mask."""
    scale = 1.0 / (D ** 0.5)
    cols = tl.arange(0, D)
    keys = tl.program_id(0) * B1 + tl.arange(0, B1)
    kv_mask = (keys[:, None] < T) & (cols[None, :] < D)
    k = tl.load(k_ptr + keys[:, None] * D + cols[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + keys[:, None] * D + cols[None, :], mask=kv_mask, other=0.0)
    dk = tl.zeros([B1, D], dtype=tl.float32)
    dv = tl.zeros([B1, D], dtype=tl.float32)
    for i0 in range(0, T, B0):
        rows = i0 + tl.arange(0, B0)
        q_mask = (rows[:, None] < T) & (cols[None, :] < D)
        at = rows[:, None] * D + cols[None, :]
        q = tl.load(q_ptr + at, mask=q_mask, other=0.0) * scale
        do = tl.load(do_ptr + at, mask=q_mask, other=0.0)
        o = tl.load(o_ptr + at, mask=q_mask, other=0.0)
        lse = tl.load(lse_ptr + rows, mask=rows < T, other=float("inf"))
        s = tl.dot(q, tl.trans(k))
        p = tl.where(keys[None, :] < T, tl.exp(s - lse[:, None]), 0.0)
        dv = tl.dot(tl.trans(p), do, dv)
        ds = p * (tl.dot(do, tl.trans(v)) - tl.sum(do * o, 1)[:, None])
        dk = tl.dot(tl.trans(ds), q, dk)
        tl.atomic_add(dqkv_ptr + at, tl.dot(ds, k) * scale, mask=q_mask)
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk, mask=kv_mask)
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=kv_mask)


@pytest.mark.parametrize("kernel", [attention_backward_two_passes, attention_backward_scaled_q],
                         ids=["two-passes", "scaled-q"])
@pytest.mark.parametrize("seed", [1, 2])
def test_correct_kernels_in_other_styles_pass(kernel, seed):
    result = grade(kernel, seed)
    assert result.passed, str(result)


def test_a_correct_kernel_without_atomics_compiles_for_every_target():
    result = test(attention_backward_two_passes, catalog.get(28).spec, quiet=True, seed=3, compile_check=True)
    assert result.passed, str(result)


# -- wrong kernels, each failing for its reason --------------------------------------------------------------


@triton.jit
def _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                             B0: tl.constexpr, B1: tl.constexpr, SLIP: tl.constexpr):
    """The reference with one slip, chosen by SLIP: "no scale", "scale in scores only", "no lse", "no delta",
    "dq by load and store", "no row mask", "no dv"."""
    scale = 1.0 / (D ** 0.5)
    if SLIP == "no scale":
        scale = 1.0
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
        if SLIP == "no row mask":
            rows_in = rows >= 0
        at = rows[:, None] * D + cols[None, :]
        q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0)
        o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
        do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
        lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        if SLIP == "no lse":
            p = tl.exp(s)
        else:
            p = tl.exp(s - lse[:, None])
        p = tl.where(rows_in[:, None] & keys_in[None, :], p, 0.0)
        dv += tl.dot(tl.trans(p), do)
        dp = tl.dot(do, tl.trans(v))
        if SLIP == "no delta":
            ds = p * dp
        else:
            ds = p * (dp - tl.sum(do * o, axis=1)[:, None])
        dk += tl.dot(tl.trans(ds), q)
        chain = scale
        if SLIP == "scale in scores only":
            chain = 1.0
        dq = tl.dot(ds, k) * chain
        if SLIP == "dq by load and store":
            tl.store(dqkv_ptr + at, tl.load(dqkv_ptr + at, mask=rows_in[:, None]) + dq, mask=rows_in[:, None])
        else:
            tl.atomic_add(dqkv_ptr + at, dq, mask=rows_in[:, None])
    if SLIP == "scale in scores only":
        dk = dk / scale
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk * scale, mask=keys_in[:, None])
    if SLIP != "no dv":
        tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])


@triton.jit
def attention_backward_without_scale(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "no scale")


@triton.jit
def attention_backward_scale_in_scores_only(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1,
                             "scale in scores only")


@triton.jit
def attention_backward_without_lse(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "no lse")


@triton.jit
def attention_backward_without_delta(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "no delta")


@triton.jit
def attention_backward_dq_by_load_and_store(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1,
                             "dq by load and store")


@triton.jit
def attention_backward_without_row_mask(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "no row mask")


@triton.jit
def attention_backward_without_dv(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
        B0: tl.constexpr, B1: tl.constexpr):
    _attention_backward_body(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, "no dv")


@pytest.mark.parametrize(("kernel", "slip"), [
    (attention_backward_without_scale, "the scale 1/sqrt(D) is missing"),
    (attention_backward_scale_in_scores_only, "dq and dk miss the factor 1/sqrt(D)"),
    (attention_backward_without_lse, "not exp(s - lse)"),
    (attention_backward_without_delta, "lacks the term rowsum(dO * O)"),
], ids=["no-scale", "scale-in-scores-only", "no-lse", "no-delta"])
def test_each_likely_slip_fails_at_every_size_and_is_named(kernel, slip):
    result = grade(kernel)
    assert not any(o.passed for o in result.outcomes), str(result)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    if not on_gpu():  # on a GPU tl.dot's TF32 rounding leaves the slip's output a few percent away: the verdict counts
        assert SLIP_NOTE in failure.reason() and slip in failure.reason(), str(result)


@interpreted_only
def test_dq_summed_by_a_plain_load_add_and_store_is_a_race():
    result = grade(attention_backward_dq_by_load_and_store)
    failure = result.first_failure
    assert failure is not None and failure.status == "race", str(result)
    assert "tl.atomic_add" in failure.error.message, failure.error.message


@interpreted_only
def test_query_rows_past_t_read_out_of_bounds():
    result = grade(attention_backward_without_row_mask)
    failure = result.first_failure
    assert failure is not None and failure.status == "out of bounds", str(result)


@interpreted_only
def test_dv_never_stored_is_unwritten_though_the_output_starts_at_zero():
    result = grade(attention_backward_without_dv)
    failure = result.first_failure
    assert failure is not None and failure.status == "unwritten", str(result)
    assert all(index[0] == 2 for index in failure.unwritten), failure.unwritten  # z[2] is dv
