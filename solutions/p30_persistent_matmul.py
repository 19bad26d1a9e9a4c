"""Puzzle 30 reference: a persistent matmul. NUM_PROGRAMS programs share the output tiles, each looping over every
NUM_PROGRAMS-th tile in grouped order (puzzle 16), one tl.dot accumulation per tile."""

import triton
import triton.language as tl


@triton.jit
def persistent_matmul_kernel(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    # BEGIN SOLUTION
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tiles_m * tiles_n
    per_band = GROUP_M * tiles_n  # tiles in one band of GROUP_M tile rows
    for tile in range(pid, num_tiles, NUM_PROGRAMS):  # this program's tiles: pid, pid + NUM_PROGRAMS, ...
        first_m = (tile // per_band) * GROUP_M
        rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last band may be shorter
        tile_m = first_m + (tile % per_band) % rows
        tile_n = (tile % per_band) // rows
        m = tile_m * BM + tl.arange(0, BM)
        n = tile_n * BN + tl.arange(0, BN)
        acc = tl.zeros([BM, BN], dtype=tl.float32)  # a fresh accumulator for every tile
        for k0 in range(0, K, BK):
            k = k0 + tl.arange(0, BK)
            x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
            y = tl.load(y_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))
    # END SOLUTION
