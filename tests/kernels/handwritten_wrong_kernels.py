"""Wrong kernels written by hand (red-team round 5): multi-token mistakes that look right and that the
graded sizes or inputs could let through. tests/grading/test_handwritten_kernels.py fails each for its reason."""

from __future__ import annotations

import triton
import triton.language as tl


# -- a loop bound of `T - 1` ("the last index"): one chunk short only where the tail is one element ----------
@triton.jit
def sum_to_last_index(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - 1, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def dot_to_last_index(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                      B_MID: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    b = tl.program_id(2)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID - 1, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID),
                    other=0.0)
        y = tl.load(y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + b * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))


@triton.jit
def gemv_to_last_index(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K - 1, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def splitk_to_last_index(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K - 1, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


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


# -- full chunks in a loop, the ragged tail after it: the last full chunk is lost where T is a multiple of B1 -
@triton.jit
def softmax_main_loop_and_tail(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = (rows < N0)[:, None]
    tail = (T // B1) * B1
    mx = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T - B1, B1):  # the full chunks (one too few where B1 divides T)
        cols = j0 + tl.arange(0, B1)
        mx = tl.maximum(mx, tl.max(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin, other=-float("inf")),
                                   axis=1))
    cols = tail + tl.arange(0, B1)
    mt = rin & (cols[None, :] < T)
    mx = tl.maximum(mx, tl.max(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mt, other=-float("inf")),
                               axis=1))
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - B1, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin, other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    cols = tail + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mt, other=-float("inf"))
    den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


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


# -- a softmax shifted by the maximum of only part of the row: right unless a later element is far larger ----
@triton.jit
def softmax_first_chunk_max(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows < N0
    first = tl.arange(0, B1)
    x0 = tl.load(x_ptr + rows[:, None] * T + first[None, :], mask=rin[:, None] & (first[None, :] < T),
                 other=-float("inf"))
    mx = tl.max(x0, axis=1)  # the first chunk's maximum stands for the row's
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None] & (cols[None, :] < T),
                    other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


@triton.jit
def softmax_max_without_the_tail(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows < N0
    mx = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T - B1 + 1, B1):  # the full chunks only: the ragged tail is left out of the maximum
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None], other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, axis=1))
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None] & (cols[None, :] < T),
                    other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


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


# -- the wrong dtype -----------------------------------------------------------------------------------------
@triton.jit
def splitk_float16_products(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b, out_dtype=tl.float16).to(tl.float32)  # each chunk summed in float16
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def quant_dot_float16_accumulator(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                                   B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float16)  # the sum kept in float16: within the TF32 tolerance
    for k0 in tl.range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        rm = (rows < N0)[:, None] & (k < MID)[None, :]
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rm, other=0)
        w = (word >> ((k % 8) * 4)[None, :]) & 0xF
        g = k // 8
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + g[None, :], mask=rm, other=0.0)
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (g // 8)[None, :], mask=rm, other=0)
        sh = (sw >> ((g % 8) * 4)[None, :]) & 0xF
        deq = (sc * (w - sh).to(tl.float32)).to(tl.float16)
        act_in = (k < MID)[:, None] & (cols < N1)[None, :]
        act = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=act_in, other=0.0).to(tl.float16)
        acc += tl.dot(deq, act, out_dtype=tl.float16)
    z_in = (rows < N0)[:, None] & (cols < N1)[None, :]
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc.to(tl.float32), mask=z_in)


@triton.jit
def grey_summing_bytes(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    ok = (j[:, None] < N1) & (i[None, :] < N0)
    px = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r, g, b = tl.load(px, mask=ok), tl.load(px + SC, mask=ok), tl.load(px + 2 * SC, mask=ok)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b.to(tl.int8), mask=ok)


# -- the output read as an input -----------------------------------------------------------------------------
@triton.jit
def sgd_momentum_from_its_output(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                 B0: tl.constexpr):
    t = tl.load(chunks_ptr + 2 * tl.program_id(0))
    c = tl.load(chunks_ptr + 2 * tl.program_id(0) + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f32 = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(f32) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(f32) + offs, mask=mask)
    m_out = tl.load(addresses_ptr + 4 * K + t).to(f32)
    m = momentum * tl.load(m_out + offs, mask=mask) + g + weight_decay * p  # the new buffer, not the old one
    tl.store(m_out + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f32) + offs, p - lr * m, mask=mask)


@triton.jit
def splitk_read_add_write(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    out = z_ptr + m[:, None] * N + n[None, :]
    om = (m[:, None] < M) & (n[None, :] < N)
    tl.store(out, tl.load(out, mask=om, other=0.0) + acc, mask=om)  # not atomic: parts overwrite each other


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
