"""Puzzle 10 reference: 2-D convolution, one output pixel of B0 images at a time."""

import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    # BEGIN SOLUTION
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    images_in = images < N0
    a = tl.arange(0, KH)[None, :, None]  # window rows
    b = tl.arange(0, KW)[None, None, :]  # window columns
    kernel = tl.load(k_ptr + a * KW + b)  # 1 x KH x KW, loaded once
    # Offsets of the window under pixel (0, 0); pixel (h, w) adds h * W + w. Hoisting what does
    # not change inside the loops keeps the per-pixel work to one load, one product, one sum.
    window_at_origin = images[:, None, None] * H * W + a * W + b
    for h in range(0, H):
        rows_in = images_in[:, None, None] & (h + a < H)
        for w in range(0, W):
            window_in = rows_in & (w + b < W)  # outside the image x counts as zero
            window = tl.load(x_ptr + window_at_origin + (h * W + w), mask=window_in, other=0.0)
            z = tl.sum(tl.reshape(window * kernel, (B0, KH * KW)), axis=1)
            tl.store(z_ptr + images * H * W + (h * W + w), z, mask=images_in)
    # END SOLUTION
