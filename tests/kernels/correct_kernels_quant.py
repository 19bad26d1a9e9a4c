"""Correct kernels in other styles than the references, for the quantization track (puzzles 12-18) and the
practitioner's first puzzles (19-21): what a learner might paste in. tests/kernels/correct_kernels.py's VARIANTS takes
them in; tests/grading/test_handwritten_kernels.py grades them."""

from __future__ import annotations

import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


# -- 12 -------------------------------------------------------------------------------------------------------
@triton.jit
def quant_dot_per_element(
    scale_ptr,
    offset_ptr,
    weight_ptr,
    activation_ptr,
    z_ptr,
    N0,
    N1,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B_MID: tl.constexpr,
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in tl.range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        rm = (rows < N0)[:, None] & (k < MID)[None, :]
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rm, other=0)
        w = (word >> ((k % 8) * 4)[None, :]) & 0xF
        g = k // 8
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + g[None, :], mask=rm, other=0.0)
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (g // 8)[None, :], mask=rm, other=0)
        sh = (sw >> ((g % 8) * 4)[None, :]) & 0xF
        deq = sc * (w - sh).to(tl.float32)
        act = tl.load(
            activation_ptr + k[:, None] * N1 + cols[None, :], mask=(k < MID)[:, None] & (cols < N1)[None, :], other=0.0
        )
        acc = tl.dot(deq, act, acc)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])


