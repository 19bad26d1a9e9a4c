"""Puzzle 18 (gptq splitk): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

from solutions.p18_gptq_splitk import gptq_matmul_kernel as _gptq

# -- right answers in other styles than the reference ---------------------------------------------------------------

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



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def gptq_matmul_kernel_rows_of_16(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                                  BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, 16, BN, BK, SPLIT_K)


@triton.jit
def gptq_matmul_kernel_one_tile_row(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G,
                                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    """Puzzle 18 assuming the tokens fit one tile (`m = tl.arange(0, BM)`, M <= BM, as in decoding)."""
    m = tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m_in, n_in = m < M, n < N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        w_in = (k < K)[:, None] & n_in[None, :]
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=m_in[:, None] & (k < K)[None, :], other=0.0)
        words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=w_in, other=0)
        q = (words >> ((k % 8) * 4)[:, None]) & 0xF
        g = k // G
        scale = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
        zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
        zero = (zero_words >> ((n % 8) * 4)[None, :]) & 0xF
        acc += tl.dot(a, ((q - (zero + 1)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16))
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=m_in[:, None] & n_in[None, :])



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def _gptq_body_of_hole(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr, GROUP_PER_CHUNK: tl.constexpr,
                       PART_ZERO_ALL: tl.constexpr):
    """Puzzle 18 with a loop over rounds (not the reference's strided range); one mistake per flag.

    GROUP_PER_CHUNK: the group of row k0 + j taken as k0 // G + j // G (right only when G divides BK);
    PART_ZERO_ALL: part 0 reduces all of K and adds it, the other parts do nothing."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    rounds = tl.cdiv(K, BK * SPLIT_K)
    step = SPLIT_K
    if PART_ZERO_ALL:
        rounds = tl.cdiv(K, BK) * (part == 0)
        step = 1
    for r in range(0, rounds):
        k0 = (r * step + part * (1 - PART_ZERO_ALL)) * BK
        j = tl.arange(0, BK)
        k = k0 + j
        k_in = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & k_in[None, :], other=0.0)
        w_in = k_in[:, None] & (n < N)[None, :]
        words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=w_in, other=0)
        q = (words >> ((k % 8) * 4)[:, None]) & 0xF
        if GROUP_PER_CHUNK:
            g = k0 // G + j // G
        else:
            g = k // G
        scale = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
        zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
        zero = (zero_words >> ((n % 8) * 4)[None, :]) & 0xF
        w = ((q - (zero + 1)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16)
        acc = tl.dot(a, w, acc)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def gptq_group_per_chunk(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                         BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body_of_hole(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, True, False)


@triton.jit
def gptq_in_rounds(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                   BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body_of_hole(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, False, False)


@triton.jit
def gptq_part_zero_does_all(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                            BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body_of_hole(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, False, True)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, SPLIT_K: tl.constexpr, PLUS_ONE: tl.constexpr, ZEROS_ALONG_N: tl.constexpr,
               MASK_K: tl.constexpr, GROUP_OF: tl.constexpr):
    """The reference with one mistake switched on by a flag (kept in one place so only the flag differs)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        if MASK_K:
            k_in = k < K
        else:  # the ragged last chunk reads past K
            k_in = k >= 0
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & k_in[None, :], other=0.0)
        w_in = k_in[:, None] & (n < N)[None, :]
        words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=w_in, other=0)
        q = (words >> ((k % 8) * 4)[:, None]) & 0xF
        if GROUP_OF == 1:  # a group of 64 rows, whatever G is
            g = k // 64
        elif GROUP_OF == 2:  # the chunk's first row's group for every row of the chunk
            g = tl.zeros([BK], dtype=tl.int32) + k0 // G
        else:
            g = k // G
        scale = tl.load(scales_ptr + g[:, None] * N + n[None, :], mask=w_in, other=0.0)
        if ZEROS_ALONG_N:
            zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
            zero = (zero_words >> ((n % 8) * 4)[None, :]) & 0xF
        else:  # treats qzeros like qweight: the nibble chosen by k, not by n
            zero_words = tl.load(qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :], mask=w_in, other=0)
            zero = (zero_words >> ((k % 8) * 4)[:, None]) & 0xF
        w = ((q - (zero + PLUS_ONE)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16)
        acc += tl.dot(a, w)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def gptq_without_plus_one(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 0, True, True, 0)


@triton.jit
def gptq_zeros_packed_along_k(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K,
               1, False, True, 0)


@triton.jit
def gptq_without_k_mask(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K,
               1, True, False, 0)


@triton.jit
def gptq_group_of_64(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                     BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 1, True, True, 1)


@triton.jit
def gptq_group_of_chunk_start(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq_body(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM, BN, BK, SPLIT_K, 1, True, True, 2)


CORRECT = (gptq_like_reference_with_acc_dot, gptq_float32_weights)
