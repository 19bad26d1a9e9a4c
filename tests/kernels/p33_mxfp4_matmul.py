"""Puzzle 33 (block-scaled MXFP4 matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists right answers in other styles than the reference (bytes loaded once and split with tl.join, the
e2m1 table as a chain of tl.where, the e8m0 scale as float32 exponent bits). `CORRECT_WITH_DOT_SCALED` is right
where the interpreter runs tl.dot_scaled (Triton 3.8 on). `SLOW` is right but multiplies without tl.dot. The others
are graded in tests/course/test_mxfp4_track.py, each failing for the reason its docstring gives; most are the
reference's decode (`decoded_tile`) with one slip switched on."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def decoded_tile(w_ptr, scale_ptr, k, n, K, N, LOW_FIRST: tl.constexpr, BIAS: tl.constexpr, SIGNED: tl.constexpr,
                 SCALES_N_MAJOR: tl.constexpr):
    """The BK × BN float16 weights of rows k and columns n, each loaded for its own element; the flags are slips."""
    w_in = (k < K)[:, None] & (n < N)[None, :]
    packed = tl.load(w_ptr + (k // 2)[:, None] * N + n[None, :], mask=w_in, other=0)
    shift = (k % 2) * 4 if LOW_FIRST else (1 - k % 2) * 4
    code = (packed >> shift[:, None]) & 0xF
    exponent = (code >> 1) & 0x3
    mantissa = (code & 0x1).to(tl.float32)
    magnitude = tl.where(exponent == 0, mantissa * 0.5, (1 << exponent).to(tl.float32) * 0.5 * (1.0 + mantissa * 0.5))
    value = tl.where(((code & 0x8) != 0) & SIGNED, -magnitude, magnitude)
    if SCALES_N_MAJOR:
        s = tl.load(scale_ptr + n[None, :] * (K // 32) + (k // 32)[:, None], mask=w_in, other=127)
    else:
        s = tl.load(scale_ptr + (k // 32)[:, None] * N + n[None, :], mask=w_in, other=127)
    return (value * tl.exp2(s.to(tl.float32) - BIAS)).to(tl.float16)


@triton.jit
def matmul_decoding(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    LOW_FIRST: tl.constexpr, BIAS: tl.constexpr, SIGNED: tl.constexpr, SCALES_N_MAJOR: tl.constexpr):
    """The reference's loop over K with decoded_tile's weights."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        acc += tl.dot(x, decoded_tile(w_ptr, scale_ptr, k, n, K, N, LOW_FIRST, BIAS, SIGNED, SCALES_N_MAJOR))
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def e2m1_by_table(code):
    """The 16-entry table as a chain of selects on the magnitude code, then the sign."""
    magnitude_code = code & 0x7
    magnitude = tl.where(magnitude_code == 1, 0.5, 0.0)
    magnitude = tl.where(magnitude_code == 2, 1.0, magnitude)
    magnitude = tl.where(magnitude_code == 3, 1.5, magnitude)
    magnitude = tl.where(magnitude_code == 4, 2.0, magnitude)
    magnitude = tl.where(magnitude_code == 5, 3.0, magnitude)
    magnitude = tl.where(magnitude_code == 6, 4.0, magnitude)
    magnitude = tl.where(magnitude_code == 7, 6.0, magnitude)
    return tl.where(code >= 8, -magnitude, magnitude)


