"""Puzzle 14, fast reference: each packed word loaded once and unpacked into its 8 rows.

Same signature, grid and result as solutions/p14_unpack_int4.py. The teaching reference loads, for every
element, the word that holds it: each word 8 times (the repeats served by the cache). Here a program loads
its BK/8 x BN words once, shifts each by the 8 nibble offsets at once (a BK/8 x 8 x BN tile, nibble n of
word r being row 8r + n) and reshapes that to the BK x BN output tile.
"""

import triton
import triton.language as tl


@triton.jit
def unpack_int4_kernel(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    WORDS: tl.constexpr = BK // FPINT  # word rows per tile
    word_row = tl.program_id(0) * WORDS + tl.arange(0, WORDS)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    words = tl.load(qweight_ptr + word_row[:, None] * N + n[None, :],
                    mask=(word_row < K // FPINT)[:, None] & (n < N)[None, :], other=0)
    nibbles = (words[:, None, :] >> (tl.arange(0, FPINT) * 4)[None, :, None]) & 0xF  # WORDS x 8 x BN
    z = tl.reshape(nibbles - 8, (BK, BN)).to(tl.int8)
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    tl.store(z_ptr + k[:, None] * N + n[None, :], z, mask=(k < K)[:, None] & (n < N)[None, :])