@triton.jit
def quant_dot_sum_not_dot(
    scale_ptr,
    offset_ptr,
    weight_ptr,
    activation_ptr,
    z_ptr,
    N0,
    N1,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B_MID: tl.constexpr,
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=(rows < N0)[:, None])
        nib = (word >> ((k % 8) * 4)[None, :]) & 0xF
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=(rows < N0)[:, None])
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (k // 64)[None, :], mask=(rows < N0)[:, None])
        sh = (sw >> (((k // 8) % 8) * 4)[None, :]) & 0xF
        deq = sc * (nib - sh)
        act = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=(cols < N1)[None, :])
        acc += tl.sum(deq[:, :, None] * act[None, :, :], axis=1)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])


# -- 13 -------------------------------------------------------------------------------------------------------
@triton.jit
def pack_loop_over_nibbles(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    mask = (rows[:, None] < N0) & (words[None, :] * 8 < N1)
    packed = tl.zeros((B0, B1 // 8), dtype=tl.int32)
    for n in tl.static_range(8):
        v = tl.load(x_ptr + rows[:, None] * N1 + words[None, :] * 8 + n, mask=mask, other=0)
        packed |= ((v.to(tl.int32) + 8) & 0xF) << (4 * n)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=mask)


@triton.jit
def pack_reshape_uint32(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    m = (rows[:, None] < N0) & (cols[None, :] < N1)
    x = tl.load(x_ptr + rows[:, None] * N1 + cols[None, :], mask=m, other=0)
    nib = (x.to(tl.uint32) + 8) & 0xF
    shifted = nib << ((cols % 8) * 4).to(tl.uint32)[None, :]
    words = tl.sum(tl.reshape(shifted, (B0, B1 // 8, 8)), axis=2)
    wcol = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    tl.store(
        z_ptr + rows[:, None] * (N1 // 8) + wcol[None, :],
        words.to(tl.int32, bitcast=True),
        mask=(rows[:, None] < N0) & (wcol[None, :] < N1 // 8),
    )


# -- 14 -------------------------------------------------------------------------------------------------------
@triton.jit
def unpack_logical_shift(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (k[:, None] < K) & (n[None, :] < N)
    w = tl.load(qweight_ptr + (k[:, None] // 8) * N + n[None, :], mask=mask, other=0).to(tl.uint32, bitcast=True)
    q = ((w >> (4 * (k[:, None] % 8)).to(tl.uint32)) & 0xF).to(tl.int32) - 8
    tl.store(z_ptr + k[:, None] * N + n[None, :], q.to(z_ptr.dtype.element_ty), mask=mask)


@triton.jit
def unpack_words_once(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    wr = tl.program_id(0) * (BK // 8) + tl.arange(0, BK // 8)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (wr[:, None] < K // 8) & (n[None, :] < N)
    words = tl.load(qweight_ptr + wr[:, None] * N + n[None, :], mask=m, other=0)
    shifts = tl.arange(0, 8) * 4
    q = (words[:, None, :] >> shifts[None, :, None]) & 0xF  # BK/8 x 8 x BN
    k = wr[:, None, None] * 8 + tl.arange(0, 8)[None, :, None]
    tl.store(z_ptr + k * N + n[None, None, :], (q - 8).to(tl.int8), mask=m[:, None, :])


# -- 15 -------------------------------------------------------------------------------------------------------
@triton.jit
def gemv_scale_in_loop(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    s = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    acc = tl.zeros((BK, BN), dtype=tl.float32)
    for k0 in tl.range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0)
        acc += x.to(tl.float32)[:, None] * w.to(tl.float32) * s[None, :]
    tl.store(z_ptr + n, tl.sum(acc, axis=0).to(tl.float16), mask=n < N)


@triton.jit
def gemv_where_masks(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    n = pid * BN + tl.arange(0, BN)
    acc = tl.zeros((BN,), dtype=tl.float32)
    k0 = 0
    while k0 < K:
        k = k0 + tl.arange(0, BK)
        km = k < K
        x = tl.where(km, tl.load(x_ptr + k, mask=km), 0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=km[:, None] & (n < N)[None, :])
        acc += tl.sum(tl.where(km[:, None], x[:, None] * w, 0.0), axis=0)
        k0 += BK
    scale = tl.load(scale_ptr + n, mask=n < N)
    tl.store(z_ptr + n, (acc * scale.to(tl.float32)).to(z_ptr.dtype.element_ty), mask=n < N)


# -- 16 -------------------------------------------------------------------------------------------------------
@triton.jit
def grouped_order_triton_tutorial(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    tl.store(z_ptr + pid * 2 + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, pid_m, pid_n))


@triton.jit
def grouped_order_swizzle2d(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    i = pid // tiles_n
    j = pid % tiles_n
    i2, j2 = tl.swizzle2d(i, j, tiles_m, tiles_n, GROUP_M)
    tl.store(z_ptr + 2 * pid, i2)
    tl.store(z_ptr + 2 * pid + 1, j2)


# -- 17 -------------------------------------------------------------------------------------------------------
@triton.jit
def splitk_contiguous_ranges(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    m = pid_m * BM + tl.arange(0, BM)
    n = pid_n * BN + tl.arange(0, BN)
    chunks = tl.cdiv(K, BK)
    per_part = tl.cdiv(chunks, SPLIT_K)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for c in range(pid_k * per_part, tl.minimum((pid_k + 1) * per_part, chunks)):
        k = c * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N), sem="relaxed")


@triton.jit
def splitk_tutorial_style(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    pid_k = tl.program_id(2)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = pid_k * BK + tl.arange(0, BK)
    A = a_ptr + rm[:, None] * K + rk[None, :]
    B = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK * SPLIT_K)):
        k_remaining = K - k * (BK * SPLIT_K)
        a = tl.load(A, mask=(rk[None, :] < k_remaining) & (rm[:, None] < M), other=0.0)
        b = tl.load(B, mask=(rk[:, None] < k_remaining) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        A += BK * SPLIT_K
        B += BK * SPLIT_K * N
    tl.atomic_add(z_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# -- 18 -------------------------------------------------------------------------------------------------------
@triton.jit
def gptq_float32_weights(
    a_ptr,
    qweight_ptr,
    scales_ptr,
    qzeros_ptr,
    z_ptr,
    M,
    N,
    K,
    G,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    num_chunks = tl.cdiv(K, BK)
    c = tl.program_id(2)
    while c < num_chunks:
        k = c * BK + tl.arange(0, BK)
        mk = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & mk[None, :], other=0.0)
        wm = mk[:, None] & (n[None, :] < N)
        qw = tl.load(qweight_ptr + (k[:, None] // 8) * N + n[None, :], mask=wm, other=0)
        q = (qw >> (4 * (k[:, None] % 8))) & 15
        g = k[:, None] // G
        sc = tl.load(scales_ptr + g * N + n[None, :], mask=wm, other=0.0).to(tl.float32)
        zw = tl.load(qzeros_ptr + g * (N // 8) + n[None, :] // 8, mask=wm, other=0)
        zp = ((zw >> (4 * (n[None, :] % 8))) & 15) + 1
        w = (q - zp).to(tl.float32) * sc
        acc += tl.dot(a.to(tl.float32), w, input_precision="ieee")
        c += SPLIT_K
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


# -- 19 -------------------------------------------------------------------------------------------------------
@triton.jit
def grey_channel_loop(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    ok = (j < N1)[:, None] & (i < N0)[None, :]
    acc = tl.zeros((B1, B0), dtype=tl.float32)
    for c in tl.static_range(3):
        wgt = 0.2989 if c == 0 else (0.5870 if c == 1 else 0.1140)
        v = tl.load(x_ptr + j[:, None] * S1 + i[None, :] * S0 + c * SC, mask=ok, other=0)
        acc += wgt * v.to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], acc, mask=ok)


@triton.jit
def grey_3d_block(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    c = tl.arange(0, 4)  # 3 channels, padded to a power of two
    ok = (j < N1)[:, None, None] & (i < N0)[None, :, None] & (c < 3)[None, None, :]
    px = tl.load(x_ptr + j[:, None, None] * S1 + i[None, :, None] * S0 + c[None, None, :] * SC, mask=ok, other=0)
    w = tl.where(c == 0, 0.2989, tl.where(c == 1, 0.5870, tl.where(c == 2, 0.1140, 0.0)))
    grey = tl.sum(px.to(tl.float32) * w[None, None, :], axis=2)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], grey, mask=(j < N1)[:, None] & (i < N0)[None, :])


# -- 20 -------------------------------------------------------------------------------------------------------
@triton.autotune(configs=[triton.Config({"B0": 64}), triton.Config({"B0": 256}, num_warps=4, num_stages=2)], key=["N0"])
@triton.jit
def silu_mul_exp(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(z_ptr + offs, x / (1.0 + tl.exp(-x)) * y, mask=m)


@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=4), triton.Config({"B0": 512}, num_warps=8)], key=["N0"])
@triton.jit
def silu_mul_grid_stride(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    if pid * B0 >= N0:
        return
    offs = pid * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m)
    sig = 1.0 / (1.0 + tl.exp2(-x * LOG2E))
    tl.store(z_ptr + offs, x * sig * tl.load(y_ptr + offs, mask=m), mask=m)


# -- 21 -------------------------------------------------------------------------------------------------------
@triton.jit
def sgd_int64_addresses(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    tensor = tl.load(chunks_ptr + pid * 2)
    chunk = tl.load(chunks_ptr + pid * 2 + 1)
    numel = tl.load(numels_ptr + tensor)
    offs = chunk * B0 + tl.arange(0, B0)
    mask = offs < numel
    p_addr = tl.load(addresses_ptr + tensor)
    g_addr = tl.load(addresses_ptr + K + tensor)
    m_addr = tl.load(addresses_ptr + 2 * K + tensor)
    po_addr = tl.load(addresses_ptr + 3 * K + tensor)
    mo_addr = tl.load(addresses_ptr + 4 * K + tensor)
    p = tl.load(p_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    g = tl.load(g_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    mom = tl.load(m_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    g = g + weight_decay * p
    mom = momentum * mom + g
    tl.store(mo_addr.to(tl.pointer_type(tl.float32)) + offs, mom, mask=mask)
    tl.store(po_addr.to(tl.pointer_type(tl.float32)) + offs, p - lr * mom, mask=mask)


@triton.jit
def _sgd_step(p, g, m, lr, momentum, weight_decay):
    m = momentum * m + g + weight_decay * p
    return p - lr * m, m


@triton.jit
def sgd_helper_early_return(
    addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr
):
    t = tl.load(chunks_ptr + 2 * tl.program_id(0))
    c = tl.load(chunks_ptr + 2 * tl.program_id(0) + 1)
    n = tl.load(numels_ptr + t)
    if c * B0 >= n:
        return
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    ptr_ty = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(ptr_ty) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(ptr_ty) + offs, mask=mask)
    m = tl.load(tl.load(addresses_ptr + 2 * K + t).to(ptr_ty) + offs, mask=mask)
    p_new, m_new = _sgd_step(p, g, m, lr, momentum, weight_decay)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(ptr_ty) + offs, p_new, mask=mask)
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(ptr_ty) + offs, m_new, mask=mask)


VARIANTS = {
    12: (quant_dot_per_element, quant_dot_sum_not_dot),
    13: (pack_loop_over_nibbles, pack_reshape_uint32),
    14: (unpack_logical_shift, unpack_words_once),
    15: (gemv_scale_in_loop, gemv_where_masks),
    16: (grouped_order_triton_tutorial, grouped_order_swizzle2d),
    17: (splitk_contiguous_ranges, splitk_tutorial_style),
    18: (gptq_float32_weights,),
    19: (grey_channel_loop, grey_3d_block),
    20: (silu_mul_exp, silu_mul_grid_stride),
    21: (sgd_int64_addresses, sgd_helper_early_return),
}
