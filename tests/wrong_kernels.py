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


@triton.jit
def softmax_kernel_masked_zero(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Masked lanes loaded as 0, not -inf: each adds exp(0 - max) to its row's sum, so every
    # element of a row with a ragged last chunk is a few percent off (each error is tiny).
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / l[:, None], mask=mask)


@triton.jit
def softmax_kernel_no_rescale(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Online softmax that forgets to rescale the running sum when the maximum grows.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=1))
        l += tl.sum(tl.exp(x - m[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=-float("inf"))
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / l[:, None], mask=mask)


@triton.jit
def flashatt_kernel_no_rescale(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # Rescales the denominator but not the accumulator when the running maximum grows.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)
