"""Puzzle 10, fast reference: output pixels in aligned groups of four, the filter's column shifts taken
from registers.

Same signature, grid and result as solutions/p10_convolution_2d.py. The teaching reference computes one
output pixel of its B0 images per step: 4096 dependent steps per program at the speed size, each a
handful of loads. Here each step computes PIXELS output pixels of the B0 images (pixel p of an image is
row p // W, column p % W), as groups of four neighbouring pixels that one thread holds:
- for each filter row a, two loads per group: its four inputs a rows down and the next group's four.
  Where W is a multiple of 4 (Triton sees it, as at the speed size) each is one 128-bit load, aligned;
  a load shifted by the filter's column b (1, 2, 3 floats) could not be: it would be four 32-bit loads;
- the inputs under tap (a, b) of output j of the group are component j + b of those eight values, picked
  in registers (no load per tap), and zeroed where w + b passes the end of the row;
- the group's four sums are stored with one 128-bit store.
So a step makes 2·KH loads per group where the direct form makes KH·KW·4, and a filter row's columns come
from the cache once instead of KW times. Filters wider than 4 take the same path 4 columns at a time.
Eight warps per program, set with a one-config @triton.autotune (`test()` launches a kernel with
Triton's default of 4).
"""

import triton
import triton.language as tl


@triton.jit
def component(v0, v1, v2, v3, v4, v5, v6, v7, i: tl.constexpr):
    """Value i of eight (i known when the kernel compiles: a choice of register, no instruction)."""
    if i == 0:
        r = v0
    elif i == 1:
        r = v1
    elif i == 2:
        r = v2
    elif i == 3:
        r = v3
    elif i == 4:
        r = v4
    elif i == 5:
        r = v5
    elif i == 6:
        r = v6
    else:
        r = v7
    return r


@triton.jit
def split4(t):
    """A [B, G, 4] tile's four [B, G] components, in order (component j = 2u + v of the reshape)."""
    v_is_0, v_is_1 = tl.split(tl.reshape(t, [t.shape[0], t.shape[1], 2, 2]))
    c0, c2 = tl.split(v_is_0)
    c1, c3 = tl.split(v_is_1)
    return c0, c1, c2, c3


@triton.autotune(configs=[triton.Config({}, num_warps=8)], key=[])
@triton.jit
def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    PIXELS: tl.constexpr = 512  # output pixels of each image per step
    GROUPS: tl.constexpr = PIXELS // 4
    images = tl.program_id(0) * B0 + tl.arange(0, B0)
    images_in = images[:, None, None] < N0
    HW = H * W
    image = x_ptr + images[:, None, None] * HW
    out_image = z_ptr + images[:, None, None] * HW
    in_group = tl.arange(0, GROUPS)[:, None] * 4 + tl.arange(0, 4)[None, :]  # [GROUPS, 4]: pixel - p0
    for p0 in range(0, HW, PIXELS):
        pix = p0 + in_group
        first = p0 + tl.arange(0, GROUPS) * 4  # each group's first pixel
        # The column of each of the group's four pixels (a group may wrap onto the next row).
        w0, w1, w2, w3 = first % W, (first + 1) % W, (first + 2) % W, (first + 3) % W
        s0 = tl.zeros([B0, GROUPS], dtype=tl.float32)
        s1 = tl.zeros([B0, GROUPS], dtype=tl.float32)
        s2 = tl.zeros([B0, GROUPS], dtype=tl.float32)
        s3 = tl.zeros([B0, GROUPS], dtype=tl.float32)
        for a in tl.static_range(KH):
            for b0 in tl.static_range(0, KW, 4):  # filter columns b0 .. b0 + 3
                here = pix + a * W + b0  # past the last row (h + a >= H) it is past HW: masked to zero
                ahead = here + 4
                x0, x1, x2, x3 = split4(tl.load(image + here[None, :, :], mask=images_in & (here < HW)[None, :, :],
                                                other=0.0))
                x4, x5, x6, x7 = split4(tl.load(image + ahead[None, :, :], mask=images_in & (ahead < HW)[None, :, :],
                                                other=0.0))
                for b in tl.static_range(min(KW, 4)):
                    tap = tl.load(k_ptr + a * KW + b0 + b)
                    # Output j of the group reads value j + b: inside the image while its column w_j + b0 + b < W.
                    s0 += tap * tl.where((w0 + b0 + b < W)[None, :], component(x0, x1, x2, x3, x4, x5, x6, x7, b), 0.0)
                    s1 += tap * tl.where((w1 + b0 + b < W)[None, :], component(x0, x1, x2, x3, x4, x5, x6, x7, 1 + b),
                                         0.0)
                    s2 += tap * tl.where((w2 + b0 + b < W)[None, :], component(x0, x1, x2, x3, x4, x5, x6, x7, 2 + b),
                                         0.0)
                    s3 += tap * tl.where((w3 + b0 + b < W)[None, :], component(x0, x1, x2, x3, x4, x5, x6, x7, 3 + b),
                                         0.0)
        # Back to [B0, GROUPS, 4], component j = 2u + v (split4 in reverse): one 128-bit store per group.
        sums = tl.reshape(tl.join(tl.join(s0, s2), tl.join(s1, s3)), [B0, GROUPS, 4])
        tl.store(out_image + pix[None, :, :], sums, mask=images_in & (pix < HW)[None, :, :])
