"""Puzzle 17 (splitk matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

from solutions.p17_splitk_matmul import splitk_matmul_kernel as _splitk

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def splitk_unaligned_ranges(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    share = tl.cdiv(K, SPLIT_K)  # rows per part, not a multiple of BK
    lo = part * share
    hi = tl.minimum(lo + share, K)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(lo, hi, BK):
        k = k0 + tl.arange(0, BK)
        kin = k < hi
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & kin[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=kin[:, None] & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def splitk_row_interleaved(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    # each part takes rows part, part + SPLIT_K, ... (a strided share of K), BK rows at a time
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for j0 in range(0, tl.cdiv(K, SPLIT_K), BK):
        k = (j0 + tl.arange(0, BK)) * SPLIT_K + part
        kin = k < K
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & kin[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=kin[:, None] & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def splitk_contiguous_ranges(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    m = pid_m * BM + tl.arange(0, BM)
    n = pid_n * BN + tl.arange(0, BN)
    chunks = tl.cdiv(K, BK)
    per_part = tl.cdiv(chunks, SPLIT_K)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for c in range(pid_k * per_part, tl.minimum((pid_k + 1) * per_part, chunks)):
        k = c * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N), sem="relaxed")


@triton.jit
def splitk_tutorial_style(
    a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr
):
    pid_k = tl.program_id(2)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = pid_k * BK + tl.arange(0, BK)
    A = a_ptr + rm[:, None] * K + rk[None, :]
    B = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK * SPLIT_K)):
        k_remaining = K - k * (BK * SPLIT_K)
        a = tl.load(A, mask=(rk[None, :] < k_remaining) & (rm[:, None] < M), other=0.0)
        b = tl.load(B, mask=(rk[:, None] < k_remaining) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        A += BK * SPLIT_K
        B += BK * SPLIT_K * N
    tl.atomic_add(z_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def splitk_to_last_index(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K - 1, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


# -- the wrong dtype -----------------------------------------------------------------------------------------
@triton.jit
def splitk_float16_products(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b, out_dtype=tl.float16).to(tl.float32)  # each chunk summed in float16
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def splitk_read_add_write(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    out = z_ptr + m[:, None] * N + n[None, :]
    om = (m[:, None] < M) & (n[None, :] < N)
    tl.store(out, tl.load(out, mask=om, other=0.0) + acc, mask=om)  # not atomic: parts overwrite each other


@triton.jit
def splitk_matmul_kernel_rows_of_16(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk(a_ptr, b_ptr, z_ptr, M, N, K, 16, BN, BK, SPLIT_K)


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



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def splitk_every_part_over_all_of_k(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr, SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):  # the whole of K in every part
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def splitk_with_a_float16_accumulator(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                      BK: tl.constexpr, SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float16)  # tl.dot gives float32: the loop widens it
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 SPLIT_K: tl.constexpr, HOW: tl.constexpr):
    """Split-K in rounds with tl.dot(a, b, acc). HOW: 0 right; 1 part 0 reduces all of K and stores its tile
    (the other parts do nothing); 2 the same with tl.atomic_add; 3 part 0 exchanges its tile in, the others
    add theirs; 4 part 0 stores its tile, the others add theirs; 5 right, with contiguous ranges of K;
    6 every part loads every chunk and keeps only its own (right values, every row read SPLIT_K times)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    part = tl.program_id(2)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    alone = (HOW == 1) | (HOW == 2)
    rounds = tl.cdiv(K, BK * SPLIT_K)
    if alone:
        rounds = tl.cdiv(K, BK) * (part == 0)
    first = 0
    if HOW == 5:
        rounds = tl.cdiv(tl.cdiv(K, BK), SPLIT_K)
        first = part * rounds
    if HOW == 6:
        rounds = tl.cdiv(K, BK)
    for r in range(0, rounds):
        if alone or HOW == 6:
            k = r * BK + tl.arange(0, BK)
        elif HOW == 5:
            k = (first + r) * BK + tl.arange(0, BK)
        else:
            k = (r * SPLIT_K + part) * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        if HOW == 6:
            b = tl.where((r % SPLIT_K) == part, b, 0.0)
        acc = tl.dot(a, b, acc)
    tile = z_ptr + m[:, None] * N + n[None, :]
    tile_in = (m < M)[:, None] & (n < N)[None, :]
    if HOW == 1:
        tl.store(tile, acc, mask=tile_in & (part == 0))
    elif HOW == 3:
        if part == 0:
            tl.atomic_xchg(tile, acc, mask=tile_in)
        else:
            tl.atomic_add(tile, acc, mask=tile_in)
    elif HOW == 4:
        if part == 0:
            tl.store(tile, acc, mask=tile_in)
        else:
            tl.atomic_add(tile, acc, mask=tile_in)
    else:
        tl.atomic_add(tile, acc, mask=tile_in)


@triton.jit
def splitk_in_rounds(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 0)


@triton.jit
def splitk_part_zero_stores_all(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1)


@triton.jit
def splitk_part_zero_adds_all(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 2)


@triton.jit
def splitk_exchange_then_add(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 3)


@triton.jit
def splitk_store_then_add(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 4)


@triton.jit
def splitk_contiguous(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 5)


@triton.jit
def splitk_every_part_reads_all(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body_of_hole(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 6)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 SPLIT_K: tl.constexpr, MASK_K: tl.constexpr, ALL_K: tl.constexpr, WRITE: tl.constexpr):
    """Puzzle 17's reference with one mistake switched on by a flag (kept in one place so only the flag differs).

    MASK_K=0: no mask along K; ALL_K=1: every part reduces all of K; WRITE: 0 atomic add, 1 plain store,
    2 load-add-store."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # ALL_K forgets the part: every one of the SPLIT_K programs adds the whole product.
    for k0 in range(tl.program_id(2) * BK * (1 - ALL_K), K, BK * (SPLIT_K - ALL_K * (SPLIT_K - 1))):
        k = k0 + tl.arange(0, BK)
        k_in = (k < K) | (MASK_K == 0)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & k_in[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(a, b)
    tile = z_ptr + m[:, None] * N + n[None, :]
    tile_in = (m < M)[:, None] & (n < N)[None, :]
    if WRITE == 0:
        tl.atomic_add(tile, acc, mask=tile_in)
    elif WRITE == 1:  # each part overwrites the others: only the last part's share of K survives
        tl.store(tile, acc, mask=tile_in)
    else:  # right in the interpreter (programs run one by one), a lost update on a GPU
        tl.store(tile, tl.load(tile, mask=tile_in) + acc, mask=tile_in)


@triton.jit
def splitk_without_k_mask(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 0, 0, 0)


@triton.jit
def splitk_store_instead_of_add(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 0, 1)


@triton.jit
def splitk_load_add_store(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 0, 2)


@triton.jit
def splitk_every_part_takes_all_of_k(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                     BK: tl.constexpr, SPLIT_K: tl.constexpr):
    _splitk_body(a_ptr, b_ptr, z_ptr, M, N, K, BM, BN, BK, SPLIT_K, 1, 1, 0)


CORRECT = (splitk_unaligned_ranges, splitk_row_interleaved, splitk_contiguous_ranges, splitk_tutorial_style)
