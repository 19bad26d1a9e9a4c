"""Puzzle 19 reference: colour to grey through the input's strides."""

import triton
import triton.language as tl


@triton.jit
def grey_kernel(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # columns
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # rows
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    # The strides say where a pixel is; nothing is assumed about the layout.
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + SC, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2 * SC, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)
    # END SOLUTION
