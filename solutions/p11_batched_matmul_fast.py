"""Puzzle 11, fast reference: fp16 tiles into tl.dot.

Same signature, grid and result as solutions/p11_batched_matmul.py. One change: both tiles are rounded to
fp16 before `tl.dot`, the accumulator staying float32. A `tl.dot` of float32 tiles runs as TF32, whose
mantissa has 10 bits, as fp16's has: for values in fp16's range the products are as accurate, and fp16
tiles take half the shared memory and run at twice the tensor-core rate of TF32 on an H100.
"""

import triton
import triton.language as tl


@triton.jit
def dot_kernel(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID,
               B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # rows of z
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # columns of z
    batch = tl.program_id(2) * B2  # B2 == 1: one matrix of the batch per program
    x_base = x_ptr + batch * N0 * MID
    y_base = y_ptr + batch * MID * N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_base + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_base + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        acc += tl.dot(x.to(tl.float16), y.to(tl.float16))
    z_in = (i[:, None] < N0) & (j[None, :] < N1) & (batch < N2)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=z_in)
