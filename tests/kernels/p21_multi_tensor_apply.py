"""Puzzle 21 (multi tensor apply): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def sgd_bitcast_pointers(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f32p = tl.pointer_type(tl.float32)
    p_ptr = tl.cast(tl.load(addresses_ptr + t), f32p)
    g_ptr = tl.load(addresses_ptr + K + t).to(f32p, bitcast=True)
    m_ptr = tl.load(addresses_ptr + 2 * K + t).to(f32p)
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    m = (
        momentum * tl.load(m_ptr + offs, mask=mask, other=0.0)
        + tl.load(g_ptr + offs, mask=mask, other=0.0)
        + weight_decay * p
    )
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(f32p) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f32p) + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_constexpr_k(
    addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K: tl.constexpr, lr, momentum, weight_decay, B0: tl.constexpr
):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(f) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(f) + offs, mask=mask)
    m = tl.fma(momentum, tl.load(tl.load(addresses_ptr + 2 * K + t).to(f) + offs, mask=mask), g + weight_decay * p)
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(f) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f) + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_int64_addresses(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    tensor = tl.load(chunks_ptr + pid * 2)
    chunk = tl.load(chunks_ptr + pid * 2 + 1)
    numel = tl.load(numels_ptr + tensor)
    offs = chunk * B0 + tl.arange(0, B0)
    mask = offs < numel
    p_addr = tl.load(addresses_ptr + tensor)
    g_addr = tl.load(addresses_ptr + K + tensor)
    m_addr = tl.load(addresses_ptr + 2 * K + tensor)
    po_addr = tl.load(addresses_ptr + 3 * K + tensor)
    mo_addr = tl.load(addresses_ptr + 4 * K + tensor)
    p = tl.load(p_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    g = tl.load(g_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    mom = tl.load(m_addr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    g = g + weight_decay * p
    mom = momentum * mom + g
    tl.store(mo_addr.to(tl.pointer_type(tl.float32)) + offs, mom, mask=mask)
    tl.store(po_addr.to(tl.pointer_type(tl.float32)) + offs, p - lr * mom, mask=mask)


@triton.jit
def _sgd_step(p, g, m, lr, momentum, weight_decay):
    m = momentum * m + g + weight_decay * p
    return p - lr * m, m


@triton.jit
def sgd_helper_early_return(
    addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr
):
    t = tl.load(chunks_ptr + 2 * tl.program_id(0))
    c = tl.load(chunks_ptr + 2 * tl.program_id(0) + 1)
    n = tl.load(numels_ptr + t)
    if c * B0 >= n:
        return
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    ptr_ty = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(ptr_ty) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(ptr_ty) + offs, mask=mask)
    m = tl.load(tl.load(addresses_ptr + 2 * K + t).to(ptr_ty) + offs, mask=mask)
    p_new, m_new = _sgd_step(p, g, m, lr, momentum, weight_decay)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(ptr_ty) + offs, p_new, mask=mask)
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(ptr_ty) + offs, m_new, mask=mask)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

# -- the output read as an input -----------------------------------------------------------------------------
@triton.jit
def sgd_momentum_from_its_output(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                 B0: tl.constexpr):
    t = tl.load(chunks_ptr + 2 * tl.program_id(0))
    c = tl.load(chunks_ptr + 2 * tl.program_id(0) + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    f32 = tl.pointer_type(tl.float32)
    p = tl.load(tl.load(addresses_ptr + t).to(f32) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(f32) + offs, mask=mask)
    m_out = tl.load(addresses_ptr + 4 * K + t).to(f32)
    m = momentum * tl.load(m_out + offs, mask=mask) + g + weight_decay * p  # the new buffer, not the old one
    tl.store(m_out + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(f32) + offs, p - lr * m, mask=mask)


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



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def sgd_loading_through_an_address(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                   B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    p_ptr = tl.load(addresses_ptr + t)  # an int64 address, never cast to a pointer
    tl.store(z_ptr + offs, tl.load(p_ptr + offs, mask=offs < tl.load(numels_ptr + t)), mask=offs < 1)


@triton.jit
def sgd_without_weight_decay(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                             B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < tl.load(numels_ptr + t)
    p = tl.load(tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    m = momentum * tl.load(tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask) + g
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32)) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_masked_with_the_chunk_map_length(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum,
                                         weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < B0 * 4  # not the tensor's own size
    p = tl.load(tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, p, mask=mask)



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def _sgd_body_of_hole(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr,
              END_TO_END: tl.constexpr):
    """END_TO_END: the outputs written through z_ptr at running offsets (each list end to end), ignoring
    rows 3 and 4 of the table; otherwise a right kernel unlike the reference (loads with other=, a where)."""
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    offs = c * B0 + tl.arange(0, B0)
    mask = offs < n
    p = tl.load(tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    g = tl.load(tl.load(addresses_ptr + K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    m = tl.load(tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    m = momentum * m + (g + weight_decay * p)
    p = tl.where(mask, p - lr * m, 0.0)
    if END_TO_END:
        start = 0
        total = 0
        for u in range(0, K):
            size = tl.load(numels_ptr + u)
            start += tl.where(u < t, size, 0)
            total += size
        tl.store(z_ptr + start + offs, p, mask=mask)
        tl.store(z_ptr + total + start + offs, m, mask=mask)
    else:
        tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, p, mask=mask)
        tl.store(tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32)) + offs, m, mask=mask)


@triton.jit
def sgd_outputs_end_to_end(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                           B0: tl.constexpr):
    _sgd_body_of_hole(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0, True)


@triton.jit
def sgd_with_other_and_where(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                             B0: tl.constexpr):
    _sgd_body_of_hole(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0, False)



# -- what a graded file and a kernel's body may use -----------------------------------------------------------------

@triton.jit
def sgd_kernel_count_last(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, lr, momentum, weight_decay, K,
                          B0: tl.constexpr):
    # Right, but K declared last: the notebook's one-launch cell passes K right after the pointers.
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < tl.load(numels_ptr + t)
    p = tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32))
    g = tl.load(addresses_ptr + K + t).to(tl.pointer_type(tl.float32))
    m = tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32))
    x = tl.load(p + offs, mask=mask)
    new_m = momentum * tl.load(m + offs, mask=mask) + tl.load(g + offs, mask=mask) + weight_decay * x
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32)) + offs, new_m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, x - lr * new_m, mask=mask)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def _sgd_body(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr,
              OFFSET_FROM_PID: tl.constexpr, MASK: tl.constexpr):
    """The reference with one mistake switched on by a flag."""
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    c = tl.load(chunks_ptr + 2 * pid + 1)
    n = tl.load(numels_ptr + t)
    p_ptr = tl.load(addresses_ptr + 0 * K + t).to(tl.pointer_type(tl.float32))
    g_ptr = tl.load(addresses_ptr + 1 * K + t).to(tl.pointer_type(tl.float32))
    m_ptr = tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32))
    p_out = tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32))
    m_out = tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32))
    if OFFSET_FROM_PID:
        offs = pid * B0 + tl.arange(0, B0)  # the program id runs across all tensors, not within one
    else:
        offs = c * B0 + tl.arange(0, B0)
    if MASK:
        mask = offs < n
    else:
        mask = offs >= 0  # every lane: the partial last chunk runs past its tensor
    p = tl.load(p_ptr + offs, mask=mask)
    m = momentum * tl.load(m_ptr + offs, mask=mask) + tl.load(g_ptr + offs, mask=mask) + weight_decay * p
    tl.store(m_out + offs, m, mask=mask)
    tl.store(p_out + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_kernel_offset_from_pid(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                               B0: tl.constexpr):
    _sgd_body(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0, True, True)


@triton.jit
def sgd_kernel_last_chunk_unmasked(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                   B0: tl.constexpr):
    _sgd_body(addresses_ptr, numels_ptr, chunks_ptr, K, lr, momentum, weight_decay, B0, False, False)


CORRECT = (sgd_bitcast_pointers, sgd_constexpr_k, sgd_int64_addresses, sgd_helper_early_return)

# Kernels whose wrong signature is the point: the signature step must refuse them.
SIGNATURE_MISTAKES = {
    "sgd_kernel_count_last",
}
