"""Dequantization of packed int4 GPTQ words inside a Triton kernel, and the K orders the MMA needs.

Each int32 word holds 8 nibbles; a helper turns them into 8 fp16 tensors (q - zero) [* scale], one per
nibble position ("slot"), which the kernels of :mod:`solutions.gptq.kernels` interleave into a weight tile.

On GPU the dequantization is inline PTX on pairs: ``w & 0x000F000F | 0x64006400`` turns nibbles 0 and
4 into the fp16 pair (1024 + q_0, 1024 + q_4) and one ``sub.f16x2`` of (1024 + zero) leaves the exact
integers (q - zero); the mask 0x00F000F0 gives (1024 + 16 q_1, 1024 + 16 q_5), which one ``fma.f16x2``
by 1/16 minus (64 + zero) brings to the same integers, and ``w >> 8`` serves nibbles 2, 6, 3 and 7:
one shift per word instead of three. Plain Triton's int -> fp16 conversion compiles
to I2F (a quarter-rate pipe) plus sign extensions and byte permutes, about twice the instructions
per weight in the SASS, and small M is bound by instruction issue as much as by memory. The
interpreter and the general g_idx path run the same arithmetic in plain Triton (:func:`dequant_slot`).
The warp-specialised kernel (:mod:`solutions.gptq.ws_prefill`) uses the same PTX (``DEQUANT_SCALED_PTX``).

The swapped kernel feeds the dequantized weights to wgmma from registers: :func:`slots_to_mma_order`
places the 8 nibbles of a word at the K positions that the wgmma register fragment gives the thread
that unpacked them, and :func:`rows_to_mma_order` permutes A's rows to match where the weights are the
plain qweight (a dot product does not care about the order of K as long as both operands agree).
"""

from __future__ import annotations

import triton
import triton.language as tl

# The PTX of dequant_word_ptx, built once from its parts (the scaled variant only adds the mul
# lines). lop3 with 0x64006400 puts a nibble pair into fp16 halves, two lanes at a time: masked at
# bits 0-3 (nibbles 0 and 4 of w, 2 and 6 of w >> 8) it gives 1024 + q, masked at bits 4-7 (nibbles
# 1 and 5, 3 and 7) 1024 + 16 q, which one fma by 1/16 brings to 64 + q. Every step is exact.
_UNPACK_PTX = """
            .reg .b32 t0, t1, t2, t3, w2, sixteenth;
            mov.b32 sixteenth, 0x2C002C00;
            shr.u32 w2, $8, 8;
            lop3.b32 t0, $8, 0x000F000F, 0x64006400, 0xEA;
            lop3.b32 t1, $8, 0x00F000F0, 0x64006400, 0xEA;
            lop3.b32 t2, w2, 0x000F000F, 0x64006400, 0xEA;
            lop3.b32 t3, w2, 0x00F000F0, 0x64006400, 0xEA;
            sub.f16x2 t0, t0, $9;
            fma.rn.f16x2 t1, t1, sixteenth, $10;
            sub.f16x2 t2, t2, $9;
            fma.rn.f16x2 t3, t3, sixteenth, $10;
"""
_SCALE_PTX = """
            mul.f16x2 t0, t0, $11;
            mul.f16x2 t1, t1, $11;
            mul.f16x2 t2, t2, $11;
            mul.f16x2 t3, t3, $11;
"""
_WRITE_PTX = """
            mov.b32 {$0, $4}, t0;
            mov.b32 {$1, $5}, t1;
            mov.b32 {$2, $6}, t2;
            mov.b32 {$3, $7}, t3;
"""
DEQUANT_PTX = tl.constexpr("{" + _UNPACK_PTX + _WRITE_PTX + "}")
DEQUANT_SCALED_PTX = tl.constexpr("{" + _UNPACK_PTX + _SCALE_PTX + _WRITE_PTX + "}")
# 8 fp16 results ($0-$7, each half of a pair), then the word, fp16(1024 + zero) x2, -(64 + zero) x2, scale x2.
DEQUANT_CONSTRAINTS = tl.constexpr("=h,=h,=h,=h,=h,=h,=h,=h,r,r,r,r")


@triton.jit
def dequant_word_ptx(words, zero2, neg_zero2, scale2, APPLY_SCALE: tl.constexpr):
    """8 fp16 values per int32 word, (q - zero) [* scale], two lanes at a time.

    ``zero2`` holds fp16(1024 + zero) in both halves, ``neg_zero2`` fp16(-(64 + zero)) in both
    halves, ``scale2`` the fp16 scale in both halves (unused without APPLY_SCALE: the caller scales
    the MMA result instead). Output j is nibble j (row 8i + j of a plain qweight word i).
    """
    return tl.inline_asm_elementwise(
        asm=DEQUANT_SCALED_PTX if APPLY_SCALE else DEQUANT_PTX,
        constraints=DEQUANT_CONSTRAINTS,
        args=[words, zero2, neg_zero2, scale2],
        dtype=(tl.float16,) * 8,
        is_pure=True,
        pack=1,
    )


@triton.jit
def dequant_slot(words, SLOT: tl.constexpr, zero, scale, APPLY_SCALE: tl.constexpr):
    """Nibble SLOT of each word, dequantized: (q - zero) [* scale]; ``zero`` already includes the offset."""
    # (q - zero) is an integer in [-16, 15], exact in fp16: one rounding, in the product.
    x = (((words >> (4 * SLOT)) & 0xF) - zero).to(tl.float16)
    if APPLY_SCALE:
        x = x * scale
    return x


