"""Puzzle 17 reference: each program reduces every SPLIT_K-th chunk of K and atomically adds its tile."""

import triton
import triton.language as tl


@triton.jit
def splitk_matmul_kernel(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         SPLIT_K: tl.constexpr):
    # BEGIN SOLUTION
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)  # which share of K this program reduces
    m_in, n_in = m < M, n < N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # Chunks part, part + SPLIT_K, ...: the loop simply runs once less for the parts past K's end.
    for k0 in range(part * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        k_in = k < K  # the last chunk may be ragged: what lies past K must add nothing
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=m_in[:, None] & k_in[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & n_in[None, :], other=0.0)
        acc += tl.dot(a, b)
    # z starts at zero; every part adds its partial tile, and the atomics keep concurrent adds apart.
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=m_in[:, None] & n_in[None, :])
    # END SOLUTION
