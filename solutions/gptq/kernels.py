"""The Triton kernels of GPTQ int4 dequantize-and-multiply, split-K: ``C = A @ W`` with W stored as 4-bit GPTQ.

One program owns a BLOCK_M x BLOCK_N tile of C and a contiguous share of K. It streams the packed
int32 words of W for that share, unpacks the 8 rows of each word in registers, dequantizes them
with their group's scale and zero point and accumulates in fp32 with ``tl.dot``. With split-K the
shares are added into C: by fp16 atomics (fast, order not fixed) or, with ``deterministic=True``,
by storing fp32 partial tiles into a (SPLIT_K, M, N) buffer that a second kernel sums in a fixed
order.

Two kernels share the unpacking and dequantization helpers (design notes and measurements in
benchmarks/gptq/NOTES.md):

* ``gptq_small_m_kernel`` (``swap_ab=True``; every entry of the tuned table, M = 1 to 4096)
  computes the transposed tile ``C^T = W^T @ A^T``: the dequantized weights are the *first* MMA
  operand, which Hopper's wgmma reads straight from registers, so W never goes through shared
  memory; only the A tile does. The 8 nibbles of a word are placed at the K positions that the
  wgmma register fragment gives the thread that unpacked them (``dequant.slots_to_mma_order``), so no
  layout conversion sits between the dequantization and the MMA. On ``GPTQWeight.qweight_mma``
  (``loader.repack_for_mma``, BLOCK_K = 128) each word already holds the rows of those positions,
  A is used as stored, each K step of a program is one contiguous block and each thread's words
  one 16-byte vector. On the plain ``qweight`` (word i holds rows 8i..8i+7) A's rows are permuted
  to match (``dequant.rows_to_mma_order``: a dot product does not care about the order of K as long as
  both operands agree), at the cost of a shared-memory round trip of the A tile per step.
  Prefill sizes (M >= 256) use it with 8 warps, 128 columns and 128-256 rows of A per tile: each
  warpgroup dequantizes 64 columns once per K step for all those rows, and the words are loaded
  in wgmma's row order (``_mma_row_order``) so that no layout conversion is needed there either.
* ``gptq_large_m_kernel`` (``swap_ab=False``) computes ``C = A @ W`` in natural K order; the
  dequantized W tile goes to shared memory as wgmma's B operand and is reused by BLOCK_M rows of
  A. Since the natural-order repacking it is slower at every measured M <= 128 and no tuned
  config picks it; it reads only the plain ``qweight``, which the default load drops (prefill
  runs the swapped kernel with 8 warps instead). It stays for ``swap_ab=False``, untuned: the
  baseline of benchmarks/gptq/bench.py's "published" column (``configs.PUBLISHED_SPLIT_K``), which
  loads the weights with ``keep_plain=True``.

Two more kernels serve them: :func:`splitk_reduce_kernel` sums deterministic split-K shares in a fixed
order, and :func:`dequant_to_fp16_kernel` writes W as fp16 for the dequantize-then-cuBLAS path. Which
kernel a call runs, and with what arguments, is decided once per call signature by
:mod:`solutions.gptq.plans`; the dequantization itself is in :mod:`solutions.gptq.dequant`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from solutions.gptq.dequant import (
    dequant_slot_g_idx,
    dequant_words,
    rows_to_mma_order,
    slots_to_mma_order,
    slots_to_rows,
)
from solutions.gptq.pdl import (
    MATMUL_EARLY,
    PREFETCH,
    PREFETCH_FIRST,
    PREFETCH_TWO,
    prefetch_to_l2,
    start_next_kernel,
    wait_for_previous_kernel,
)


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
def _prefetch_mma_share(qweight_ptr, pid_n, N, k_start, k_end, stride_qk, stride_qn, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, STEPS: tl.constexpr):
    """Ask L2 for a program's share of the repacked weights (tile pid_n, rows k_start..k_end of K): its first
    STEPS K steps, or all of them (STEPS = -1). Per K step, each column's 16 words are 64 contiguous bytes,
    so one pointer per two columns covers each line."""
    BLOCK_KW: tl.constexpr = BLOCK_K // 8
    n0 = pid_n * BLOCK_N
    cols = tl.arange(0, BLOCK_N // 2) * 2
    if BLOCK_N > 128:
        col_offs = (cols // 128) * stride_qn + (cols % 128) * BLOCK_KW
    else:
        col_offs = cols * BLOCK_KW
    ptrs = qweight_ptr + (n0 // 128) * stride_qn + (n0 % 128) * BLOCK_KW + (k_start // 8) * stride_qk + col_offs
    ptrs = tl.where(n0 + cols < N, ptrs, qweight_ptr)  # a ragged last tile: no line past the weights
    if STEPS == 1:
        prefetch_to_l2(ptrs)
    else:
        end = k_end if STEPS < 0 else tl.minimum(k_end, k_start + STEPS * BLOCK_K)
        for _ in range(k_start, end, BLOCK_K):
            prefetch_to_l2(ptrs)
            ptrs += BLOCK_KW * stride_qk


@triton.jit
def gptq_small_m_kernel(
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
    PDL: tl.constexpr = 0,  # flags of solutions.gptq.pdl: launched with PDL, wait before touching A or C
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
    if PDL:
        # Nothing above read memory. The weights are no kernel's output: their reads may start while the
        # previous kernel still runs (into L2); A and C only after it has finished.
        if PDL & MATMUL_EARLY:
            start_next_kernel()
        if W_MMA and (PDL & (PREFETCH | PREFETCH_FIRST | PREFETCH_TWO)):
            _prefetch_mma_share(qweight_ptr, pid_n, N, k_start, k_end, stride_qk, stride_qn, BLOCK_N, BLOCK_K,
                                -1 if PDL & PREFETCH else (PDL // PREFETCH_FIRST) % 4)
        wait_for_previous_kernel()

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
            a_t = rows_to_mma_order(a_t, BLOCK_M, BLOCK_K)

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
            x0 = dequant_slot_g_idx(words, 0, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x1 = dequant_slot_g_idx(words, 1, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x2 = dequant_slot_g_idx(words, 2, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x3 = dequant_slot_g_idx(words, 3, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x4 = dequant_slot_g_idx(words, 4, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x5 = dequant_slot_g_idx(words, 5, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x6 = dequant_slot_g_idx(words, 6, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            x7 = dequant_slot_g_idx(words, 7, offs_kw, kw_in_bounds, offs_n, n_in_bounds, zero_shift, g_idx_ptr,
                                     scales_ptr, qzeros_ptr, stride_sg, stride_sn, stride_zg, stride_zn, ZERO_OFFSET)
            scale_bits = zero_shift  # unused: the weights are scaled (SCALE_AFTER_DOT needs one group per step)
        else:
            # G is a multiple of 8, so the 8 rows of a word share one group.
            zero, scale_bits = _step_zeros_scales(qzeros_ptr, scales32_ptr, k0, offs_kw, kw_in_bounds, offs_n,
                                                  n_in_bounds, zero_shift, scale_shift, stride_zg, stride_zn,
                                                  stride_s32g, GROUP_SIZE, ZERO_OFFSET, ONE_GROUP_PER_STEP, True)
            bits = scale_bits[:, None] if ONE_GROUP_PER_STEP else scale_bits
            x0, x1, x2, x3, x4, x5, x6, x7 = dequant_words(words, zero, bits, PTX_DEQUANT, not SCALE_AFTER_DOT)

        w_t = slots_to_mma_order(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_N, BLOCK_K)
        acc = _mma_step(acc, w_t, a_t, scale_bits, SCALE_AFTER_DOT, True)  # a row of C^T per output column
        offs_k, offs_kw, a_ptrs, w_ptrs = _next_k_step(offs_k, offs_kw, a_ptrs, w_ptrs, stride_ak, stride_qk,
                                                       HAS_A_PERM, BLOCK_K, BLOCK_KW)

    if PDL and not (PDL & MATMUL_EARLY):
        start_next_kernel()
    c_ptrs = c_ptr + tl.program_id(1) * stride_cs + offs_n[:, None] * stride_cn + offs_m[None, :] * stride_cm
    _write_tile(c_ptrs, acc, n_in_bounds[:, None] & m_in_bounds[None, :], ATOMIC_OUT)


@triton.jit
def gptq_large_m_kernel(
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
            x0, x1, x2, x3, x4, x5, x6, x7 = dequant_words(words, zero, scale_bits, PTX_DEQUANT, False)
        else:
            bits = scale_bits if not ONE_GROUP_PER_STEP else scale_bits[None, :]
            x0, x1, x2, x3, x4, x5, x6, x7 = dequant_words(words, zero, bits, PTX_DEQUANT, True)
        w = slots_to_rows(x0, x1, x2, x3, x4, x5, x6, x7, BLOCK_K, BLOCK_N)
        acc = _mma_step(acc, a, w, scale_bits, SCALE_AFTER_DOT, False)  # a column of C per output column
        offs_k, offs_kw, a_ptrs, w_ptrs = _next_k_step(offs_k, offs_kw, a_ptrs, w_ptrs, stride_ak, stride_qk,
                                                       HAS_A_PERM, BLOCK_K, BLOCK_KW)

    c_ptrs = c_ptr + tl.program_id(1) * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    _write_tile(c_ptrs, acc, m_in_bounds[:, None] & n_in_bounds[None, :], ATOMIC_OUT)


@triton.jit
def splitk_reduce_kernel(partial_ptr, c_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """c[i] = sum over s of partial[s, i], always in the order s = 0, 1, ...: bitwise reproducible."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(partial_ptr + s * MN + offs, mask=in_bounds, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=in_bounds)


@triton.jit
def dequant_to_fp16_kernel(
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
