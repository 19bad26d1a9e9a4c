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
def _row_chunk(x_ptr, rows, j0, N0, T, B1: tl.constexpr, other):
    # Columns j0 .. j0 + B1 of the rows (masked lanes read as `other`), with their offsets and mask.
    cols = j0 + tl.arange(0, B1)
    mask = (rows[:, None] < N0) & (cols[None, :] < T)
    offsets = rows[:, None] * T + cols[None, :]
    return tl.load(x_ptr + offsets, mask=mask, other=other), offsets, mask


@triton.jit
def _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1: tl.constexpr):
    # The second pass of the two online softmaxes below, right in both: exp(x - max) / sum.
    for j0 in range(0, T, B1):
        x, offsets, mask = _row_chunk(x_ptr, rows, j0, N0, T, B1, -float("inf"))
        tl.store(z_ptr + offsets, tl.exp(x - m[:, None]) / l[:, None], mask=mask)


@triton.jit
def softmax_kernel_masked_zero(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Masked lanes loaded as 0, not -inf: each adds exp(0 - max) to its row's sum, so every
    # element of a row with a ragged last chunk is a few percent off (each error is tiny).
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        x, _, _ = _row_chunk(x_ptr, rows, j0, N0, T, B1, 0.0)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1)


@triton.jit
def softmax_kernel_no_rescale(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Online softmax that forgets to rescale the running sum when the maximum grows.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        x, _, _ = _row_chunk(x_ptr, rows, j0, N0, T, B1, -float("inf"))
        m = tl.maximum(m, tl.max(x, axis=1))
        l += tl.sum(tl.exp(x - m[:, None]), axis=1)
    _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1)


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


@triton.jit
def flashatt_kernel_no_maximum(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # Never subtracts a maximum: exact while the scores stay small, inf / inf once one passes 88.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    l = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        p = tl.where((cols < T)[None, :], tl.exp(q[:, None] * k[None, :]), 0.0)
        l = l + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


# -- results that only the interpreter's program order (one program after another) makes right --------------


@triton.jit
def add_mask2_kernel_writes_next_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Also stores x into the next program's block, which that program overwrites later (here)."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
    following = offsets + B0
    tl.store(z_ptr + following, x, mask=following < N0)


@triton.jit
def add_mask2_kernel_writes_previous_block_again(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Also stores the previous block, with the same values: wasteful, but right in any order."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)
    previous = offsets - B0
    inside = (previous >= 0) & (previous < N0)
    tl.store(z_ptr + previous, tl.load(x_ptr + previous, mask=inside) + 10.0, mask=inside)


@triton.jit
def add_mask2_kernel_reads_previous_output(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Takes the 10 from the previous program's last output (z - x), which it may not have written yet."""
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    ten = 10.0
    if pid > 0:
        ten = tl.load(z_ptr + pid * B0 - 1) - tl.load(x_ptr + pid * B0 - 1)
    tl.store(z_ptr + offsets, x + ten, mask=offsets < N0)


@triton.jit
def unpack_int4_kernel_zeroes_next_rows(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    """Clears the next program's rows first (they are rewritten when that program runs, later here)."""
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    following = k + BK
    tl.store(z_ptr + following[:, None] * N + n[None, :], tl.zeros([BK, BN], tl.int8),
             mask=(following < K)[:, None] & (n < N)[None, :])
    in_bounds = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=in_bounds, other=0)
    tl.store(z_ptr + k[:, None] * N + n[None, :], (((words >> ((k % 8) * 4)[:, None]) & 0xF) - 8).to(tl.int8),
             mask=in_bounds)


# -- float16 arithmetic where the spec is float32 ------------------------------------------------------------


@triton.jit
def add_mask2_kernel_float16(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0).to(tl.float16)
    tl.store(z_ptr + offsets, (x + 10.0).to(tl.float32), mask=offsets < N0)


@triton.jit
def mul_relu_block_kernel_float16(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0).to(tl.float16)
    y = tl.load(y_ptr + j, mask=j < N1).to(tl.float16)
    z = tl.maximum(y[:, None] * x[None, :], 0.0).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=(j < N1)[:, None] & (i < N0)[None, :])


@triton.jit
def _sum_rows(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, ACC: tl.constexpr, WIDE: tl.constexpr):
    """Puzzle 7 with an accumulator of dtype ACC; WIDE keeps a B0 x B1 block of partial sums (another order)."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    if WIDE:
        acc = tl.zeros([B0, B1], dtype=ACC)
    else:
        acc = tl.zeros([B0], dtype=ACC)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows < N0)[:, None] & (cols < T)[None, :],
                        other=0.0)
        if WIDE:
            acc += chunk.to(ACC)
        else:
            acc += tl.sum(chunk, axis=1).to(ACC)
    if WIDE:
        total = tl.sum(acc.to(tl.float32), axis=1)
    else:
        total = acc.to(tl.float32)
    tl.store(z_ptr + rows, total, mask=rows < N0)


@triton.jit
def sum_kernel_float16_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float16, False)


@triton.jit
def sum_kernel_column_partial_sums(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float32, True)


@triton.jit
def _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 19 computed in DTYPE, summing blue first (another order than the spec's)."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(DTYPE)
    g = tl.load(pixel + SC, mask=mask).to(DTYPE)
    b = tl.load(pixel + 2 * SC, mask=mask).to(DTYPE)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], (b * 0.1140 + g * 0.5870 + r * 0.2989).to(tl.float32), mask=mask)


@triton.jit
def grey_kernel_float16(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0, B1, tl.float16)


@triton.jit
def grey_kernel_blue_first(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0, B1, tl.float32)


@triton.jit
def add_mask2_kernel_exchanges_into_next_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Writes x into the next program's block with an atomic, which that program's plain store overwrites."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    following = offsets + B0
    tl.atomic_xchg(z_ptr + following, x, mask=following < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


@triton.jit
def _sgd_chunk(addresses_ptr, numels_ptr, chunks_ptr, K, B0: tl.constexpr):
    """Puzzle 21's chunk table for this program: its tensor's five pointers, the chunk's offsets, its length."""
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    p_ptr = tl.load(addresses_ptr + 0 * K + t).to(tl.pointer_type(tl.float32))
    g_ptr = tl.load(addresses_ptr + 1 * K + t).to(tl.pointer_type(tl.float32))
    m_ptr = tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32))
    p_out = tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32))
    m_out = tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32))
    return p_ptr, g_ptr, m_ptr, p_out, m_out, c * B0 + tl.arange(0, B0), n


