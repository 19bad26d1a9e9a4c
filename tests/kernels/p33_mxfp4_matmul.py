"""Puzzle 33 (block-scaled MXFP4 matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists right answers in other styles than the reference (bytes loaded once and split with tl.join, the
e2m1 table as a chain of tl.where, the e8m0 scale as float32 exponent bits). `FAST_LEVERS` are the fast reference's
changes each alone and `FAST_SETTINGS` the fast reference with other trips, stages and decodes (timed by
benchmarks/p33_variants.py). `CORRECT_WITH_DOT_SCALED` is right
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


@triton.jit
def e2m1_arithmetic(code):
    """The teaching reference's decode: 0.5 · m for exponent 0, else 2^(e − 1) · (1 + m/2); bit 3 negates (float32)."""
    exponent = (code >> 1) & 0x3
    mantissa = (code & 0x1).to(tl.float32)
    magnitude = tl.where(exponent == 0, mantissa * 0.5, (1 << exponent).to(tl.float32) * 0.5 * (1.0 + mantissa * 0.5))
    return tl.where((code & 0x8) != 0, -magnitude, magnitude)


@triton.jit
def e2m1_gathered(code, BN: tl.constexpr):
    """Codes 0..15 looked up in a 16-row float16 table (the table made by e2m1_arithmetic, gathered along axis 0)."""
    table = tl.broadcast_to(e2m1_arithmetic(tl.arange(0, 16)).to(tl.float16)[:, None], (16, BN))
    return tl.gather(table, code.to(tl.int32), 0)


@triton.jit
def blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr, TRIPS: tl.constexpr, STAGES: tl.constexpr, DECODE: tl.constexpr):
    """The fast reference's loop with its settings as flags: TRIPS chunks of BK rows a trip, tl.range with STAGES
    stages, DECODE 0 its float16 bits times 2^14, 1 the bits alone (float16 subnormals into the dot, the 2^14 moved
    into the multiplier), 2 a lookup in a 16-entry table (tl.gather). TRIPS 2, STAGES 4, DECODE 0 is the fast
    reference (solutions/p33_mxfp4_matmul_fast.py); the other settings below were timed against TRIPS 1, STAGES 3."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    n_in = n < N
    byte_row = tl.arange(0, 16)
    w_block = w_ptr + byte_row[:, None] * N + n[None, :]
    w_in = tl.broadcast_to(n_in[None, :], (16, BN))  # every byte row of a block is inside K (see kb)
    x_block = x_ptr + tl.minimum(m, M - 1)[:, None] * K + tl.arange(0, 32)[None, :]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, TRIPS * BK, num_stages=STAGES):
        for b in tl.static_range(TRIPS * BK // 32):
            kb = tl.minimum(k0 + 32 * b, K - 32)
            packed = tl.load(w_block + (kb // 2) * N, mask=w_in, other=0).to(tl.uint16)
            x_even, x_odd = tl.split(tl.reshape(tl.load(x_block + kb), (BM, 16, 2)))
            if DECODE == 2:
                low = e2m1_gathered(packed & 0xF, BN)
                high = e2m1_gathered(packed >> 4, BN)
            else:
                low = (((packed & 0x7) << 9) | ((packed & 0x8) << 12)).to(tl.float16, bitcast=True)
                high = (((packed & 0x70) << 5) | ((packed & 0x80) << 8)).to(tl.float16, bitcast=True)
                if DECODE == 0:
                    low = low * 16384.0
                    high = high * 16384.0
            block_sum = tl.dot(x_odd, high, tl.dot(x_even, low))
            s = tl.load(scale_ptr + (kb // 32) * N + n, mask=n_in, other=127).to(tl.float32)
            multiplier = tl.exp2(s - 113.0) if DECODE == 1 else tl.exp2(s - 127.0)
            acc += block_sum * tl.where(k0 + 32 * b < K, multiplier, 0.0)[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m < M)[:, None] & n_in[None, :])


@triton.jit
def mxfp4_fast_two_chunks(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """Right: the fast reference with 2 × BK rows of K a trip, 3 stages."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 2, 3, 0)


