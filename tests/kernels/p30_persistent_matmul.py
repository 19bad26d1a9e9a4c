"""Puzzle 30 (persistent matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists right answers in other styles than the reference (row-major tile order; a while loop over the
tiles). The others are graded in tests/course/test_persistent_track.py, each failing for the reason its docstring
gives. `# STORE_LINE` marks the line a verdict names."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile_m, tile_n, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    """One BM × BN tile of z = x @ y, masked at the edges."""
    m = tile_m * BM + tl.arange(0, BM)
    n = tile_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        y = tl.load(y_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))  # STORE_LINE


@triton.jit
def persistent_row_major(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Right: the tiles in row-major order (tile // TN, tile % TN): the same values, less reuse in L2."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, NUM_PROGRAMS):
        matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile // tiles_n, tile % tiles_n, BM, BN, BK)


@triton.jit
def persistent_while_swizzle(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Right: a while loop over the tiles, the grouped order from tl.swizzle2d."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    tile = tl.program_id(0)
    while tile < tiles_m * tiles_n:
        tile_m, tile_n = tl.swizzle2d(tile // tiles_n, tile % tiles_n, tiles_m, tiles_n, GROUP_M)
        matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile_m, tile_n, BM, BN, BK)
        tile += NUM_PROGRAMS


@triton.jit
def persistent_step_one(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Wrong: the loop steps by 1, so program p computes tiles p, p + 1, …: right values, each tile done by
    several programs (the tile-once check names it)."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n):
        matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile // tiles_n, tile % tiles_n, BM, BN, BK)


@triton.jit
def persistent_loop_from_zero(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                              GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Wrong: the loop starts at 0: every program computes tiles 0, NUM_PROGRAMS, …; the others are never stored."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    for tile in range(0, tiles_m * tiles_n, NUM_PROGRAMS):
        tile_m, tile_n = tl.swizzle2d(tile // tiles_n, tile % tiles_n, tiles_m, tiles_n, GROUP_M)
        matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile_m, tile_n, BM, BN, BK)


@triton.jit
def persistent_split_by_tiles_m(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                                GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Wrong: row-major with the tile index split by TM (tile // TM, tile % TM): tiles past TN are masked off and
    others never reached."""
    tiles_m = tl.cdiv(M, BM)
    for tile in range(tl.program_id(0), tiles_m * tl.cdiv(N, BN), NUM_PROGRAMS):
        matmul_tile(x_ptr, y_ptr, z_ptr, M, N, K, tile // tiles_m, tile % tiles_m, BM, BN, BK)


@triton.jit
def persistent_accumulator_outside(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                   BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    """Wrong: acc is created once per program, so each tile carries the sums of the program's earlier tiles."""
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for tile in range(tl.program_id(0), tiles_m * tiles_n, NUM_PROGRAMS):
        tile_m, tile_n = tl.swizzle2d(tile // tiles_n, tile % tiles_n, tiles_m, tiles_n, GROUP_M)
        m = tile_m * BM + tl.arange(0, BM)
        n = tile_n * BN + tl.arange(0, BN)
        for k0 in range(0, K, BK):
            k = k0 + tl.arange(0, BK)
            x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
            y = tl.load(y_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


CORRECT = (persistent_row_major, persistent_while_swizzle)
BUILDING_BLOCKS = (matmul_tile,)  # a helper the kernels call, never graded itself
