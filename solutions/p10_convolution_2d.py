"""Puzzle 10 reference: 2-D convolution, one output pixel of B0 images at a time."""

import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    # BEGIN SOLUTION
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    images_in = images < N0
    # The KH x KW filter taps as one axis: tap t is filter row t // KW, column t % KW.
    taps = tl.arange(0, KH * KW)
    a, b = taps // KW, taps % KW
    kernel = tl.load(k_ptr + taps)[None, :]  # loaded once
    # Offsets of the window under pixel (0, 0); pixel (h, w) adds h * W + w. Hoisting what does
    # not change inside the loops keeps the per-pixel work to one load, one product, one sum.
    window_at_origin = images[:, None] * H * W + (a * W + b)[None, :]
    for h in range(0, H):
        rows_in = images_in[:, None] & (h + a < H)[None, :]
        for w in range(0, W):
            window_in = rows_in & (w + b < W)[None, :]  # outside the image x counts as zero
            window = tl.load(x_ptr + window_at_origin + (h * W + w), mask=window_in, other=0.0)
            tl.store(z_ptr + images * H * W + (h * W + w), tl.sum(window * kernel, axis=1), mask=images_in)
    # END SOLUTION
