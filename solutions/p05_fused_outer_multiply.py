"""Puzzle 5 reference: outer product and relu fused in one pass."""

import triton
import triton.language as tl


@triton.jit
def mul_relu_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    i_in, j_in = i < N0, j < N1
    x = tl.load(x_ptr + i, mask=i_in)
    y = tl.load(y_ptr + j, mask=j_in)
    # The product stays in registers: only the relu'd result reaches memory.
    z = tl.maximum(x[None, :] * y[:, None], 0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=j_in[:, None] & i_in[None, :])
    # END SOLUTION
