"""Known-wrong kernels, each with one classic mistake; the tests check each is caught for its own reason."""

import triton
import triton.language as tl


@triton.jit
def add_mask2_kernel_no_mask(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)
    tl.store(z_ptr + offsets, x + 10.0)


@triton.jit
def add_mask2_kernel_hard_coded(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * 32 + tl.arange(0, 32)
    mask = offsets < 200
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_unwritten_tail(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < (N0 // B0) * B0  # drops the ragged last block
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_off_by_one(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = (tl.program_id(0) + 1) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_raises(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0 + 1)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)


@triton.jit
def add_mask2_kernel_forever(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = 0
    while i < 1:
        i = i * 1


@triton.jit
def add_mask2_kernel_wrong_signature(x_ptr, z_ptr, N, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N) + 10.0, mask=offsets < N)


@triton.jit
def add_vec_block_kernel_swapped(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    tl.store(z_ptr + i[None, :] * N1 + j[:, None], x[None, :] + y[:, None], mask=mask)  # strides swapped


@triton.jit
def mul_relu_block_kernel_no_relu(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] * y[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))


@triton.jit
def softmax_kernel_unstable(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        l += tl.sum(tl.exp(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=-float("inf"))), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x) / l[:, None], mask=m)


def add_kernel_not_jitted(x_ptr, z_ptr, N0, B0):
    pass


@triton.jit
def add_mask2_kernel_no_size(x_ptr, z_ptr, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)


@triton.jit
def add_mask2_kernel_no_output(x_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_kernel_swapped_pointers(z_ptr, x_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)
