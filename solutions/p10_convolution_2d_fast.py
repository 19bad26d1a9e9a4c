"""Puzzle 10, fast reference: a tile of output pixels per step, one shifted load per filter tap.

Same signature, grid and result as solutions/p10_convolution_2d.py. The teaching reference computes one
output pixel of its B0 images per step: 4096 dependent steps per program at the speed size, each a
handful of loads. Here each step computes PIXELS output pixels of the B0 images at once (pixel p of an
image is row p // W, column p % W): for each tap (a, b) of the filter, one load of the B0 × PIXELS
inputs shifted by a·W + b, multiplied by the tap and added to the accumulator. The taps' loads overlap,
so after the first they come from the L1 cache. And the grid is only cdiv(N0, B0) programs (128 at the
speed size, for 132 multiprocessors), so each program runs 16 warps (a one-config @triton.autotune:
`test()` launches a kernel with Triton's default of 4) to keep enough loads in flight.
"""

import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=16)], key=[])
@triton.jit
def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    PIXELS: tl.constexpr = 512  # output pixels of each image per step
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    images_in = images < N0
    HW = H * W
    image_start = images[:, None] * HW
    for p0 in range(0, HW, PIXELS):
        pix = p0 + tl.arange(0, PIXELS)
        pix_in = pix < HW
        w = pix % W  # the pixel's column; its row h = pix // W is only compared, as pix < (H - a) * W
        acc = tl.zeros([B0, PIXELS], dtype=tl.float32)
        for a in tl.static_range(KH):
            row_in = pix < (H - a) * W  # h + a < H; outside the image x counts as zero
            for b in tl.static_range(KW):
                tap = tl.load(k_ptr + a * KW + b)
                inside = row_in & (w + b < W)
                x = tl.load(x_ptr + image_start + (pix + a * W + b)[None, :], mask=images_in[:, None] & inside[None, :],
                            other=0.0)
                acc += tap * x
        tl.store(z_ptr + image_start + pix[None, :], acc, mask=images_in[:, None] & pix_in[None, :])
