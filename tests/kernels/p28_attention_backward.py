"""Puzzle 28 (attention backward): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in the other ways the statement allows -----------------------------------------------------------

@triton.jit
def attention_backward_kernel_two_walks(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                                        B0: tl.constexpr, B1: tl.constexpr):
    """Puzzle 28 without atomics: program j's first walk owns keys j·B1 … (dK, dV over every query block of B0);
    its second owns the queries j·B1 …, a block B1 wide (the grid has cdiv(T, B1) programs), and walks the keys
    in blocks of B0 for their dQ."""
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
        p = tl.where(rows_in[:, None] & keys_in[None, :], tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p), do)
        ds = p * (tl.dot(do, tl.trans(v)) - tl.sum(do * o, axis=1)[:, None])
        dk += tl.dot(tl.trans(ds), q)
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk * scale, mask=keys_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])
    # The second walk: these B1 queries, every key block of B0.
    rows = tl.program_id(0) * B1 + tl.arange(0, B1)
    rows_in = rows < T
    at = rows[:, None] * D + cols[None, :]
    q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0)
    o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
    do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
    lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
    delta = tl.sum(do * o, axis=1)
    dq = tl.zeros([B1, D], dtype=tl.float32)
    for j0 in range(0, T, B0):
        other = j0 + tl.arange(0, B0)
        other_in = other < T
        k_block = tl.load(k_ptr + other[:, None] * D + cols[None, :], mask=other_in[:, None], other=0.0)
        v_block = tl.load(v_ptr + other[:, None] * D + cols[None, :], mask=other_in[:, None], other=0.0)
        p = tl.where(rows_in[:, None] & other_in[None, :], tl.exp(tl.dot(q, tl.trans(k_block)) * scale - lse[:, None]),
                     0.0)
        ds = p * (tl.dot(do, tl.trans(v_block)) - delta[:, None])
        dq += tl.dot(ds, k_block)
    tl.store(dqkv_ptr + at, dq * scale, mask=rows_in[:, None])



# -- likely slips, each the reference with one change ---------------------------------------------------------------

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



# -- bfloat16 computed as on a GPU ----------------------------------------------------------------------------------

@triton.jit
def attention_backward_bf16(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                            B0: tl.constexpr, B1: tl.constexpr, WITH_DELTA: tl.constexpr = True):
    """Puzzle 28's reference with every tl.dot fed bfloat16 tiles (as its notebook advises, for speed) and
    float32 accumulators; WITH_DELTA=False leaves out the softmax's rowsum(dO * O), a classic slip."""
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
        q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0).to(tl.bfloat16)
        o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
        do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
        lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
        p = tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None])
        p = tl.where(rows_in[:, None] & keys_in[None, :], p, 0.0)
        dv += tl.dot(tl.trans(p.to(tl.bfloat16)), do.to(tl.bfloat16))
        delta = tl.sum(do * o, axis=1) if WITH_DELTA else tl.zeros([B0], dtype=tl.float32)
        ds = p * (tl.dot(do.to(tl.bfloat16), tl.trans(v)) - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(tl.bfloat16)), q)
        tl.atomic_add(dqkv_ptr + at, tl.dot(ds.to(tl.bfloat16), k) * scale, mask=rows_in[:, None])
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk * scale, mask=keys_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])


@triton.jit
def attention_backward_bf16_without_delta(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                                          B0: tl.constexpr, B1: tl.constexpr):
    attention_backward_bf16(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D, B0, B1, False)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

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


# -- the fast path the statement suggests: bfloat16 tiles into every tl.dot (issue 52) -------------------------------

@triton.jit
def attention_backward_bfloat16_tiles(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
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


CORRECT = (attention_backward_two_passes, attention_backward_scaled_q)
