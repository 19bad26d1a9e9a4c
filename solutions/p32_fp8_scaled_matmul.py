"""Puzzle 32 reference: an FP8 scaled matmul. One program per BM x BN tile of z: the float8 tiles of x and of w
(N x K: read along K, transposed into the dot for free) go straight into tl.dot (a float32 accumulator), and the
scales of x's rows and w's output channels are applied once, after the K loop, before the cast to float16."""

import triton
import triton.language as tl


@triton.jit
def fp8_scaled_matmul_kernel(x_ptr, x_scale_ptr, w_ptr, w_scale_ptr, z_ptr, M, N, K, BM: tl.constexpr,
                             BN: tl.constexpr, BK: tl.constexpr):
    # BEGIN SOLUTION
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
        acc += tl.dot(x, tl.trans(w))  # float8 tiles as they are, both K-major: the fp8 tensor cores, a float32 sum
    # The epilogue: the scales do not depend on k, so they come out of the sum, once per tile.
    x_scale = tl.load(x_scale_ptr + m, mask=m < M, other=0.0)
    w_scale = tl.load(w_scale_ptr + n, mask=n < N, other=0.0)
    z = acc * x_scale[:, None] * w_scale[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m[:, None] < M) & (n[None, :] < N))
    # END SOLUTION
