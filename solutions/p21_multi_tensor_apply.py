"""Puzzle 21 reference: one launch of SGD with momentum over a list of tensors."""

import triton
import triton.language as tl


@triton.jit
def sgd_kernel(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    # BEGIN SOLUTION
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)  # which tensor this program works on
    c = tl.load(chunks_ptr + 2 * pid + 1)  # which chunk of it
    n = tl.load(numels_ptr + t)
    p_ptr = tl.load(addresses_ptr + 0 * K + t).to(tl.pointer_type(tl.float32))
    g_ptr = tl.load(addresses_ptr + 1 * K + t).to(tl.pointer_type(tl.float32))
    m_ptr = tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32))
    p_out = tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32))
    m_out = tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32))
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n  # the tensor's own size: its last chunk is partial
    p = tl.load(p_ptr + offs, mask=mask)
    m = momentum * tl.load(m_ptr + offs, mask=mask) + tl.load(g_ptr + offs, mask=mask) + weight_decay * p
    tl.store(m_out + offs, m, mask=mask)
    tl.store(p_out + offs, p - lr * m, mask=mask)
    # END SOLUTION
