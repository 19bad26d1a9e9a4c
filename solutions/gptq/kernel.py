"""GPTQ int4 dequantize-and-multiply, split-K: ``C = A @ W`` with W stored as 4-bit GPTQ.

One program owns a BLOCK_M x BLOCK_N tile of C and a contiguous share of K. It streams the packed
int32 words of W for that share, unpacks the 8 rows of each word in registers, dequantizes them
with their group's scale and zero point and accumulates in fp32 with ``tl.dot``. With split-K the
shares are added into C: by fp16 atomics (fast, order not fixed) or, with ``deterministic=True``,
by storing fp32 partial tiles into a (SPLIT_K, M, N) buffer that a second kernel sums in a fixed
order.

Two kernels share the unpacking and dequantization helpers (design notes and measurements in
benchmarks/gptq/NOTES.md):

* ``_gptq_small_m_kernel`` (``swap_ab=True``; every entry of the tuned table, M = 1 to 4096)
  computes the transposed tile ``C^T = W^T @ A^T``: the dequantized weights are the *first* MMA
  operand, which Hopper's wgmma reads straight from registers, so W never goes through shared
  memory; only the A tile does. The 8 nibbles of a word are placed at the K positions that the
  wgmma register fragment gives the thread that unpacked them (``_slots_to_mma_order``), so no
  layout conversion sits between the dequantization and the MMA. On ``GPTQWeight.qweight_mma``
  (``loader.repack_for_mma``, BLOCK_K = 128) each word already holds the rows of those positions,
  A is used as stored, each K step of a program is one contiguous block and each thread's words
  one 16-byte vector. On the plain ``qweight`` (word i holds rows 8i..8i+7) A's rows are permuted
  to match (``_rows_to_mma_order``: a dot product does not care about the order of K as long as
  both operands agree), at the cost of a shared-memory round trip of the A tile per step.
  Prefill sizes (M >= 256) use it with 8 warps, 128 columns and 128-256 rows of A per tile: each
  warpgroup dequantizes 64 columns once per K step for all those rows, and the words are loaded
  in wgmma's row order (``_mma_row_order``) so that no layout conversion is needed there either.
* ``_gptq_large_m_kernel`` (``swap_ab=False``) computes ``C = A @ W`` in natural K order; the
  dequantized W tile goes to shared memory as wgmma's B operand and is reused by BLOCK_M rows of
  A. Since the natural-order repacking it is slower at every measured M <= 128 and no tuned
  config picks it; it reads only the plain ``qweight``, which the default load drops (prefill
  runs the swapped kernel with 8 warps instead). It stays for ``swap_ab=False``; untuned.

Dequantization on GPU is inline PTX on pairs: ``w & 0x000F000F | 0x64006400`` turns nibbles 0 and
4 into the fp16 pair (1024 + q_0, 1024 + q_4) and one ``sub.f16x2`` of (1024 + zero) leaves the exact
integers (q - zero); the mask 0x00F000F0 gives (1024 + 16 q_1, 1024 + 16 q_5), which one ``fma.f16x2``
by 1/16 minus (64 + zero) brings to the same integers, and ``w >> 8`` serves nibbles 2, 6, 3 and 7:
one shift per word instead of three. Plain Triton's int -> fp16 conversion compiles
to I2F (a quarter-rate pipe) plus sign extensions and byte permutes, about twice the instructions
per weight in the SASS, and small M is bound by instruction issue as much as by memory. Where a
K step lies in one group the scale can multiply the step's fp32 MMA result (BLOCK_N x BLOCK_M
products) instead of every weight (BLOCK_N x BLOCK_K / 2 ``mul.f16x2``; ``scale_after_dot``): fewer
multiplies when 2 BLOCK_M <= BLOCK_K, but the MMA must finish first, while scaling the weights lets
Triton issue the step's MMAs asynchronously.
The interpreter and the general g_idx path run the same arithmetic in plain Triton.

On Hopper GPUs, prefill sizes go to a third kernel, written in Gluon with warp specialisation
(:mod:`solutions.gptq.ws_prefill`), where ``configs.ws_tile`` says it measured faster.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch
import triton
import triton.language as tl
from torch import Tensor

from solutions.gptq.loader import GPTQWeight

if TYPE_CHECKING:
    from solutions.gptq.configs import WSTile


@dataclass(frozen=True)
class GPTQConfig:
    """Launch parameters of :func:`gptq_matmul`. ``split_k`` is an upper bound (see :func:`plan_split_k`).

    ``ptx_dequant`` selects the inline-PTX dequantization on GPU; it is ignored (plain Triton) under
    the interpreter and when the weight has a general g_idx. ``swap_ab`` picks the kernel: True
    computes C^T = W^T A^T with the weights as wgmma's register operand (every tuned config, M = 1
    to 4096); False computes C = A W with the dequantized weights staged in shared memory, a weight
    tile reused by BLOCK_M rows of A (needs the plain qweight). A general g_idx always uses the
    swapped kernel. With ``num_warps=8`` and BLOCK_N a multiple of 128 on the repacked weights, the
    swapped kernel loads the words in wgmma's row order (``_mma_row_order``). ``tma_a`` (swapped
    kernel, row-major 16-byte-aligned A, no a_perm; a CUDA GPU of compute capability 9.0+ or the
    interpreter) loads A through a TMA descriptor; elsewhere, and for BLOCK_M >= 256 with 3 or more
    stages (wrong results on Triton 3.6, see _use_tma_a), A is read with pointers as usual.
    """

    block_m: int = 16
    block_n: int = 128
    block_k: int = 128
    group_m: int = 8
    split_k: int = 4
    num_warps: int = 4
    num_stages: int = 3
    ptx_dequant: bool = True
    swap_ab: bool = True
    maxnreg: int | None = None  # cap on registers per thread (more resident programs per SM)
    # Scale the fp32 MMA result of a step instead of the weights (only where a step lies in one
    # group). None: when that is fewer multiplies (2 BLOCK_M <= BLOCK_K). Scaling the result needs
    # the MMA finished before the multiply, and a second accumulator's worth of registers.
    scale_after_dot: bool | None = None
    # Read A's tiles with the TMA engine (Hopper and later; see _use_tma_a): one bulk copy per stage
    # instead of per-thread address and mask arithmetic, which frees registers and issue slots for the
    # dequantization. Measured faster only for some prefill tiles, so the tuned table turns it on per entry.
    tma_a: bool = False


# The PTX of _dequant_word_ptx, built once from its parts (the scaled variant only adds the mul
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
def _dequant_word_ptx(words, zero2, neg_zero2, scale2, APPLY_SCALE: tl.constexpr):
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
def _dequant_slot(words, SLOT: tl.constexpr, zero, scale, APPLY_SCALE: tl.constexpr):
    """Nibble SLOT of each word, dequantized: (q - zero) [* scale]; ``zero`` already includes the offset."""
    # (q - zero) is an integer in [-16, 15], exact in fp16: one rounding, in the product.
    x = (((words >> (4 * SLOT)) & 0xF) - zero).to(tl.float16)
    if APPLY_SCALE:
        x = x * scale
    return x


@triton.jit
def _slots_to_mma_order(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
def _rows_to_mma_order(a_t, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """Put A^T's rows (natural K order) into the K order of ``_slots_to_mma_order``."""
    a_t = tl.reshape(a_t, (BLOCK_K // 32, 4, 2, 2, 2, BLOCK_M))  # row = 32c + 8l + 4h + 2b2 + b1
    a_t = tl.permute(a_t, (0, 3, 4, 1, 2, 5))  # (c, b2, b1, l, h, m)
    return tl.reshape(a_t, (BLOCK_K, BLOCK_M))


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) in grouped ("swizzled") order: GROUP_M consecutive M tiles sweep N together, so
    the W columns they share are read from L2 rather than HBM while the group is in flight."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pids_per_group = GROUP_M * num_pid_n
    first_pid_m = (pid // pids_per_group) * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _program_share(M, N, K, k_per_split, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    """This program's tile and share of K: (pid_n, offs_m, offs_n, k_start, k_end, offs_k, offs_kw).

    The share is [k_start, k_end); k_per_split is a multiple of BLOCK_K, so steps never straddle two
    shares, and k_end also masks the ragged end of K. offs_k are the first step's rows, offs_kw its
    packed rows (8 per int32 word).
    """
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_start = tl.program_id(1) * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    offs_k = k_start + tl.arange(0, BLOCK_K)
    offs_kw = k_start // 8 + tl.arange(0, BLOCK_K // 8)
    return pid_n, offs_m, offs_n, k_start, k_end, offs_k, offs_kw


@triton.jit
def _column_shifts(offs_n):
    """Where column n sits in its packed words: zero points are packed 8 per word along N (nibble
    n % 8); scales are read as int32 pairs (a 4-byte cp.async can be pipelined, a 2-byte one cannot),
    column n the low (even n) or high (odd n) half."""
    return (offs_n % 8) * 4, (offs_n % 2) * 16


@triton.jit
def _step_zeros_scales(qzeros_ptr, scales32_ptr, k0, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift,
                       scale_shift, stride_zg, stride_zn, stride_s32g, GROUP_SIZE: tl.constexpr,
                       ZERO_OFFSET: tl.constexpr, ONE_GROUP_PER_STEP: tl.constexpr, N_FIRST: tl.constexpr):
    """The zero points (offset included) and fp16 scale bits of one K step's groups.

    Where the step lies in one group: one row of each (L1/L2 hits), zero shaped to broadcast over the
    weight tile and scale_bits a vector over N. Else (G < BLOCK_K) one group per word, both shaped like
    the tile: (BLOCK_N, words) with N_FIRST (the swapped kernel's W^T), (words, BLOCK_N) without.
    """
    if ONE_GROUP_PER_STEP:
        g = k0 // GROUP_SIZE
        zw = tl.load(qzeros_ptr + g * stride_zg + (offs_n // 8) * stride_zn, mask=n_in_bounds, other=0)
        sw = tl.load(scales32_ptr + g * stride_s32g + offs_n // 2, mask=n_in_bounds, other=0)
        zero = ((zw >> zero_shift) & 0xF) + ZERO_OFFSET
        zero = zero[:, None] if N_FIRST else zero[None, :]
        scale_bits = (sw >> scale_shift) & 0xFFFF
    else:
        # The same loads for either orientation: only which axis is N and which the words differs.
        g = (offs_kw * 8) // GROUP_SIZE
        if N_FIRST:
            g, cols = g[None, :], offs_n[:, None]
            zero_shift, scale_shift = zero_shift[:, None], scale_shift[:, None]
            mask = n_in_bounds[:, None] & kw_in_bounds[None, :]
        else:
            g, cols = g[:, None], offs_n[None, :]
            zero_shift, scale_shift = zero_shift[None, :], scale_shift[None, :]
            mask = kw_in_bounds[:, None] & n_in_bounds[None, :]
        zw = tl.load(qzeros_ptr + g * stride_zg + (cols // 8) * stride_zn, mask=mask, other=0)
        sw = tl.load(scales32_ptr + g * stride_s32g + cols // 2, mask=mask, other=0)
        zero = ((zw >> zero_shift) & 0xF) + ZERO_OFFSET
        scale_bits = (sw >> scale_shift) & 0xFFFF
    return zero, scale_bits


@triton.jit
def _write_tile(c_ptrs, acc, c_mask, ATOMIC_OUT: tl.constexpr):
    """Store the fp32 tile in C's type, or add it with atomics (split-K shares)."""
    if ATOMIC_OUT:
        # Relaxed: only the sum matters; these adds order no other memory.
        tl.atomic_add(c_ptrs, acc.to(c_ptrs.dtype.element_ty), mask=c_mask, sem="relaxed")
    else:
        tl.store(c_ptrs, acc.to(c_ptrs.dtype.element_ty), mask=c_mask)


@triton.jit
def _dequant_words(words, zero, scale_bits, PTX_DEQUANT: tl.constexpr, APPLY_SCALE: tl.constexpr):
    """The 8 nibbles of each word as fp16 (q - zero) [* scale]; output j holds nibble j.

    ``zero`` includes the format's offset; ``scale_bits`` holds the fp16 scale's bits in an int32.
    """
    if PTX_DEQUANT:
        # fp16(1024 + zero) is 0x6400 + zero (the spacing of fp16 at 1024 is 1); fp16(-(64 + zero))
        # is 0xD400 + 16 zero (sign bit set; the spacing at 64 is 1/16). Once per column, not per word.
        x0, x1, x2, x3, x4, x5, x6, x7 = _dequant_word_ptx(words, (0x6400 + zero) * 0x10001,
                                                           (0xD400 + 16 * zero) * 0x10001, scale_bits * 0x10001,
                                                           APPLY_SCALE)
    else:
        scale = scale_bits.to(tl.int16).to(tl.float16, bitcast=True)
        x0 = _dequant_slot(words, 0, zero, scale, APPLY_SCALE)
        x1 = _dequant_slot(words, 1, zero, scale, APPLY_SCALE)
        x2 = _dequant_slot(words, 2, zero, scale, APPLY_SCALE)
        x3 = _dequant_slot(words, 3, zero, scale, APPLY_SCALE)
        x4 = _dequant_slot(words, 4, zero, scale, APPLY_SCALE)
        x5 = _dequant_slot(words, 5, zero, scale, APPLY_SCALE)
        x6 = _dequant_slot(words, 6, zero, scale, APPLY_SCALE)
        x7 = _dequant_slot(words, 7, zero, scale, APPLY_SCALE)
    return x0, x1, x2, x3, x4, x5, x6, x7


@triton.jit
def _slots_to_rows(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """Interleave 8 (BLOCK_K / 8, BLOCK_N) slot tensors into W (BLOCK_K, BLOCK_N) in natural row order."""
    # Joins append trailing axes (b2, b1, b0) with slot = 4b2 + 2b1 + b0; rows 8i + slot.
    w = tl.join(tl.join(tl.join(x0, x4), tl.join(x2, x6)), tl.join(tl.join(x1, x5), tl.join(x3, x7)))
    w = tl.permute(w, (0, 2, 3, 4, 1))  # (i, b2, b1, b0, n)
    return tl.reshape(w, (BLOCK_K, BLOCK_N))


@triton.jit
def _mma_step(acc, lhs, rhs, scale_bits, SCALE_AFTER_DOT: tl.constexpr, SCALE_ROWS: tl.constexpr):
    """acc + lhs @ rhs for one K step. With SCALE_AFTER_DOT the weights are (q - zero), small integers
    that the MMA sums with A exactly in fp32, and one scale per output column finishes the step: a row
    of acc when SCALE_ROWS (the swapped kernel's C^T tile), else a column."""
    if SCALE_AFTER_DOT:
        scale = scale_bits.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        if SCALE_ROWS:
            acc += tl.dot(lhs, rhs) * scale[:, None]
        else:
            acc += tl.dot(lhs, rhs) * scale[None, :]
    else:
        acc = tl.dot(lhs, rhs, acc)
    return acc


@triton.jit
def _next_k_step(offs_k, offs_kw, a_ptrs, w_ptrs, stride_ak, stride_qk, HAS_A_PERM: tl.constexpr,
                 BLOCK_K: tl.constexpr, BLOCK_KW: tl.constexpr):
    """The offsets and pointers of the next K step (a_ptrs walks a_perm when HAS_A_PERM)."""
    offs_k += BLOCK_K
    offs_kw += BLOCK_KW
    if HAS_A_PERM:
        a_ptrs += BLOCK_K
    else:
        a_ptrs += BLOCK_K * stride_ak
    w_ptrs += BLOCK_KW * stride_qk
    return offs_k, offs_kw, a_ptrs, w_ptrs


@triton.jit
def _mma_row_order(r, LOAD_WARPS: tl.constexpr):
    """Which column of W the loaded row r holds when the word tile is loaded in wgmma's row order.

    The (BLOCK_N, 16)-word load gives each warp 8 rows at a time (4 threads x 16 bytes per row):
    row r = 8 (LOAD_WARPS j + w) + i for warp w, repetition j. The wgmma register fragment gives each
    warp 16 rows (i and i + 8): column 16 (LOAD_WARPS (j // 2) + w) + 8 (j % 2) + i. Loading that column
    as row r lets the dequantized tile feed the MMA without a layout conversion (with 8 warps Triton
    otherwise converts it through shared memory every K step; with 4 warps it finds the layout itself).
    """
    i = r % 8
    w = (r // 8) % LOAD_WARPS
    j = r // (8 * LOAD_WARPS)
    return 16 * (LOAD_WARPS * (j // 2) + w) + 8 * (j % 2) + i


@triton.jit
def _gptq_small_m_kernel(
    a_ptr, qweight_ptr, scales32_ptr, scales_ptr, qzeros_ptr, g_idx_ptr, a_perm_ptr, c_ptr,
    M, N, K, k_per_split,
    stride_am, stride_ak,
    stride_qk, stride_qn,
    stride_sg, stride_sn,  # fp16 scales (g_idx path)
    stride_s32g,  # scales viewed as int32 pairs (N / 2 per group row), unit stride along N
    stride_zg, stride_zn,
    stride_cs, stride_cm, stride_cn,
    ZERO_OFFSET: tl.constexpr,  # 1: gptq format (stored zero = zero - 1); 0: gptq_v2
    HAS_G_IDX: tl.constexpr,  # general per-row groups from g_idx
    HAS_A_PERM: tl.constexpr,  # W's rows were sorted by group at load time: read A's columns via a_perm
    ONE_GROUP_PER_STEP: tl.constexpr,  # every BLOCK_K step lies in one group (G % BLOCK_K == 0 or G >= K)
    SCALE_AFTER_DOT: tl.constexpr,  # scale the step's MMA result, not each weight (needs ONE_GROUP_PER_STEP)
    PTX_DEQUANT: tl.constexpr,  # inline-PTX half2 dequantization (GPU only)
    ATOMIC_OUT: tl.constexpr,  # add the tile into C with atomics (split-K) instead of storing it
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: no K masks
    EVEN_N: tl.constexpr,  # N % BLOCK_N == 0: no N masks
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    GROUP_SIZE: tl.constexpr,  # G: a constant, so k // G is a shift, not a division per step
    W_MMA: tl.constexpr = False,  # qweight_ptr is GPTQWeight.qweight_mma, see loader.repack_for_mma
    LOAD_WARPS: tl.constexpr = 0,  # num_warps when the words are loaded in wgmma's row order (_mma_row_order)
    A_DESC: tl.constexpr = False,  # a_ptr is a TMA descriptor of A (M, K), block (BLOCK_M, BLOCK_K)
):
    PACK: tl.constexpr = 8  # 4-bit values per int32 word
    BLOCK_KW: tl.constexpr = BLOCK_K // PACK  # packed rows per K step
    tl.static_assert(BLOCK_K % 32 == 0, "BLOCK_K must be a multiple of 32 (the MMA K order spans 32 rows)")

    pid_n, offs_m, offs_n, k_start, k_end, offs_k, offs_kw = _program_share(M, N, K, k_per_split, BLOCK_M, BLOCK_N,
                                                                            BLOCK_K, GROUP_M)
    m_in_bounds = offs_m < M
    n_in_bounds = offs_n < N
    zero_shift, scale_shift = _column_shifts(offs_n)
    # Pointers advance by one step per iteration; only the ragged last step needs K masks. With
    # HAS_A_PERM, a_ptrs walks a_perm, which names the columns of A to gather.
    if A_DESC:
        m_start = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)[0] * BLOCK_M
        a_ptrs = a_perm_ptr  # advanced by _next_k_step, never read
    elif HAS_A_PERM:
        a_ptrs = a_perm_ptr + offs_k
    else:
        a_ptrs = a_ptr + offs_k[:, None] * stride_ak + offs_m[None, :] * stride_am
    if W_MMA:
        # Repacked (loader.repack_for_mma): 128 columns x one K step of 128 rows are one contiguous
        # 8 KB block (stride_qn: the next 128 columns, stride_qk: 128 words per packed row of K), each
        # column 16 words (64 bytes) in the order its threads consume them. A tile of 64 columns reads
        # half a block, a tile of 256 two blocks.
        tl.static_assert(BLOCK_KW == 16 and (128 % BLOCK_N == 0 or BLOCK_N % 128 == 0),
                         "the repacked weights come in blocks of 128 columns x 16 words")
        n0 = pid_n * BLOCK_N
        rows = tl.arange(0, BLOCK_N)
        if LOAD_WARPS:
            tl.static_assert(BLOCK_N % (16 * LOAD_WARPS) == 0, "LOAD_WARPS needs BLOCK_N a multiple of 16 warps")
            rows = _mma_row_order(rows, LOAD_WARPS)
        if BLOCK_N > 128:
            row_offs = (rows // 128) * stride_qn + (rows % 128) * BLOCK_KW
        else:
            row_offs = rows * BLOCK_KW
        w_ptrs = (qweight_ptr + (n0 // 128) * stride_qn + (n0 % 128) * BLOCK_KW + (k_start // PACK) * stride_qk
                  + row_offs[:, None] + tl.arange(0, BLOCK_KW)[None, :])
    else:
        w_ptrs = qweight_ptr + offs_n[:, None] * stride_qn + offs_kw[None, :] * stride_qk

    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # C^T tile
    for k0 in range(k_start, k_end, BLOCK_K):
        # K is a multiple of 8, so a packed row is either wholly inside the share or wholly outside.
        k_in_bounds = offs_k < k_end
        kw_in_bounds = offs_kw < k_end // PACK
        a_mask = m_in_bounds[None, :]
        w_mask = n_in_bounds[:, None]
        if not EVEN_K:
            a_mask = a_mask & k_in_bounds[:, None]
            w_mask = w_mask & kw_in_bounds[None, :]

        # Masked A is 0, so the (finite) weights of rows past k_end add nothing.
        if A_DESC:
            # The copy engine fills rows past M and columns past K with zeros; shares hold whole steps.
            a_t = a_ptr.load([m_start, k0]).T
        elif HAS_A_PERM:
            a_rows = tl.load(a_ptrs, mask=k_in_bounds, other=0)
            a_t = tl.load(a_ptr + a_rows[:, None] * stride_ak + offs_m[None, :] * stride_am, mask=a_mask, other=0.0)
        else:
            a_t = tl.load(a_ptrs, mask=a_mask, other=0.0)
        if not W_MMA:
            # Plain qweight: word i holds rows 8i..8i+7, which the fragment order scatters; A follows.
            # (The repacked words already hold the rows that their fragment positions need.)
            a_t = _rows_to_mma_order(a_t, BLOCK_M, BLOCK_K)

        # Whole words, contiguous along N: each byte of W is read from memory once.
        if EVEN_N and EVEN_K:
            words = tl.load(w_ptrs)
        else:
            words = tl.load(w_ptrs, mask=w_mask, other=0)
        if LOAD_WARPS:
            # Row r of the loaded tile holds column _mma_row_order(r): put the columns back in order.
            # Only labels change: each thread keeps the rows its wgmma fragment needs. Axes (j // 2, j % 2, w, i).
            words = tl.reshape(words, (BLOCK_N // (16 * LOAD_WARPS), 2, LOAD_WARPS, 8, BLOCK_KW))
            words = tl.reshape(tl.permute(words, (0, 2, 1, 3, 4)), (BLOCK_N, BLOCK_KW))
        if W_MMA:
            # Stored position 4l + c of each 16-word run is word 4c + l: a thread's 4 words are
            # adjacent in memory (one 16-byte load); back to word order in registers.
            words = tl.reshape(words, (BLOCK_N, BLOCK_KW // 16, 4, 4))
            words = tl.reshape(tl.permute(words, (0, 1, 3, 2)), (BLOCK_N, BLOCK_KW))

        if HAS_G_IDX:
            # Arbitrary per-row groups: a scale and a zero point per (row, column), gathered.
            x0 = _dequant_slot_g_idx(words, 0, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x1 = _dequant_slot_g_idx(words, 1, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x2 = _dequant_slot_g_idx(words, 2, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x3 = _dequant_slot_g_idx(words, 3, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x4 = _dequant_slot_g_idx(words, 4, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x5 = _dequant_slot_g_idx(words, 5, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x6 = _dequant_slot_g_idx(words, 6, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x7 = _dequant_slot_g_idx(words, 7, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            scale_bits = zero_shift  # unused: the weights are scaled (SCALE_AFTER_DOT needs one group per step)
        else:
            # G is a multiple of 8, so the 8 rows of a word share one group.
            zero, scale_bits = _step_zeros_scales(qzeros_ptr, scales32_ptr, k0, offs_kw, kw_in_bounds, offs_n,
                                                  n_in_bounds, zero_shift, scale_shift, stride_zg, stride_zn,
                                                  stride_s32g, GROUP_SIZE, ZERO_OFFSET, ONE_GROUP_PER_STEP, True)
            bits = scale_bits[:, None] if ONE_GROUP_PER_STEP else scale_bits
            x0, x1, x2, x3, x4, x5, x6, x7 = _dequant_words(words, zero, bits, PTX_DEQUANT, not SCALE_AFTER_DOT)

        w_t = _slots_to_mma_order(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_N, BLOCK_K)
        acc = _mma_step(acc, w_t, a_t, scale_bits, SCALE_AFTER_DOT, True)  # a row of C^T per output column
        offs_k, offs_kw, a_ptrs, w_ptrs = _next_k_step(offs_k, offs_kw, a_ptrs, w_ptrs, stride_ak, stride_qk,
                                                       HAS_A_PERM, BLOCK_K, BLOCK_KW)

    c_ptrs = c_ptr + tl.program_id(1) * stride_cs + offs_n[:, None] * stride_cn + offs_m[None, :] * stride_cm
    _write_tile(c_ptrs, acc, n_in_bounds[:, None] & m_in_bounds[None, :], ATOMIC_OUT)


@triton.jit
def _gptq_large_m_kernel(
    a_ptr, qweight_ptr, scales32_ptr, qzeros_ptr, a_perm_ptr, c_ptr,
    M, N, K, k_per_split,
    stride_am, stride_ak,
    stride_qk, stride_qn,
    stride_s32g,  # scales viewed as int32 pairs (N / 2 per group row), unit stride along N
    stride_zg, stride_zn,
    stride_cs, stride_cm, stride_cn,
    ZERO_OFFSET: tl.constexpr,  # 1: gptq format (stored zero = zero - 1); 0: gptq_v2
    HAS_A_PERM: tl.constexpr,  # W's rows were sorted by group at load time: read A's columns via a_perm
    ONE_GROUP_PER_STEP: tl.constexpr,  # every BLOCK_K step lies in one group (G % BLOCK_K == 0 or G >= K)
    SCALE_AFTER_DOT: tl.constexpr,  # scale the step's MMA result, not each weight (needs ONE_GROUP_PER_STEP)
    PTX_DEQUANT: tl.constexpr,  # inline-PTX half2 dequantization (GPU only)
    ATOMIC_OUT: tl.constexpr,  # add the tile into C with atomics (split-K) instead of storing it
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: no K masks
    EVEN_N: tl.constexpr,  # N % BLOCK_N == 0: no N masks
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    GROUP_SIZE: tl.constexpr,  # G: a constant, so k // G is a shift, not a division per step
):
    """C = A @ W for larger M: each dequantized W tile is staged in shared memory (wgmma's B operand)
    and reused by BLOCK_M rows of A; K stays in natural order, A streams straight into shared memory."""
    PACK: tl.constexpr = 8
    BLOCK_KW: tl.constexpr = BLOCK_K // PACK
    pid_n, offs_m, offs_n, k_start, k_end, offs_k, offs_kw = _program_share(M, N, K, k_per_split, BLOCK_M, BLOCK_N,
                                                                            BLOCK_K, GROUP_M)
    m_in_bounds = offs_m < M
    n_in_bounds = offs_n < N
    zero_shift, scale_shift = _column_shifts(offs_n)
    if HAS_A_PERM:  # a_ptrs walks a_perm, which names the columns of A to gather
        a_ptrs = a_perm_ptr + offs_k
    else:
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = qweight_ptr + offs_kw[:, None] * stride_qk + offs_n[None, :] * stride_qn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        k_in_bounds = offs_k < k_end
        kw_in_bounds = offs_kw < k_end // PACK
        a_mask = m_in_bounds[:, None]
        w_mask = n_in_bounds[None, :]
        if not EVEN_K:
            a_mask = a_mask & k_in_bounds[None, :]
            w_mask = w_mask & kw_in_bounds[:, None]
        if HAS_A_PERM:
            a_cols = tl.load(a_ptrs, mask=k_in_bounds, other=0)
            a = tl.load(a_ptr + offs_m[:, None] * stride_am + a_cols[None, :] * stride_ak, mask=a_mask, other=0.0)
        else:
            a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        if EVEN_N and EVEN_K:
            words = tl.load(w_ptrs)
        else:
            words = tl.load(w_ptrs, mask=w_mask, other=0)

        zero, scale_bits = _step_zeros_scales(qzeros_ptr, scales32_ptr, k0, offs_kw, kw_in_bounds, offs_n,
                                              n_in_bounds, zero_shift, scale_shift, stride_zg, stride_zn,
                                              stride_s32g, GROUP_SIZE, ZERO_OFFSET, ONE_GROUP_PER_STEP, False)
        if SCALE_AFTER_DOT:
            x0, x1, x2, x3, x4, x5, x6, x7 = _dequant_words(words, zero, scale_bits, PTX_DEQUANT, False)
        else:
            bits = scale_bits if not ONE_GROUP_PER_STEP else scale_bits[None, :]
            x0, x1, x2, x3, x4, x5, x6, x7 = _dequant_words(words, zero, bits, PTX_DEQUANT, True)
        w = _slots_to_rows(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_K, BLOCK_N)
        acc = _mma_step(acc, a, w, scale_bits, SCALE_AFTER_DOT, False)  # a column of C per output column
        offs_k, offs_kw, a_ptrs, w_ptrs = _next_k_step(offs_k, offs_kw, a_ptrs, w_ptrs, stride_ak, stride_qk,
                                                       HAS_A_PERM, BLOCK_K, BLOCK_KW)

    c_ptrs = c_ptr + tl.program_id(1) * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    _write_tile(c_ptrs, acc, m_in_bounds[:, None] & n_in_bounds[None, :], ATOMIC_OUT)


@triton.jit
def _dequant_slot_g_idx(words, SLOT: tl.constexpr, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift,
                        g_idx_ptr, scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn,
                        ZERO_OFFSET: tl.constexpr):
    """Nibble SLOT of each word (row 8i + SLOT) with that row's own group from g_idx."""
    g = tl.load(g_idx_ptr + offs_kw * 8 + SLOT, mask=kw_in_bounds, other=0)
    in_bounds = n_in_bounds[:, None] & kw_in_bounds[None, :]
    scale = tl.load(scales_ptr + g[None, :] * stride_sg + offs_n[:, None] * stride_sn, mask=in_bounds, other=0.0)
    zw = tl.load(qzeros_ptr + g[None, :] * stride_zg + (offs_n // 8)[:, None] * stride_zn, mask=in_bounds, other=0)
    zero = ((zw >> zero_shift[:, None]) & 0xF) + ZERO_OFFSET
    return _dequant_slot(words, SLOT, zero, scale, True)


@triton.jit
def _splitk_reduce_kernel(partial_ptr, c_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """c[i] = sum over s of partial[s, i], always in the order s = 0, 1, ...: bitwise reproducible."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(partial_ptr + s * MN + offs, mask=in_bounds, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=in_bounds)


def plan_split_k(k: int, block_k: int, split_k: int) -> tuple[int, int]:
    """(k_per_split, splits): shares of K in whole BLOCK_K steps, at most ``split_k`` of them, none empty."""
    steps = triton.cdiv(k, block_k)
    steps_per_split = triton.cdiv(steps, max(1, min(split_k, steps)))
    k_per_split = steps_per_split * block_k
    return k_per_split, triton.cdiv(k, k_per_split)


@triton.jit
def _dequant_to_fp16_kernel(
    qweight_ptr, qzeros_ptr, scales_ptr, g_idx_ptr, a_perm_ptr, out_ptr,
    K, N, n0, n_end,
    stride_qk, stride_qn,  # plain qweight: (K / 8, N) strides; repacked: stride_qn = one block column (N / 128)
    stride_zg, stride_zn, stride_sg, stride_sn, stride_ok, stride_on,
    ZERO_OFFSET: tl.constexpr, HAS_G_IDX: tl.constexpr, HAS_A_PERM: tl.constexpr, W_MMA: tl.constexpr,
    GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """W[:, n0:n_end] as fp16 into ``out`` (K, n_end - n0), in A's row order: 128 rows of K x BLOCK_N
    columns per program, each value (q - zero) * scale with one rounding, as the fused kernels compute it."""
    pid_k = tl.program_id(0)
    offs_p = tl.arange(0, 16)  # 16 words of 8 rows: 128 rows of K
    offs_o = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of out
    offs_n = n0 + offs_o  # columns of W
    n_mask = offs_n < n_end
    if W_MMA:
        # loader.repack_for_mma: block (n // 128, k // 128) of 128 columns x 16 words; word p of a
        # column's run holds rows 32 (p % 4) + 2 (p // 4) + {0, 8, 16, 24} + {0, 1}.
        w_ptrs = (qweight_ptr + (offs_n // 128)[None, :] * stride_qn + pid_k * 2048 + (offs_n % 128)[None, :] * 16
                  + offs_p[:, None])
        p_mask = offs_p < 16
    else:
        w_ptrs = qweight_ptr + (pid_k * 16 + offs_p)[:, None] * stride_qk + offs_n[None, :] * stride_qn
        p_mask = pid_k * 16 + offs_p < K // 8
    mask = p_mask[:, None] & n_mask[None, :]
    words = tl.load(w_ptrs, mask=mask, other=0)
    zero_shift = ((offs_n % 8) * 4)[None, :]
    for j in tl.static_range(8):
        if W_MMA:
            rows = 32 * (offs_p % 4) + 16 * ((j // 2) % 2) + 8 * (j % 2) + 2 * (offs_p // 4) + j // 4
        else:
            rows = 8 * offs_p + j
        rows = pid_k * 128 + rows  # stored rows of W
        if HAS_G_IDX:
            g = tl.load(g_idx_ptr + rows, mask=p_mask, other=0)
        else:
            g = rows // GROUP_SIZE
        zw = tl.load(qzeros_ptr + g[:, None] * stride_zg + (offs_n // 8)[None, :] * stride_zn, mask=mask, other=0)
        scale = tl.load(scales_ptr + g[:, None] * stride_sg + offs_n[None, :] * stride_sn, mask=mask, other=0.0)
        zero = ((zw >> zero_shift) & 0xF) + ZERO_OFFSET
        w = (((words >> (4 * j)) & 0xF) - zero).to(tl.float16) * scale
        out_rows = tl.load(a_perm_ptr + rows, mask=p_mask, other=0) if HAS_A_PERM else rows
        tl.store(out_ptr + out_rows[:, None] * stride_ok + offs_o[None, :] * stride_on, w, mask=mask)


# ----------------------------------------------------------------------------- launching
#
# A call of a @triton.jit function from Python costs tens of us of CPU (binding the arguments,
# specialisation keys, the cache lookup), more than a small GEMV takes on the GPU. gptq_matmul
# therefore builds a launch plan once per (M, A's strides and alignment, device, options) and keeps
# it on the weight: the config, the grid, every argument but A and C, and the compiled kernel, which
# later calls launch the way JITFunction.run does (same launcher, same enter/exit hooks), minus the
# parts that cost CPU and do nothing here (benchmarks/gptq/host_breakdown.py measures each piece):
#
# * Pointers go to the launcher as ints. Given a tensor, Triton's launcher calls its data_ptr() and
#   asks the driver (cuPointerGetAttribute) for the device address, for every pointer on every call.
# * Triton 3.6 keeps its launch hooks in HookChain objects that are never None, so JITFunction.run
#   builds the launch metadata and calls two empty hook chains on every launch. With no hook
#   registered the plan passes None (no metadata, no calls); with one registered, everything is
#   passed as JITFunction.run passes it.
# * On Triton 3.6 the generated C launcher is called directly: CudaLauncher.__call__ only adds a
#   closure and two scratch allocations, which our kernels (no scratch memory) do not need.
# * Split-K with atomics needs C zeroed: in eager mode one driver memset (cuMemsetD32Async) on the
#   launch stream instead of torch's fill kernel (new_zeros): 1-3 us less CPU per call on the H100
#   host. Under CUDA-graph capture, where CPU time is not replayed, torch's fill kernel stays: as a
#   graph node it measured as fast as the memset node or up to 0.1 us faster (host_breakdown.md).

DEQUANT_CHUNK_BYTES = 256 * 2**20  # the fp16 temporary holds at most this many bytes of W at a time


def use_dequant(m: int, weight: GPTQWeight) -> bool:
    """Whether ``method="auto"`` dequantizes W and calls cuBLAS for this M (:func:`solutions.gptq.configs.
    select_method`: measured per tuned shape, a rule derived from those measurements elsewhere)."""
    from solutions.gptq.configs import select_method

    return select_method(m, weight.k, weight.n) == "dequant"


def default_config(m: int, weight: GPTQWeight) -> GPTQConfig:
    """The tuned or heuristic config for this M and weight (:func:`solutions.gptq.configs.select_config`),
    moved to BLOCK_K = BLOCK_N = 128 on the swapped kernel where only the repacked copy is left."""
    from solutions.gptq.configs import select_config  # configs imports GPTQConfig from here

    cfg = select_config(m, weight.k, weight.n, weight.group_size)
    if weight.qweight is None and not (cfg.swap_ab and cfg.block_k == 128 and 128 % cfg.block_n == 0):
        cfg = replace(cfg, block_k=128, block_n=128, swap_ab=True)
    return cfg


_DRIVER_MEMSET: list = []  # [cuMemsetD32Async through ctypes], or [None] where libcuda cannot be loaded


def driver_memset():
    """cuMemsetD32Async from the CUDA driver, ``f(ptr, value, count, stream) -> status`` (0 = success),
    or None where libcuda cannot be loaded."""
    if not _DRIVER_MEMSET:
        import ctypes

        try:
            fn = ctypes.CDLL("libcuda.so.1").cuMemsetD32Async
            fn.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _DRIVER_MEMSET.append(fn)
        except (OSError, AttributeError):
            _DRIVER_MEMSET.append(None)
    return _DRIVER_MEMSET[0]


def _hook_set(hook) -> bool:
    """Whether a launch hook would do anything: None and an empty HookChain (Triton 3.6) do not."""
    return bool(getattr(hook, "calls", hook))


class _Launch:
    """One Triton kernel with every argument fixed except those at ``dynamic`` positions.

    The first call goes through ``JITFunction.run`` (compiling if needed) and keeps the compiled
    kernel; later calls go to ``fast``, which takes the stream and the dynamic arguments (in position
    order, tensors or ints holding their addresses) and hands them to the kernel's launcher. Under the
    interpreter, or where the kernel has pre-run hooks, every call takes the ordinary path.
    """

    def __init__(self, fn, grid: tuple[int, ...], args: list, kwargs: dict, options: dict):
        import inspect

        self.fn, self.grid, self.kwargs, self.options = fn, grid, kwargs, options
        sig = inspect.signature(fn.fn)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        self.args = list(bound.arguments.values())  # every parameter, constexprs included, in order
        self.n_positional = len(args)
        self.compiled = None
        self.fast = None
        self.direct = False  # whether fast calls Triton 3.6's generated C launcher itself

    def __call__(self, *dynamic: tuple[int, object]) -> None:
        if self.fast is not None:
            from triton.runtime import driver

            self.fast(driver.active.get_current_stream(self.device), *(v for _, v in sorted(dynamic, key=_first)))
            return
        args = self.args.copy()
        for i, value in dynamic:
            args[i] = value
        compiled = self.fn[self.grid](*args[: self.n_positional], **self.kwargs, **self.options)
        if compiled is not None and not getattr(self.fn, "pre_run_hooks", None) and hasattr(compiled, "run"):
            from triton.runtime import driver

            compiled._init_handles()
            self.compiled = compiled
            self.device = driver.active.get_current_device()
            self.fast = self._make_fast(sorted(i for i, _ in dynamic))

    def _make_fast(self, dynamic: list[int]):
        """A launcher taking the stream and the dynamic arguments (in position order)."""
        from triton import knobs

        compiled, run, function, packed = self.compiled, self.compiled.run, self.compiled.function, \
            self.compiled.packed_metadata
        runtime = knobs.runtime
        g = self.grid
        g0, g1, g2 = g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1
        grid = (g0, g1, g2)
        # The plan's own tensors (weights, scales: kept alive by self.args) go in as addresses.
        static = [a.data_ptr() if isinstance(a, Tensor) else a for a in self.args]
        direct = _direct_launcher(run)
        self.direct = direct is not None

        def hooked(stream, full):
            enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
            metadata = compiled.launch_metadata(grid, stream, *full)
            run(g0, g1, g2, stream, function, packed, metadata, enter, leave, *full)

        if len(dynamic) == 2:
            i, j = dynamic
            pre, mid, post = tuple(static[:i]), tuple(static[i + 1:j]), tuple(static[j + 1:])
            if direct is not None:
                launch, coop, pdl = direct

                def fast(stream, first, second):
                    if _hook_set(runtime.launch_enter_hook) or _hook_set(runtime.launch_exit_hook):
                        return hooked(stream, (*pre, first, *mid, second, *post))
                    launch(g0, g1, g2, stream, function, coop, pdl, None, None, packed, None, None, None,
                           *pre, first, *mid, second, *post)
            else:
                def fast(stream, first, second):
                    if _hook_set(runtime.launch_enter_hook) or _hook_set(runtime.launch_exit_hook):
                        return hooked(stream, (*pre, first, *mid, second, *post))
                    run(g0, g1, g2, stream, function, packed, None, None, None, *pre, first, *mid, second, *post)
            return fast

        def general(stream, *values):
            full = list(static)
            for i, v in zip(dynamic, values, strict=True):
                full[i] = v
            if _hook_set(runtime.launch_enter_hook) or _hook_set(runtime.launch_exit_hook):
                return hooked(stream, full)
            run(g0, g1, g2, stream, function, packed, None, None, None, *full)
        return general


def _first(item: tuple) -> int:
    return item[0]


_new_empty, _new_zeros = Tensor.new_empty, Tensor.new_zeros


def _direct_launcher(run) -> tuple | None:
    """(launch, cooperative, pdl) of Triton 3.6's CudaLauncher where calling its C ``launch`` directly is
    what ``run`` would do (no scratch memory, one CTA per program, no tensor descriptors); else None."""
    launch = getattr(run, "launch", None)
    if not (triton.__version__.startswith("3.6.") and type(run).__name__ == "CudaLauncher"
            and launch is not None and type(launch).__name__ != "function" and not hasattr(run, "arg_annotations")
            and getattr(run, "global_scratch_size", 1) == 0 and getattr(run, "profile_scratch_size", 1) == 0
            and getattr(run, "num_ctas", 1) == 1):
        return None
    return launch, run.launch_cooperative_grid, run.launch_pdl


def _use_tma_a(cfg: GPTQConfig, a2: Tensor, has_a_perm: bool) -> bool:
    """Whether the swapped kernel reads A through a TMA descriptor (``cfg.tma_a``, where it can).

    The copy engine needs a row-major A with 16-byte-aligned base and row stride, and a GPU of compute
    capability 9.0 or later (the interpreter runs descriptors too). BLOCK_M >= 256 with 3+ stages is
    refused: on Triton 3.6 (H100) those tiles computed garbage with descriptors, with 2 stages or
    BLOCK_M = 128 they were right (seen 2026-11-23, cause not established; NOTES.md, "TMA for A").
    """
    if not cfg.tma_a or has_a_perm or (cfg.block_m >= 256 and cfg.num_stages >= 3):
        return False
    if a2.stride(1) != 1 or a2.data_ptr() % 16 or (a2.stride(0) * a2.element_size()) % 16:
        return False
    if a2.is_cuda and torch.cuda.get_device_capability(a2.device)[0] < 9:
        return False
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401
    except ImportError:  # a Triton without host-side descriptors
        return False
    return True


def _a_descriptor(block_m: int, block_k: int):
    """A function making the TMA descriptor of A (M, K) with block (block_m, block_k), once per call
    (the descriptor holds A's address)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    block = [block_m, block_k]

    def make(a2: Tensor):
        return TensorDescriptor(a2, a2.shape, a2.stride(), block)
    return make


class _Replan(Exception):
    """Raised by a plan whose kernel turned out to be unavailable: plan the call again."""


def _ws_choice(a2: Tensor, weight: GPTQWeight, explicit: bool) -> WSTile | None:
    """The warp-specialised prefill kernel's WSTile for this call (configs.ws_tile), or None
    where it cannot run or measured slower. ``explicit``: asked for by name, so any M gets a tile."""
    from solutions.gptq import ws_prefill
    from solutions.gptq.configs import ws_tile

    return ws_tile(a2.shape[0], weight.k, weight.n, explicit) if ws_prefill.supported(a2, weight) else None


class _Plan:
    """Everything a call of :func:`gptq_matmul` needs besides A (see the comment above _Launch).

    ``hot`` is set once the kernel is compiled, for the common fused call without deterministic
    split-K: a closure doing only the allocation, the zero-fill (split-K) and the launch.
    """

    def __init__(self, a2: Tensor, weight: GPTQWeight, cfg: GPTQConfig | None, deterministic: bool,
                 method: str) -> None:
        m, k = a2.shape
        n = weight.n
        self.m, self.n, self.mn, self.bias = m, n, (m, n), weight.bias
        self.hot = None
        has_g_idx = weight.g_idx is not None
        w_mma_ok = (weight.qweight_mma is not None and not has_g_idx
                    and (weight.group_size % 32 == 0 or weight.group_size >= k))
        self.requested = method
        ws_tile = _ws_choice(a2, weight, explicit=method == "ws") if method in ("auto", "ws") and cfg is None \
            else None
        if method == "ws" and ws_tile is None:
            raise ValueError("method='ws' needs a Hopper GPU, Gluon, the repacked weights, K and N multiples of "
                             "128, one group per 128 rows of K, no act-order permutation, and no config")
        if method == "auto":
            method = "ws" if ws_tile else (
                "dequant" if (cfg is None and a2.is_cuda and use_dequant(m, weight)) else "fused")
        self.method = method
        self.launches: list[_Launch] = []
        self.atomic = self.partial = self.bias_init = False
        self.a_arg = Tensor.data_ptr  # what the launch gets for A: its address, or a TMA descriptor
        self.stream_k_programs = None  # the ws kernel's scratch (argument 5): its programs with stream-K, else 0
        g = weight.group_size
        if method == "dequant":
            self._plan_dequant(weight, k, n, w_mma_ok)
            return
        if method == "ws":
            from solutions.gptq import ws_prefill

            kernel, grid, args, options, self.a_arg = ws_prefill.launch_spec(m, weight, *ws_tile)
            self.launches.append(_Launch(kernel, grid, args, {}, options))
            self.c_index, self.splits = 4, 1
            self.stream_k_programs = grid[0] if ws_tile.stream_k else 0
            return
        if cfg is None:
            cfg = default_config(m, weight)
        if cfg.block_k % 32 or cfg.block_m < 16 or cfg.block_n < 16:
            raise ValueError("block_k must be a multiple of 32; block_m and block_n at least 16 (tl.dot)")
        k_per_split, splits = plan_split_k(k, cfg.block_k, cfg.split_k)
        self.splits = splits
        scales = weight.scales if weight.scales.stride(1) == 1 else weight.scales.contiguous()
        # Split-K without determinism adds the shares into a zeroed C with atomics; deterministic
        # split-K stores fp32 shares that a second kernel sums in order; one share stores C directly.
        self.atomic = splits > 1 and not deterministic
        self.partial = splits > 1 and deterministic
        # With atomics, C can start as the bias instead of zeros: one kernel instead of a fill and an add.
        self.bias_init = (self.atomic and weight.bias is not None and weight.bias.dtype == torch.float16
                          and tuple(weight.bias.shape) == (n,))
        if self.partial:
            stride_cs, stride_cm, stride_cn = m * n, n, 1
        else:
            stride_cs, stride_cm, stride_cn = 0, n, 1

        unused = weight.scales  # pointers that a constexpr flag leaves unread still need a tensor
        scales32 = scales.view(torch.int32)  # (K / G, N / 2): two fp16 scales per word
        one_group_per_step = g % cfg.block_k == 0 or g >= k
        swap_ab = cfg.swap_ab or has_g_idx
        flags = dict(
            ZERO_OFFSET=weight.zero_offset,
            HAS_A_PERM=weight.a_perm is not None,
            ONE_GROUP_PER_STEP=one_group_per_step,
            # Scaling the MMA result costs BLOCK_M x BLOCK_N multiplies a step, scaling the weights
            # BLOCK_K x BLOCK_N / 2 (half2): by default the cheaper, where the step has one group.
            SCALE_AFTER_DOT=one_group_per_step and not has_g_idx and (
                cfg.scale_after_dot if cfg.scale_after_dot is not None else 2 * cfg.block_m <= cfg.block_k),
            PTX_DEQUANT=cfg.ptx_dequant and a2.is_cuda and not has_g_idx,
            ATOMIC_OUT=self.atomic,
            EVEN_K=k % cfg.block_k == 0,
            EVEN_N=n % cfg.block_n == 0,
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m, GROUP_SIZE=g,
        )
        options = dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        if cfg.maxnreg is not None and a2.is_cuda:
            options["maxnreg"] = cfg.maxnreg
        grid = (triton.cdiv(m, cfg.block_m) * triton.cdiv(n, cfg.block_n), splits)
        a_perm = weight.a_perm if weight.a_perm is not None else unused
        if swap_ab:
            # The repacked copy comes in blocks of 128 columns x 128 rows of K (BLOCK_K = 128), and each
            # of its words holds rows from 32 consecutive rows of K: one group only if 32 divides G.
            w_mma = w_mma_ok and cfg.block_k == 128 and (128 % cfg.block_n == 0 or cfg.block_n % 128 == 0)
            if not w_mma and weight.qweight is None:
                raise ValueError(f"{cfg} cannot read the repacked weights (BLOCK_K = 128 needed) and the plain "
                                 "qweight was dropped at load time (load_gptq_layer(..., keep_plain=True))")
            qw = weight.qweight_mma if w_mma else weight.qweight
            stride_qk, stride_qn = (128, qw.stride(0)) if w_mma else (qw.stride(0), qw.stride(1))
            args = [None, qw, scales32, scales, weight.qzeros, weight.g_idx if has_g_idx else unused, a_perm, None,
                    m, n, k, k_per_split, a2.stride(0), a2.stride(1), stride_qk, stride_qn,
                    scales.stride(0), scales.stride(1), scales32.stride(0),
                    weight.qzeros.stride(0), weight.qzeros.stride(1), stride_cs, stride_cm, stride_cn]
            # 8 warps: load the words in wgmma's row order (see _mma_row_order); 4 warps need no help.
            load_warps = 8 if w_mma and cfg.num_warps == 8 and cfg.block_n % 128 == 0 else 0
            a_desc = _use_tma_a(cfg, a2, weight.a_perm is not None)
            if a_desc:
                self.a_arg = _a_descriptor(cfg.block_m, cfg.block_k)
            self.launches.append(_Launch(_gptq_small_m_kernel, grid, args, dict(HAS_G_IDX=has_g_idx, W_MMA=w_mma,
                                                                                 LOAD_WARPS=load_warps, A_DESC=a_desc,
                                                                                 **flags),
                                         options))
            self.c_index = 7
        else:
            if weight.qweight is None:
                raise ValueError("swap_ab=False reads the plain qweight, which was dropped at load time "
                                 "(load_gptq_layer(..., keep_plain=True) keeps it)")
            qw = weight.qweight
            args = [None, qw, scales32, weight.qzeros, a_perm, None, m, n, k, k_per_split,
                    a2.stride(0), a2.stride(1), qw.stride(0), qw.stride(1), scales32.stride(0),
                    weight.qzeros.stride(0), weight.qzeros.stride(1), stride_cs, stride_cm, stride_cn]
            self.launches.append(_Launch(_gptq_large_m_kernel, grid, args, flags, options))
            self.c_index = 5
        if self.partial:
            block = 1024
            self.reduce = _Launch(_splitk_reduce_kernel, (triton.cdiv(m * n, block),), [None, None, m * n],
                                  dict(SPLIT_K=splits, BLOCK=block), {})

    def _plan_dequant(self, weight: GPTQWeight, k: int, n: int, w_mma: bool) -> None:
        """Dequantize W into an fp16 temporary, a chunk of columns at a time, and multiply with cuBLAS."""
        if not w_mma and weight.qweight is None:
            raise ValueError("the dequantize path needs the plain qweight or the repacked copy")
        block_n = 128
        chunk = max(block_n, DEQUANT_CHUNK_BYTES // (2 * k) // block_n * block_n)
        self.chunks = [(n0, min(n0 + chunk, n)) for n0 in range(0, n, chunk)]
        self.temp_cols = min(chunk, n)
        qw = weight.qweight_mma if w_mma else weight.qweight
        stride_qk, stride_qn = (0, qw.stride(0)) if w_mma else (qw.stride(0), qw.stride(1))
        unused = weight.scales
        for n0, n_end in self.chunks:
            args = [qw, weight.qzeros, weight.scales, weight.g_idx if weight.g_idx is not None else unused,
                    weight.a_perm if weight.a_perm is not None else unused, None, k, n, n0, n_end,
                    stride_qk, stride_qn, weight.qzeros.stride(0), weight.qzeros.stride(1),
                    weight.scales.stride(0), weight.scales.stride(1), self.temp_cols, 1]
            flags = dict(ZERO_OFFSET=weight.zero_offset, HAS_G_IDX=weight.g_idx is not None,
                         HAS_A_PERM=weight.a_perm is not None, W_MMA=w_mma, GROUP_SIZE=weight.group_size,
                         BLOCK_N=block_n)
            grid = (triton.cdiv(k, 128), triton.cdiv(n_end - n0, block_n))
            self.launches.append(_Launch(_dequant_to_fp16_kernel, grid, args, flags, dict(num_warps=4)))

    def __call__(self, a2: Tensor) -> Tensor:
        mn = self.mn
        if self.method == "dequant":
            out = a2.new_empty(mn)
            temp = a2.new_empty((a2.shape[1], self.temp_cols))
            for (n0, n_end), launch in zip(self.chunks, self.launches, strict=True):
                w = temp if n_end - n0 == self.temp_cols else temp[:, : n_end - n0]
                launch((5, w))
                torch.mm(a2, w, out=out[:, n0:n_end])
            if self.bias is not None:
                out += self.bias
            return out
        launch = self.launches[0]
        first = launch.fast is None
        if self.atomic:
            # The split-K shares are added into C: zeroed, or holding the bias (no add afterwards).
            # Only calls without a hot closure get here; that closure zeroes C by a driver memset.
            if self.bias_init:
                out = c = self.bias.expand(mn).contiguous()
            else:
                out = c = a2.new_zeros(mn)
        elif self.partial:
            out = a2.new_empty(mn)
            c = a2.new_empty((self.splits, *mn), dtype=torch.float32)
        else:
            out = c = a2.new_empty(mn)
        dynamic = [(0, a2 if self.a_arg is Tensor.data_ptr else self.a_arg(a2)), (self.c_index, c)]
        if self.stream_k_programs is not None:
            from solutions.gptq.ws_prefill import scratch_arg

            dynamic.append((5, scratch_arg(c, self.stream_k_programs)))
        try:
            launch(*dynamic)
        except Exception as error:
            if not (first and self.method == "ws" and self.requested == "auto"):
                raise
            # The Gluon kernel did not compile or launch here (another Triton's Gluon API, say): warn
            # once, and gptq_matmul plans this call again without it.
            from solutions.gptq import ws_prefill

            ws_prefill.mark_unavailable(error)
            raise _Replan from error
        if self.partial:
            self.reduce((0, c), (1, out))
        if self.bias is not None and not self.bias_init:
            out += self.bias
        if first and launch.fast is not None and not self.partial:
            self.hot = self._make_hot(launch)
        return out

    def _make_hot(self, launch: _Launch):
        """The call of a compiled plan (fused kernel, one share or atomic split-K), as one closure."""
        from triton.runtime import driver

        fast, mn, bias, a_arg = launch.fast, self.mn, self.bias, self.a_arg
        get_stream, device = driver.active.get_current_stream, launch.device
        if self.stream_k_programs is not None:
            from solutions.gptq.ws_prefill import scratch_arg

            programs = self.stream_k_programs

            def hot_ws(a2: Tensor) -> Tensor:
                c = _new_empty(a2, mn)
                stream = get_stream(device)
                fast(stream, a_arg(a2), c.data_ptr(), scratch_arg(c, programs, stream))
                if bias is not None:
                    c += bias
                return c
            return hot_ws
        if not self.atomic or (bias is not None and not self.bias_init):
            zero = _new_zeros if self.atomic else _new_empty

            def hot(a2: Tensor) -> Tensor:
                c = zero(a2, mn)
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                if bias is not None:
                    c += bias
                return c
            return hot
        if bias is not None:
            def hot_bias(a2: Tensor) -> Tensor:
                c = bias.expand(mn).contiguous()  # the shares are added to the bias
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                return c
            return hot_bias
        d32 = driver_memset()
        words = self.m * self.n // 2  # N is a multiple of 8: the fp16 C is a whole number of 32-bit words
        if d32 is None or self.m * self.n % 2:
            def hot_zeroed(a2: Tensor) -> Tensor:
                c = a2.new_zeros(mn)
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                return c
            return hot_zeroed

        capturing = torch.cuda.is_current_stream_capturing

        def hot_memset(a2: Tensor) -> Tensor:
            c = a2.new_empty(mn)
            ptr = c.data_ptr()
            stream = get_stream(device)
            # A nonzero status (e.g. no CUDA context on this thread yet): torch zeroes C instead.
            if capturing() or d32(ptr, 0, words, stream):
                c.zero_()
            fast(stream, a_arg(a2), ptr)
            return c
        return hot_memset


def gptq_matmul(
    a: Tensor,
    weight: GPTQWeight,
    *,
    split_k: int | None = None,
    config: GPTQConfig | None = None,
    deterministic: bool = False,
    method: str = "auto",
) -> Tensor:
    """``a @ W`` for fp16 ``a`` of shape (..., K) and a 4-bit GPTQ weight W (K, N); fp16 (..., N).

    ``config`` defaults to the tuned table in :mod:`solutions.gptq.configs`; ``split_k`` overrides
    its split. Split-K shares are added with fp16 atomics (each share's fp32 tile is rounded once
    before the add); ``deterministic=True`` sums fp32 shares in a fixed order instead, so repeated
    calls give identical bits. ``method``: ``"fused"`` (the dequantize-and-multiply Triton kernels),
    ``"dequant"`` (dequantize W to fp16 in chunks, then cuBLAS), ``"ws"`` (the warp-specialised Gluon
    kernel of :mod:`solutions.gptq.ws_prefill`, Hopper only), ``"auto"`` (unless a config is given: on a
    Hopper GPU the warp-specialised kernel where :func:`solutions.gptq.configs.ws_tile` gives a tile,
    prefill sizes; else dequant where :func:`solutions.gptq.configs.select_method` says so, on a GPU; else
    fused). If the Gluon kernel fails to build once (another Triton's Gluon API), ``"auto"`` warns once
    and uses the others from then on.

    The launch is planned once per (M, A's strides and alignment, options) and cached on ``weight``;
    replacing a weight's tensors in place needs ``weight.clear_plans()``.
    """
    a2 = a if a.dim() == 2 else a.reshape(-1, a.shape[-1])
    # Everything a plan depends on is in the key, so a hit needs no further checks: Triton
    # specialises on 16-byte alignment and on strides equal to 1, hence the strides and alignment.
    # The options join the key only where one differs from its default (a shorter key to build).
    key = (a2.shape, a2.stride(), a2.data_ptr() % 16 == 0, a2.get_device(), a2.dtype)
    if config is not None or split_k is not None or deterministic or method != "auto":
        key += (config, split_k, deterministic, method)
    plan = weight._plans.get(key)
    if plan is not None and plan.hot is not None:
        out = plan.hot(a2)
        return out if a2 is a else out.reshape(*a.shape[:-1], plan.n)
    if plan is None:
        k, n = weight.k, weight.n
        if a.shape[-1] != k:
            raise ValueError(f"a has {a.shape[-1]} columns, the weight has K={k} rows")
        if a.dtype != torch.float16:
            raise TypeError(f"a must be fp16, got {a.dtype}")
        if a.device != weight.scales.device:
            raise ValueError(f"a is on {a.device}, the weight on {weight.scales.device}")
        if method not in ("auto", "fused", "dequant", "ws"):
            raise ValueError(f"method must be 'auto', 'fused', 'dequant' or 'ws', got {method!r}")
        if a2.shape[0] == 0:
            return a.new_empty((*a.shape[:-1], n))
        cfg = config
        if split_k is not None:
            cfg = replace(cfg if cfg is not None else default_config(a2.shape[0], weight), split_k=split_k)
        plan = _Plan(a2, weight, cfg, deterministic, method)
        weight._plans[key] = plan
    try:
        out = plan(a2)
    except _Replan:  # the warp-specialised kernel failed once: ws_prefill.supported() is False from now on
        plan = weight._plans[key] = _Plan(a2, weight, config, deterministic, method)
        out = plan(a2)
    return out if a2 is a else out.reshape(*a.shape[:-1], plan.n)
