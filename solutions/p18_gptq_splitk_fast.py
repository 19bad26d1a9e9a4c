"""Puzzle 18, fast reference: each word loaded once, and one row of scales and zero points per chunk.

Same signature, grid, split of K and result as solutions/p18_gptq_splitk.py. Two changes:
- The teaching reference builds each of the BK x BN weights from its own loads: its word (each word 8
  times), its scale and its zero point (the same row of them BK times when the chunk lies in one group).
  Here the BK/8 x BN words are loaded once and unpacked with a broadcast shift (a BK/8 x 8 x BN tile,
  nibble n of word row r being row 8r + n of the chunk, reshaped to BK x BN).
- A chunk whose rows all fall in one group (always, when BK divides G, as with real checkpoints' G = 128)
  loads that group's BN scales and BN/8 zero-point words once, as one row, broadcast over the chunk;
  only a chunk that straddles groups looks them up row by row.
The dequantization is done in fp16 ((q - zero - 1) is a small integer, exact in fp16, and its product
with an fp16 scale is rounded once, as the reference's float32 product rounded to fp16 is).
"""

import triton
import triton.language as tl


@triton.jit
def gptq_matmul_kernel(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    WORDS: tl.constexpr = BK // FPINT  # word rows per chunk
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    m_in, n_in = m < M, n < N
    zero_shift = (n % FPINT) * 4  # zero points are packed along N
    nibble_shift = tl.arange(0, FPINT) * 4
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(part * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        k_in = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=m_in[:, None] & k_in[None, :], other=0.0)
        word_row = k0 // FPINT + tl.arange(0, WORDS)
        words = tl.load(qweight_ptr + word_row[:, None] * N + n[None, :],
                        mask=(word_row < K // FPINT)[:, None] & n_in[None, :], other=0)
        q = tl.reshape((words[:, None, :] >> nibble_shift[None, :, None]) & 0xF, (BK, BN))
        group = k0 // G
        if group == (k0 + BK - 1) // G:  # the whole chunk in one group: one row of scales and zero points
            scale = tl.load(scales_ptr + group * N + n, mask=n_in, other=0.0)
            zero = (tl.load(qzeros_ptr + group * (N // FPINT) + n // FPINT, mask=n_in, other=0) >> zero_shift) & 0xF
            w = (q - (zero + 1)[None, :]).to(tl.float16) * scale[None, :]
        else:  # rows of two or more groups: each row's own
            w_in = k_in[:, None] & n_in[None, :]
            g = k // G
            scales = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
            zero_words = tl.load(qzeros_ptr + g[:, None] * (N // FPINT) + (n // FPINT)[None, :], mask=w_in, other=0)
            w = (q - (((zero_words >> zero_shift[None, :]) & 0xF) + 1)).to(tl.float16) * scales
        acc += tl.dot(a, w)  # rows past K: a is 0 there, so they add nothing
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=m_in[:, None] & n_in[None, :])