@triton.jit
def mxfp4_fast_four_stages(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """Right: the fast reference with tl.range(num_stages=4)."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 1, 4, 0)


@triton.jit
def mxfp4_fast_two_chunks_four_stages(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                      BK: tl.constexpr):
    """Right: the fast reference with 2 × BK rows a trip and 4 stages."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 2, 4, 0)


@triton.jit
def mxfp4_fast_unpipelined(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """Right: the fast reference with tl.range(num_stages=1), each chunk's loads waited for before it is decoded."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 1, 1, 0)


@triton.jit
def mxfp4_fast_subnormals_into_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                   BK: tl.constexpr):
    """Right (where the tensor cores keep float16 subnormals): the codes' float16 bits go to tl.dot as they are, the
    value times 2^-14, and the block's multiplier is 2^(s − 113)."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 1, 3, 1)


@triton.jit
def mxfp4_fast_table_lookup(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr):
    """Right: the fast reference decoding through a 16-entry table with tl.gather instead of bits."""
    blocks_scaled_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM, BN, BK, 1, 3, 2)


@triton.jit
def mxfp4_decode_by_bits(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    """Right: the teaching reference with the fast one's decode alone (each byte still loaded for each of its
    nibbles, each weight scaled): the code's bits placed in a float16, times 2^14."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        w_in = (k < K)[:, None] & (n < N)[None, :]
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        packed = tl.load(w_ptr + (k // 2)[:, None] * N + n[None, :], mask=w_in, other=0).to(tl.uint16)
        code = (packed >> ((k % 2) * 4).to(tl.uint16)[:, None]) & 0xF
        value = (((code & 0x7) << 9) | ((code & 0x8) << 12)).to(tl.float16, bitcast=True) * 16384.0
        s = tl.load(scale_ptr + (k // 32)[:, None] * N + n[None, :], mask=w_in, other=127)
        acc += tl.dot(x, (value.to(tl.float32) * tl.exp2(s.to(tl.float32) - 127.0)).to(tl.float16))
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_bytes_once_split(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """Right: the fast reference's loads alone: each chunk's BK/2 × BN bytes and BK/32 × BN scales loaded once, the
    low nibbles dotted with x's even columns and the high ones with its odd columns; the teaching decode, each
    weight scaled (its block's scale broadcast over the block's 16 byte rows), masks as the teaching kernel's."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        x_even, x_odd = tl.split(tl.reshape(x, (BM, BK // 2, 2)))
        rows = k0 // 2 + tl.arange(0, BK // 2)
        packed = tl.load(w_ptr + rows[:, None] * N + n[None, :], mask=(rows[:, None] < K // 2) & (n[None, :] < N),
                         other=0)
        blocks = k0 // 32 + tl.arange(0, BK // 32)
        s = tl.load(scale_ptr + blocks[:, None] * N + n[None, :], mask=(blocks[:, None] < K // 32) & (n[None, :] < N),
                    other=127)
        multiplier = tl.exp2(s.to(tl.float32) - 127.0)[:, None, :]  # BK/32 × 1 × BN: one per 16 byte rows
        per_row = tl.reshape(tl.broadcast_to(multiplier, (BK // 32, 16, BN)), (BK // 2, BN))
        low = (e2m1_arithmetic(packed & 0xF) * per_row).to(tl.float16)
        high = (e2m1_arithmetic(packed >> 4) * per_row).to(tl.float16)
        acc += tl.dot(x_odd, high, tl.dot(x_even, low))
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def mxfp4_scale_after_dot(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """Right: the fast reference's scaling alone: one tl.dot per block of 32 rows on the bare e2m1 values, its BM × BN
    sum times the block's row of multipliers; loads and decode as the teaching kernel's (each byte per nibble)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        for b in tl.static_range(BK // 32):
            k = k0 + 32 * b + tl.arange(0, 32)
            w_in = (k < K)[:, None] & (n < N)[None, :]
            x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
            packed = tl.load(w_ptr + (k // 2)[:, None] * N + n[None, :], mask=w_in, other=0)
            value = e2m1_arithmetic((packed >> ((k % 2) * 4)[:, None]) & 0xF).to(tl.float16)
            block = tl.minimum(k0 // 32 + b, K // 32 - 1)  # past K: x is 0 there, any block's scale will do
            s = tl.load(scale_ptr + block * N + n, mask=n < N, other=127)
            acc += tl.dot(x, value) * tl.exp2(s.to(tl.float32) - 127.0)[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


CORRECT = (mxfp4_bytes_once,)
CORRECT_WITH_DOT_SCALED = (mxfp4_dot_scaled,)  # where the interpreter runs tl.dot_scaled (Triton 3.8 on)
SLOW = (mxfp4_without_dot,)
# The fast reference's changes alone and its settings varied: graded here, timed by benchmarks/p33_variants.py.
FAST_LEVERS = (mxfp4_bytes_once_split, mxfp4_scale_after_dot, mxfp4_decode_by_bits)
FAST_SETTINGS = (mxfp4_fast_two_chunks, mxfp4_fast_four_stages, mxfp4_fast_two_chunks_four_stages,
                 mxfp4_fast_unpipelined, mxfp4_fast_subnormals_into_dot, mxfp4_fast_table_lookup)
BUILDING_BLOCKS = (decoded_tile, matmul_decoding, e2m1_by_table, e2m1_arithmetic, e2m1_gathered,
                   blocks_scaled_after_dot)  # helpers, never graded themselves
