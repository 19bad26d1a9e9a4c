"""More correct kernels in other styles (red-team round 5), beside tests/kernels/correct_kernels.py: sizes declared
tl.constexpr, the output used as scratch, tl.trans, tl.reduce with a combine function of one's own, split-K
shares that are not whole chunks, pointers made with tl.cast or a bitcast."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def add_constexpr_size(x_ptr, z_ptr, N0: tl.constexpr, B0: tl.constexpr):
    off = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.static_assert(B0 >= 8)
    tl.store(z_ptr + off, tl.load(x_ptr + off, mask=off < N0) + 10.0, mask=off < N0)


@triton.jit
def softmax_output_as_scratch(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows[:, None] < N0
    mx = tl.full([B0], -float("inf"), tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin & (cols[None, :] < T), other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, 1))
    s = tl.zeros([B0], tl.float32)
    for j0 in range(0, T, B1):  # exp(x - max) into z, summed on the way
        cols = j0 + tl.arange(0, B1)
        m = rin & (cols[None, :] < T)
        e = tl.exp(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=-float("inf")) - mx[:, None])
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], e, mask=m)
        s += tl.sum(e, 1)
    for j0 in range(0, T, B1):  # then z /= sum, read back from z
        cols = j0 + tl.arange(0, B1)
        m = rin & (cols[None, :] < T)
        e = tl.load(z_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], e / s[:, None], mask=m)


@triton.jit
def sum_constexpr_T(x_ptr, z_ptr, N0, N1, T: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in tl.static_range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        acc += tl.sum(
            tl.load(
                x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0
            ),
            axis=1,
        )
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def dot_transposed(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    b = tl.program_id(2)
    acc = tl.zeros((B1, B0), dtype=tl.float32)  # z transposed
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(
            x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0
        )
        y = tl.load(
            y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0
        )
        acc += tl.dot(tl.trans(y), x.T)
    tl.store(z_ptr + b * N0 * N1 + i[None, :] * N1 + j[:, None], acc, mask=(i[None, :] < N0) & (j[:, None] < N1))


@triton.jit
def bit_or(a, b):
    return a | b


@triton.jit
def pack_reduce_or(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    nib = tl.arange(0, 8)
    m = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(
        x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nib[None, :])[None, :, :], mask=m[:, :, None], other=0
    )
    q = ((x.to(tl.int32) + 8) & 0xF) << (nib * 4)[None, None, :]
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], tl.reduce(q, 2, bit_or), mask=m)


@triton.jit
def unpack_implicit_store_cast(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (k < K)[:, None] & (n < N)[None, :]
    w = tl.load(qweight_ptr + (k >> 3)[:, None] * N + n[None, :], mask=m, other=0)
    tl.store(z_ptr + k[:, None] * N + n[None, :], ((w >> ((k & 7) * 4)[:, None]) & 15) - 8, mask=m)


@triton.jit
def gemv_dtype_branch(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x.to(tl.float32)[:, None] * w, axis=0)
    out = acc * tl.load(scale_ptr + n, mask=n < N, other=0).to(tl.float32)
    if z_ptr.dtype.element_ty == tl.float16:
        tl.store(z_ptr + n, out.to(tl.float16), mask=n < N)
    else:
        tl.store(z_ptr + n, out, mask=n < N)


@triton.jit
def splitk_unaligned_ranges(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    share = tl.cdiv(K, SPLIT_K)  # rows per part, not a multiple of BK
    lo = part * share
    hi = tl.minimum(lo + share, K)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(lo, hi, BK):
        k = k0 + tl.arange(0, BK)
        kin = k < hi
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & kin[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=kin[:, None] & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def splitk_row_interleaved(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    # each part takes rows part, part + SPLIT_K, ... (a strided share of K), BK rows at a time
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for j0 in range(0, tl.cdiv(K, SPLIT_K), BK):
        k = (j0 + tl.arange(0, BK)) * SPLIT_K + part
        kin = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & kin[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=kin[:, None] & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def gptq_like_reference_with_acc_dot(
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
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for r in range(0, tl.cdiv(K, BK * SPLIT_K)):
        k = (r * SPLIT_K + tl.program_id(2)) * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        wm = (k[:, None] < K) & (n[None, :] < N)
        q = (
            tl.load(qweight_ptr + (k[:, None] >> 3) * N + n[None, :], mask=wm, other=0) >> ((k[:, None] & 7) << 2)
        ) & 0xF
        g = k[:, None] // G
        s = tl.load(scales_ptr + g * N + n[None, :], mask=wm, other=0.0)
        z = (tl.load(qzeros_ptr + g * (N >> 3) + (n[None, :] >> 3), mask=wm, other=0) >> ((n[None, :] & 7) << 2)) & 0xF
        w = (q - z - 1).to(tl.float16) * s
        acc = tl.dot(a, w, acc)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.autotune(configs=[triton.Config({"B0": 64}), triton.Config({"B0": 256})], key=["N0"])
@triton.jit
def silu_constexpr_n(x_ptr, y_ptr, z_ptr, N0: tl.constexpr, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(z_ptr + offs, tl.fdiv(x, 1.0 + tl.math.exp(-x)) * tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def sgd_bitcast_pointers(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f32p = tl.pointer_type(tl.float32)
    p_ptr = tl.cast(tl.load(addresses_ptr + t), f32p)
    g_ptr = tl.load(addresses_ptr + K + t).to(f32p, bitcast=True)
    m_ptr = tl.load(addresses_ptr + 2 * K + t).to(f32p)
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    m = (
        momentum * tl.load(m_ptr + offs, mask=mask, other=0.0)
        + tl.load(g_ptr + offs, mask=mask, other=0.0)
        + weight_decay * p
    )
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(f32p) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f32p) + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_constexpr_k(
    addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K: tl.constexpr, lr, momentum, weight_decay, B0: tl.constexpr
):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(f) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(f) + offs, mask=mask)
    m = tl.fma(momentum, tl.load(tl.load(addresses_ptr + 2 * K + t).to(f) + offs, mask=mask), g + weight_decay * p)
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(f) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f) + offs, p - lr * m, mask=mask)


# Puzzle number -> its kernels here.
MORE = {
    2: (add_constexpr_size,),
    7: (sum_constexpr_T,),
    8: (softmax_output_as_scratch,),
    11: (dot_transposed,),
    13: (pack_reduce_or,),
    14: (unpack_implicit_store_cast,),
    15: (gemv_dtype_branch,),
    17: (splitk_unaligned_ranges, splitk_row_interleaved),
    18: (gptq_like_reference_with_acc_dot,),
    20: (silu_constexpr_n,),
    21: (sgd_bitcast_pointers, sgd_constexpr_k),
}