@triton.jit
def sgd_kernel_writes_next_chunk(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                 B0: tl.constexpr):
    """Puzzle 21, also storing p into the next chunk of its tensor, which that chunk's program rewrites."""
    p_ptr, g_ptr, m_ptr, p_out, m_out, offs, n = _sgd_chunk(addresses_ptr, numels_ptr, chunks_ptr, K, B0)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    m = momentum * tl.load(m_ptr + offs, mask=mask) + tl.load(g_ptr + offs, mask=mask) + weight_decay * p
    following = offs + B0
    tl.store(p_out + following, p, mask=following < n)
    tl.store(m_out + offs, m, mask=mask)
    tl.store(p_out + offs, p - lr * m, mask=mask)


@triton.jit
def _softmax_rows(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 8 with tl.exp (not the reference's exp2), its last exp and division in DTYPE."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows < N0)[:, None] & (cols < T)[None, :],
                    other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        inside = (rows < N0)[:, None] & (cols < T)[None, :]
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=inside, other=-float("inf"))
        z = tl.exp(x - m[:, None]).to(DTYPE) / l[:, None].to(DTYPE)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], z.to(tl.float32), mask=inside)


@triton.jit
def softmax_kernel_float16(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _softmax_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float16)


@triton.jit
def softmax_kernel_exp(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _softmax_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float32)


@triton.jit
def _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 9 with tl.exp, its weights p in DTYPE."""
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
        p = tl.exp(s - m_new[:, None]).to(DTYPE)
        l = l * tl.exp(m - m_new) + tl.sum(p, axis=1).to(tl.float32)
        acc = acc * tl.exp(m - m_new) + tl.sum(p * v[None, :].to(DTYPE), axis=1).to(tl.float32)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows < N0)


@triton.jit
def flashatt_kernel_float16(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0, B1, tl.float16)


@triton.jit
def flashatt_kernel_exp(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    _attention(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0, B1, tl.float32)


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


# -- puzzles 11-21 (the second red team) ---------------------------------------------------------------------


@triton.jit
def _silu_mul(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 20 as x / (1 + exp(-x)) * y (not the reference's x * sigmoid(x) * y), its products in DTYPE."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    gate = (x / (1.0 + tl.exp(-x))).to(DTYPE)  # tl.exp takes float32 only: the rest is where float16 creeps in
    tl.store(z_ptr + offsets, (gate * y.to(DTYPE)).to(tl.float32), mask=mask)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 256}, num_warps=4)],
                 key=["N0"])
@triton.jit
def silu_mul_kernel_float16(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, N0, B0, tl.float16)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 256}, num_warps=4)],
                 key=["N0"])
@triton.jit
def silu_mul_kernel_divided(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, N0, B0, tl.float32)


@triton.jit
def _sgd(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr,
         DTYPE: tl.constexpr):
    """Puzzle 21 with its terms in another order (g + wd p first), the update computed in DTYPE."""
    p_ptr, g_ptr, m_ptr, p_out, m_out, offs, n = _sgd_chunk(addresses_ptr, numels_ptr, chunks_ptr, K, B0)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(DTYPE)
    g = tl.load(g_ptr + offs, mask=mask).to(DTYPE)
    m = tl.load(m_ptr + offs, mask=mask).to(DTYPE)
    new_m = ((g + weight_decay * p) + momentum * m).to(DTYPE)
    tl.store(m_out + offs, new_m.to(tl.float32), mask=mask)
    tl.store(p_out + offs, (p - new_m * lr).to(DTYPE).to(tl.float32), mask=mask)


@triton.jit
def sgd_kernel_float16(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    _sgd(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0, tl.float16)


@triton.jit
def sgd_kernel_reordered(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                         B0: tl.constexpr):
    _sgd(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0, tl.float32)


@triton.jit
def sgd_kernel_without_weight_decay(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                    B0: tl.constexpr):
    """Puzzle 21 forgetting the weight decay term (wd p, a percent of the update where wd = 0.01)."""
    _sgd(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, 0.0, B0, tl.float32)
