"""Known-wrong kernels of the matmul family (puzzles 11, 12, 16, 17, 18): a block written as a number, blocks
mixed up, one tile row assumed (the second and fourth red teams). tests/grading/test_judging_holes_matmuls.py checks
each fails for its own reason; the other wrong kernels: tests/kernels/wrong_kernels.py."""

import triton
import triton.language as tl

from solutions.p11_batched_matmul import dot_kernel as _dot
from solutions.p12_quantized_matmul import quant_dot_kernel as _quant_dot
from solutions.p17_splitk_matmul import splitk_matmul_kernel as _splitk
from solutions.p18_gptq_splitk import gptq_matmul_kernel as _gptq


@triton.jit
def dot_kernel_rows_of_16(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                          B2: tl.constexpr, B_MID: tl.constexpr):
    _dot(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, 16, B1, B2, B_MID)



@triton.jit
def quant_dot_kernel_columns_of_16(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                                   B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, 16, B_MID)



@triton.jit
def quant_dot_kernel_one_shift_word_per_chunk(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1,
                                              MID, B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    """Puzzle 12 loading one shift word per row and chunk (word k0 // 64): right only when B_MID is 64."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rows_in[:, None], other=0)
        w = (words >> ((k % 8) * 4)[None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rows_in[:, None], other=0.0)
        shift_word = tl.load(offset_ptr + rows * (MID // 64) + k0 // 64, mask=rows_in, other=0)
        shift = (shift_word[:, None] >> (((k // 8) % 8) * 4)[None, :]) & 0xF
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        acc += tl.dot(scale * (w - shift).to(tl.float32), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])



@triton.jit
def splitk_matmul_kernel_rows_of_16(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk(a_ptr, b_ptr, z_ptr, M, N, K, 16, BN, BK, SPLIT_K)



@triton.jit
def gptq_matmul_kernel_rows_of_16(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, BM: tl.constexpr,
                                  BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _gptq(a_ptr, qweight_ptr, scales_ptr, qzeros_ptr, z_ptr, M, N, K, G, 16, BN, BK, SPLIT_K)



@triton.jit
def grouped_order_kernel_position_from_pid(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """Puzzle 16 taking the tile row from `pid % rows` instead of the position in the band, `pid % (GROUP_M * TN)`:
    the same in every full band (GROUP_M divides the band's first pid) and in a short band of one row."""
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    per_band = GROUP_M * tiles_n
    first_m = (pid // per_band) * GROUP_M
    rows = tl.minimum(tl.cdiv(M, BM) - first_m, GROUP_M)
    tl.store(z_ptr + 2 * pid, first_m + pid % rows)
    tl.store(z_ptr + 2 * pid + 1, (pid % per_band) // rows)



@triton.jit
def dot_kernel_steps_by_b0(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                           B2: tl.constexpr, B_MID: tl.constexpr):
    """Puzzle 11 stepping MID by B0 while its chunks are B_MID wide: chunks overlap wherever B0 < B_MID."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    batch = tl.program_id(2)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B0):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + batch * N0 * MID + i[:, None] * MID + k[None, :],
                    mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_ptr + batch * MID * N1 + k[:, None] * N1 + j[None, :],
                    mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))



@triton.jit
def quant_dot_kernel_first_group_from_the_words_per_chunk(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr,
                                                         N0, N1, MID, B0: tl.constexpr, B1: tl.constexpr,
                                                         B_MID: tl.constexpr):
    """Puzzle 12 with the chunk's first group at k0 // (B_MID // 8) (its words per chunk) instead of k0 // 8:
    the same where B_MID is 64 or MID is one chunk."""
    WORDS: tl.constexpr = B_MID // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        group = k0 // WORDS + tl.arange(0, WORDS)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=rows_in[:, None], other=0)
        w = (words[:, :, None] >> (tl.arange(0, 8) * 4)[None, None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=rows_in[:, None], other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (group // 8)[None, :], mask=rows_in[:, None],
                              other=0)
        shift = (shift_words >> ((group % 8) * 4)[None, :]) & 0xF
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])



@triton.jit
def splitk_matmul_kernel_rows_from_bn(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                      BK: tl.constexpr, SPLIT_K: tl.constexpr):
    """Puzzle 17 with the tile's first row at tl.program_id(0) * BN: right wherever BM = BN."""
    m = tl.program_id(0) * BN + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))



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