@triton.jit
def slots_to_mma_order(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Interleave 8 (BLOCK_N, BLOCK_K / 8) slot tensors into W^T (BLOCK_N, BLOCK_K) in MMA K order.

    Nibble s = 4h + 2b2 + b1 of word column i = 4c + l (l = i % 4) goes to K position
    32c + 16b2 + 8b1 + 2l + h (in a plain qweight word that nibble is row 32c + 8l + s, so A is
    permuted to match; a repacked word already holds row 32c + 16b2 + 8b1 + 2l + h there, so the
    order is the natural one): the 8 positions that the wgmma operand fragment gives the
    thread with quad lane l across two k16 steps, with nibbles j and j+4 (the two fp16 halves the
    dequantization produces together) in adjacent positions.
    """
    # join appends a trailing axis: (h), then (h, b1), then (h, b1, b2); all stay in registers.
    w = tl.join(tl.join(tl.join(x0, x4), tl.join(x1, x5)), tl.join(tl.join(x2, x6), tl.join(x3, x7)))
    w = tl.reshape(w, (BLOCK_N, BLOCK_K // 32, 4, 2, 2, 2))  # (n, c, l, h, b1, b2)
    w = tl.permute(w, (0, 1, 5, 4, 2, 3))  # (n, c, b2, b1, l, h)
    return tl.reshape(w, (BLOCK_N, BLOCK_K))


@triton.jit
def rows_to_mma_order(a_t, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """Put A^T's rows (natural K order) into the K order of ``slots_to_mma_order``."""
    a_t = tl.reshape(a_t, (BLOCK_K // 32, 4, 2, 2, 2, BLOCK_M))  # row = 32c + 8l + 4h + 2b2 + b1
    a_t = tl.permute(a_t, (0, 3, 4, 1, 2, 5))  # (c, b2, b1, l, h, m)
    return tl.reshape(a_t, (BLOCK_K, BLOCK_M))


@triton.jit
def dequant_words(words, zero, scale_bits, PTX_DEQUANT: tl.constexpr, APPLY_SCALE: tl.constexpr):
    """The 8 nibbles of each word as fp16 (q - zero) [* scale]; output j holds nibble j.

    ``zero`` includes the format's offset; ``scale_bits`` holds the fp16 scale's bits in an int32.
    """
    if PTX_DEQUANT:
        # fp16(1024 + zero) is 0x6400 + zero (the spacing of fp16 at 1024 is 1); fp16(-(64 + zero))
        # is 0xD400 + 16 zero (sign bit set; the spacing at 64 is 1/16). Once per column, not per word.
        x0, x1, x2, x3, x4, x5, x6, x7 = dequant_word_ptx(words, (0x6400 + zero) * 0x10001,
                                                           (0xD400 + 16 * zero) * 0x10001, scale_bits * 0x10001,
                                                           APPLY_SCALE)
    else:
        scale = scale_bits.to(tl.int16).to(tl.float16, bitcast=True)
        x0 = dequant_slot(words, 0, zero, scale, APPLY_SCALE)
        x1 = dequant_slot(words, 1, zero, scale, APPLY_SCALE)
        x2 = dequant_slot(words, 2, zero, scale, APPLY_SCALE)
        x3 = dequant_slot(words, 3, zero, scale, APPLY_SCALE)
        x4 = dequant_slot(words, 4, zero, scale, APPLY_SCALE)
        x5 = dequant_slot(words, 5, zero, scale, APPLY_SCALE)
        x6 = dequant_slot(words, 6, zero, scale, APPLY_SCALE)
        x7 = dequant_slot(words, 7, zero, scale, APPLY_SCALE)
    return x0, x1, x2, x3, x4, x5, x6, x7


@triton.jit
def slots_to_rows(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """Interleave 8 (BLOCK_K / 8, BLOCK_N) slot tensors into W (BLOCK_K, BLOCK_N) in natural row order."""
    # Joins append trailing axes (b2, b1, b0) with slot = 4b2 + 2b1 + b0; rows 8i + slot.
    w = tl.join(tl.join(tl.join(x0, x4), tl.join(x2, x6)), tl.join(tl.join(x1, x5), tl.join(x3, x7)))
    w = tl.permute(w, (0, 2, 3, 4, 1))  # (i, b2, b1, b0, n)
    return tl.reshape(w, (BLOCK_K, BLOCK_N))


@triton.jit
def dequant_slot_g_idx(words, SLOT: tl.constexpr, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift,
                        g_idx_ptr, scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn,
                        ZERO_OFFSET: tl.constexpr):
    """Nibble SLOT of each word (row 8i + SLOT) with that row's own group from g_idx."""
    g = tl.load(g_idx_ptr + offs_kw * 8 + SLOT, mask=kw_in_bounds, other=0)
    in_bounds = n_in_bounds[:, None] & kw_in_bounds[None, :]
    scale = tl.load(scales_ptr + g[None, :] * stride_sg + offs_n[:, None] * stride_sn, mask=in_bounds, other=0.0)
    zw = tl.load(qzeros_ptr + g[None, :] * stride_zg + (offs_n // 8)[:, None] * stride_zn, mask=in_bounds, other=0)
    zero = ((zw >> zero_shift[:, None]) & 0xF) + ZERO_OFFSET
    return dequant_slot(words, SLOT, zero, scale, True)

