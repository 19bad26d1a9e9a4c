"""Puzzle 14 reference: every element loads its word, shifts out its nibble and removes the offset."""

import triton
import triton.language as tl


@triton.jit
def unpack_int4_kernel(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    # BEGIN SOLUTION
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    k = tl.program_id(0) * BK + tl.arange(0, BK)  # rows of z (the packed axis)
    n = tl.program_id(1) * BN + tl.arange(0, BN)  # columns
    in_bounds = (k < K)[:, None] & (n < N)[None, :]
    # Row k is nibble k % 8 of word row k // 8: the same word serves 8 consecutive rows.
    words = tl.load(qweight_ptr + (k // FPINT)[:, None] * N + n[None, :], mask=in_bounds, other=0)
    q = (words >> ((k % FPINT) * 4)[:, None]) & 0xF  # mask after the (arithmetic) shift
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=in_bounds)
    # END SOLUTION
