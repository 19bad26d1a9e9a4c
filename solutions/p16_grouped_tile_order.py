"""Puzzle 16 reference: the grouped remap written out (tl.swizzle2d computes the same)."""

import triton
import triton.language as tl


@triton.jit
def grouped_order_kernel(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    # BEGIN SOLUTION
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_band = GROUP_M * tiles_n  # programs in one band of GROUP_M tile rows
    first_m = (pid // per_band) * GROUP_M  # the band's first tile row
    rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last band may be shorter than GROUP_M
    i = pid % per_band  # position inside the band: down a column, then the next column
    tile_m = first_m + i % rows
    tile_n = i // rows
    tl.store(z_ptr + 2 * pid, tile_m)
    tl.store(z_ptr + 2 * pid + 1, tile_n)
    # END SOLUTION
