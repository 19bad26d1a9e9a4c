"""Puzzle 10 (convolution 2d): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def conv2d_community(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    off_b = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask_b = off_b < N0
    off_h = tl.arange(0, KH)
    off_w = tl.arange(0, KW)
    off_hw = off_h[:, None] * KW + off_w[None, :]
    conv_kernel = tl.load(k_ptr + off_hw)
    for i in tl.range(0, H):
        for j in tl.range(0, W):
            rr = i + off_h[None, :, None]
            cc = j + off_w[None, None, :]
            offs = off_b[:, None, None] * H * W + rr * W + cc
            mask = mask_b[:, None, None] & (rr < H) & (cc < W)
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            z = tl.sum(tl.sum(x * conv_kernel[None, :, :], axis=2), axis=1)
            tl.store(z_ptr + off_b * H * W + i * W + j, z, mask=mask_b)


@triton.jit
def conv2d_static_taps(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    n = tl.program_id(0) * B0 + tl.arange(0, B0)
    for h in range(H):
        for w in range(W):
            acc = tl.zeros([B0], dtype=tl.float32)
            for a in tl.static_range(KH):
                for b in tl.static_range(KW):
                    kv = tl.load(k_ptr + a * KW + b)
                    ok = (n < N0) & (h + a < H) & (w + b < W)
                    acc += kv * tl.load(x_ptr + n * H * W + (h + a) * W + (w + b), mask=ok, other=0.0)
            tl.store(z_ptr + n * H * W + h * W + w, acc, mask=n < N0)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def conv2d_kernel_float16(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    taps = tl.arange(0, KH * KW)
    a, b = taps // KW, taps % KW
    kernel = tl.load(k_ptr + taps)[None, :].to(tl.float16)
    for h in range(0, H):
        for w in range(0, W):
            inside = (images < N0)[:, None] & (h + a < H)[None, :] & (w + b < W)[None, :]
            window = tl.load(x_ptr + images[:, None] * H * W + ((h + a) * W + w + b)[None, :], mask=inside, other=0.0)
            total = tl.sum(window.to(tl.float16) * kernel, axis=1).to(tl.float32)
            tl.store(z_ptr + images * H * W + (h * W + w), total, mask=images < N0)



# -- right-looking kernels that are wrong (red-team round 5) --------------------------------------------------------

@triton.jit
def conv2d_one_tap_at_a_time(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    """Scalar loads with other=0.0: Triton's interpreter drops an `other` that is false as a bool on a one-lane
    load, which the grader took for a load without other= (and filled its masked-off lanes with NaN)."""
    n = tl.program_id(0)
    for h in range(H):
        for w in range(W):
            acc = 0.0
            for a in tl.static_range(KH):
                for b in tl.static_range(KW):
                    inside = (n < N0) & (h + a < H) & (w + b < W)
                    pixel = tl.load(x_ptr + n * H * W + (h + a) * W + (w + b), mask=inside, other=0.0)
                    acc += tl.load(k_ptr + a * KW + b) * pixel
            tl.store(z_ptr + n * H * W + h * W + w, acc, mask=n < N0)


@triton.jit
def conv2d_one_tap_without_other(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr,
                                 B0: tl.constexpr):
    n = tl.program_id(0)
    for h in range(H):
        for w in range(W):
            acc = 0.0
            for a in tl.static_range(KH):
                for b in tl.static_range(KW):
                    inside = (n < N0) & (h + a < H) & (w + b < W)
                    acc += tl.load(k_ptr + a * KW + b) * tl.load(x_ptr + n * H * W + (h + a) * W + (w + b), mask=inside)
            tl.store(z_ptr + n * H * W + h * W + w, acc, mask=n < N0)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def conv2d_without_the_column_mask(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr,
                                   B0: tl.constexpr):
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    images_in = images < N0
    a = tl.arange(0, KH)
    b = tl.arange(0, KW)
    kernel = tl.load(k_ptr + a[:, None] * KW + b[None, :])
    for h in range(0, H):
        for w in range(0, W):
            at = images[:, None, None] * H * W + (h + a)[None, :, None] * W + (w + b)[None, None, :]
            inside = images_in[:, None, None] & (h + a < H)[None, :, None]  # the columns w + b < W left out
            window = tl.load(x_ptr + at, mask=inside, other=0.0)
            tl.store(z_ptr + images * H * W + h * W + w, tl.sum(tl.sum(window * kernel[None, :, :], axis=2), axis=1),
                     mask=images_in)


CORRECT = (conv2d_community, conv2d_static_taps)
