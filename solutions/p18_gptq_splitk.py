"""Puzzle 18 reference: split-K GPTQ, 4-bit weights unpacked and dequantized in registers."""

import triton
import triton.language as tl


@triton.jit
def gptq_matmul_kernel(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    # BEGIN SOLUTION
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    m_in, n_in = m < M, n < N
    zero_shift = ((n % FPINT) * 4)[None, :]  # zero points are packed along N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(part * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        k_in = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=m_in[:, None] & k_in[None, :], other=0.0)
        w_in = k_in[:, None] & n_in[None, :]
        # Weights are packed along K: row k is nibble k % 8 of word row k // 8.
        words = tl.load(qweight_ptr + (k // FPINT)[:, None] * N + n[None, :], mask=w_in, other=0)
        q = (words >> ((k % FPINT) * 4)[:, None]) & 0xF
        g = k // G  # each row's group (no act-order: g_idx[k] == k // G)
        scale = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
        zero_words = tl.load(qzeros_ptr + g[:, None] * (N // FPINT) + (n // FPINT)[None, :], mask=w_in, other=0)
        zero = (zero_words >> zero_shift) & 0xF
        # AutoGPTQ stores zero - 1: add the one back. Rows past K have scale 0 and a == 0: they add nothing.
        w = ((q - (zero + 1)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16)
        acc += tl.dot(a, w)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=m_in[:, None] & n_in[None, :])
    # END SOLUTION