@triton.jit
def mxfp4_bytes_once(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Right: each chunk's BK/2 × BN bytes loaded once, their two nibbles joined and interleaved into BK rows; the
    e2m1 table as selects; one BK/32 × BN row of scales per chunk, each made a float32 by its exponent bits
    (s << 23 is 2^(s − 127) for s >= 1; the quantizer's scales are) and broadcast over its 32 rows."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        rows = k0 // 2 + tl.arange(0, BK // 2)
        packed = tl.load(w_ptr + rows[:, None] * N + n[None, :], mask=(rows[:, None] < K // 2) & (n[None, :] < N),
                         other=0)
        pairs = tl.join(packed & 0xF, packed >> 4)  # BK/2 × BN × 2: (row 2j, row 2j + 1)
        codes = tl.reshape(tl.permute(pairs, (0, 2, 1)), (BK, BN))
        blocks = k0 // 32 + tl.arange(0, BK // 32)
        s = tl.load(scale_ptr + blocks[:, None] * N + n[None, :], mask=(blocks[:, None] < K // 32) & (n[None, :] < N),
                    other=127)
        multiplier = (s.to(tl.int32) << 23).to(tl.float32, bitcast=True)
        per_row = tl.reshape(tl.broadcast_to(multiplier[:, None, :], (BK // 32, 32, BN)), (BK, BN))
        acc += tl.dot(x, (e2m1_by_table(codes.to(tl.int32)) * per_row).to(tl.float16))
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_dot_scaled(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Right where the interpreter runs tl.dot_scaled (3.8 on): the packed bytes as they are, the scales loaded
    BN × BK/32 (dot_scaled's layout for its right-hand side, transposed from the puzzle's K/32 × N)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        rows = k0 // 2 + tl.arange(0, BK // 2)
        packed = tl.load(w_ptr + rows[:, None] * N + n[None, :], mask=(rows[:, None] < K // 2) & (n[None, :] < N),
                         other=0)
        blocks = k0 // 32 + tl.arange(0, BK // 32)
        s = tl.load(scale_ptr + blocks[None, :] * N + n[:, None], mask=(blocks[None, :] < K // 32) & (n[:, None] < N),
                    other=127)
        acc = tl.dot_scaled(x, None, "fp16", packed, s, "e2m1", acc)  # DOT_SCALED
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_dot_scaled_scales_as_stored(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                      BK: tl.constexpr):
    """Wrong (where tl.dot_scaled runs): the scale tile passed BK/32 × BN, as the puzzle stores it; dot_scaled wants
    BN × BK/32 for its right-hand side, and refuses the shape."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        rows = k0 // 2 + tl.arange(0, BK // 2)
        packed = tl.load(w_ptr + rows[:, None] * N + n[None, :], mask=(rows[:, None] < K // 2) & (n[None, :] < N),
                         other=0)
        blocks = k0 // 32 + tl.arange(0, BK // 32)
        s = tl.load(scale_ptr + blocks[:, None] * N + n[None, :], mask=(blocks[:, None] < K // 32) & (n[None, :] < N),
                    other=127)
        acc = tl.dot_scaled(x, None, "fp16", packed, s, "e2m1", acc)  # SCALES_AS_STORED
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_without_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    """Right but slow: the products summed with a broadcast multiply and tl.sum on the CUDA cores, not tl.dot."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = decoded_tile(w_ptr, scale_ptr, k, n, K, N, True, 127.0, True, False)
        acc += tl.sum(x.to(tl.float32)[:, :, None] * w.to(tl.float32)[None, :, :], axis=1)
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_nibbles_swapped(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """Wrong: row 2j read from the high nibble."""
    matmul_decoding(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, False, 127.0, True, False)


@triton.jit
def mxfp4_scale_without_bias(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    """Wrong: the multiplier 2^s, the bias forgotten (float16 overflows to inf)."""
    matmul_decoding(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, True, 0.0, True, False)


@triton.jit
def mxfp4_sign_ignored(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """Wrong: bit 3 of the code never negates."""
    matmul_decoding(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, True, 127.0, False, False)


@triton.jit
def mxfp4_scales_n_major(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    """Wrong: the scales read at n · (K/32) + k // 32, dot_scaled's layout, on the puzzle's K/32 × N tensor."""
    matmul_decoding(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, True, 127.0, True, True)


@triton.jit
def mxfp4_k_unmasked(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Wrong: the last chunk's rows past K are loaded unmasked (K need not be a multiple of BK)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=m[:, None] < M, other=0.0)  # UNMASKED_LINE
        acc += tl.dot(x, decoded_tile(w_ptr, scale_ptr, k, n, K, N, True, 127.0, True, False))
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


CORRECT = (mxfp4_bytes_once,)
CORRECT_WITH_DOT_SCALED = (mxfp4_dot_scaled,)  # where the interpreter runs tl.dot_scaled (Triton 3.8 on)
SLOW = (mxfp4_without_dot,)
BUILDING_BLOCKS = (decoded_tile, matmul_decoding, e2m1_by_table)  # helpers, never graded themselves
