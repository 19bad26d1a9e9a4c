"""Puzzle 32 (FP8 scaled matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists right answers in other styles than the reference (the scales folded into one tile before the
multiply; the K loop counted in chunks). `SLOW` is right but scales every chunk's product. The others are graded in
tests/course/test_fp8_track.py, each failing for the reason its docstring gives."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The float32 sum of x[m, :] @ w[n, :].T over K, the float8 tiles straight into tl.dot (w is N x K)."""
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc += tl.dot(x, tl.trans(w))
    return acc


@triton.jit
def fp8_scales_as_one_tile(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr,
                           BN: tl.constexpr, BK: tl.constexpr):
    """Right: the outer product of the two scale vectors made first, one multiply of the sum after the loop."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    scale = tl.load(x_scale_ptr + m, mask=m < M, other=1.0)[:, None] * tl.load(w_scale_ptr + n, mask=n < N)[None, :]
    acc = fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM, BN, BK)
    z = acc * scale
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_chunk_count_loop(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    """Right: the K loop counts chunks (tl.cdiv(K, BK)), the dot accumulating in place (tl.dot(x, tl.trans(w), acc))."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for chunk in range(tl.cdiv(K, BK)):
        k = chunk * BK + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
    z = acc * tl.load(x_scale_ptr + m, mask=m < M)[:, None] * tl.load(w_scale_ptr + n, mask=n < N)[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_scaled_every_chunk(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr,
                           BN: tl.constexpr, BK: tl.constexpr):
    """Right but slower: every chunk's product is scaled before it is added (a tile multiply per chunk instead of
    one per tile; the scale does not depend on k, so the sum is the same)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        x_scale = tl.load(x_scale_ptr + m, mask=m < M)
        w_scale = tl.load(w_scale_ptr + n, mask=n < N)
        acc += tl.dot(x, tl.trans(w)) * x_scale[:, None] * w_scale[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_scales_divide(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    """Wrong: the scales divide the sum (as in quantizing) instead of multiplying it."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM, BN, BK)
    z = acc / tl.load(x_scale_ptr + m, mask=m < M, other=1.0)[:, None] / tl.load(w_scale_ptr + n, mask=n < N,
                                                                                  other=1.0)[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_accumulator_rescaled_in_loop(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr,
                                     BN: tl.constexpr, BK: tl.constexpr):
    """Wrong: the accumulator is multiplied by the scales inside the K loop, so earlier chunks are scaled again."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    scale = tl.load(x_scale_ptr + m, mask=m < M)[:, None] * tl.load(w_scale_ptr + n, mask=n < N)[None, :]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc = (acc + tl.dot(x, tl.trans(w))) * scale
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_scales_swapped(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """Wrong: x_scale read at the columns n, w_scale at the rows m (masked by the right bounds: a read past the
    vector where M != N)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM, BN, BK)
    z = acc * tl.load(x_scale_ptr + n, mask=n < N)[None, :] * tl.load(w_scale_ptr + m, mask=m < M)[:, None]
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_scale_vector_per_tensor(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr,
                                BN: tl.constexpr, BK: tl.constexpr):
    """Wrong: the scales read as per-tensor scalars (x_scale[0], w_scale[0]), as an FP8 recipe with one scale per
    tensor would; here every row and column has its own."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM, BN, BK)
    z = acc * tl.load(x_scale_ptr) * tl.load(w_scale_ptr)
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_w_read_as_k_by_n(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr):
    """Wrong: w read as a K x N matrix (its tile at k * N + n, tl.dot(x, w)), the kernel of a layout it is not in."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(x, w)
    z = acc * tl.load(x_scale_ptr + m, mask=m < M)[:, None] * tl.load(w_scale_ptr + n, mask=n < N)[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def fp8_scaled_matmul_kernel_no_scales(x_ptr, w_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                       BK: tl.constexpr):
    """Wrong signature: no scale pointers (the kernel of a plain fp8 matmul)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = fp8_tile_sum(x_ptr, w_ptr, M, N, K, m, n, BM, BN, BK)
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))


CORRECT = (fp8_scales_as_one_tile, fp8_chunk_count_loop)
SLOW = (fp8_scaled_every_chunk,)
SIGNATURE_MISTAKES = {"fp8_scaled_matmul_kernel_no_scales"}
BUILDING_BLOCKS = (fp8_tile_sum,)  # a helper the kernels call, never graded itself
