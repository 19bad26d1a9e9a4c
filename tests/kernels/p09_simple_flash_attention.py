"""Puzzle 9 (simple flash attention): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def flashatt_online_exp(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    off_i = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask_i = off_i < N0
    q = tl.load(q_ptr + off_i, mask=mask_i)
    qk_max = tl.full((B0,), -float("inf"), dtype=tl.float32)
    exp_sum = tl.zeros((B0,), dtype=tl.float32)
    z = tl.zeros((B0,), dtype=tl.float32)
    for j in tl.range(0, T, B1):
        off_j = j + tl.arange(0, B1)
        mask_j = off_j < T
        k = tl.load(k_ptr + off_j, mask=mask_j)
        v = tl.load(v_ptr + off_j, mask=mask_j, other=0.0)
        qk = q[:, None] * k[None, :]
        qk = tl.where(mask_i[:, None] & mask_j[None, :], qk, -float("inf"))
        new_max = tl.maximum(tl.max(qk, axis=1), qk_max)
        qk_exp = tl.exp(qk - new_max[:, None])
        factor = tl.exp(qk_max - new_max)
        exp_sum = exp_sum * factor + tl.sum(qk_exp, axis=1)
        z = z * factor + tl.sum(qk_exp * v[None, :], axis=1)
        qk_max = new_max
    tl.store(z_ptr + off_i, z / exp_sum, mask=mask_i)


@triton.jit
def flashatt_two_pass(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    mx = tl.full((B0,), -float("inf"), dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        mx = tl.maximum(mx, tl.max(s, axis=1))
    num = tl.zeros((B0,), dtype=tl.float32)
    den = tl.zeros((B0,), dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        p = tl.where((cols < T)[None, :], tl.exp(q[:, None] * k[None, :] - mx[:, None]), 0.0)
        num += tl.sum(p * v[None, :], axis=1)
        den += tl.sum(p, axis=1)
    tl.store(z_ptr + rows, num / den, mask=rows < N0)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def flashatt_to_last_index(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - 1, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc * tl.exp(m - m_new) + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def flashatt_main_loop_and_tail(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for c in range(0, (T - 1) // B1 + (T % B1 != 0)):  # one chunk short where B1 divides T
        cols = c * B1 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc * tl.exp(m - m_new) + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def flashatt_first_chunk_max(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    first = tl.arange(0, B1)
    k0 = tl.load(k_ptr + first, mask=first < T, other=0.0)
    mx = tl.max(tl.where((first < T)[None, :], q[:, None] * k0[None, :], -float("inf")), axis=1)
    num = tl.zeros([B0], dtype=tl.float32)
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        p = tl.where((cols < T)[None, :], tl.exp(q[:, None] * k[None, :] - mx[:, None]), 0.0)
        num += tl.sum(p * v[None, :], axis=1)
        den += tl.sum(p, axis=1)
    tl.store(z_ptr + rows, num / den, mask=rows < N0)


# -- a running maximum started at 0, not -inf: right wherever some score of a row is positive --------------
@triton.jit
def flashatt_max_from_zero(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    off_i = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask_i = off_i < N0
    q = tl.load(q_ptr + off_i, mask=mask_i, other=0.0)
    m = tl.zeros((B0,), dtype=tl.float32)
    l = tl.zeros((B0,), dtype=tl.float32)
    acc = tl.zeros((B0,), dtype=tl.float32)
    for j in range(0, T, B1):
        off_j = j + tl.arange(0, B1)
        mask_j = off_j < T
        k = tl.load(k_ptr + off_j, mask=mask_j, other=0.0)
        v = tl.load(v_ptr + off_j, mask=mask_j, other=0.0)
        s = tl.where(mask_j[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha + tl.sum(p * v[None, :], 1)
        m = m_new
    tl.store(z_ptr + off_i, acc / l, mask=mask_i)


@triton.jit
def flashatt_kernel_no_rescale(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # Rescales the denominator but not the accumulator when the running maximum grows.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def flashatt_kernel_no_maximum(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # Never subtracts a maximum: exact while the scores stay small, inf / inf once one passes 88.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        p = tl.where((cols < T)[None, :], tl.exp(q[:, None] * k[None, :]), 0.0)
        l = l + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 9 with tl.exp, its weights p in DTYPE."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None]).to(DTYPE)
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1).to(tl.float32)
        acc = acc * tl.exp(m - m_new) + tl.sum(p * v[None, :].to(DTYPE), axis=1).to(tl.float32)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def flashatt_kernel_float16(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0, B1, tl.float16)


@triton.jit
def flashatt_kernel_exp(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0, B1, tl.float32)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def flash_without_rescaling_acc(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    total = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        total = total * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)  # not rescaled
        m = m_new
    tl.store(z_ptr + rows, acc / total, mask=rows < N0)


CORRECT = (flashatt_online_exp, flashatt_two_pass)
