"""Correct kernels in other styles than the references, for the practitioner's puzzles (22, 23) and the
training track (24-28): puzzle 22's written here, the others pinned where their puzzle's tests define them
(each of those files also grades its own). tests/kernels/correct_kernels.py's VARIANTS takes them in."""

from __future__ import annotations

import alternative_kernels
import compiled_kernels
import test_attention_backward
import test_cross_entropy
import test_dropout_layernorm
import triton
import triton.language as tl


@triton.jit
def linear_relu_bias_first(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """The bias starts the accumulator (tl.dot adds into it), pointers advance by BK each step, and the relu
    is a tl.where."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    acc = tl.zeros([BM, BN], dtype=tl.float32) + bias[None, :]
    ks = tl.arange(0, BK)
    x_tile = x_ptr + rows[:, None] * K + ks[None, :]
    w_tile = w_ptr + ks[:, None] * N + cols[None, :]
    for k0 in range(0, tl.cdiv(K, BK) * BK, BK):
        in_k = (k0 + ks) < K
        x = tl.load(x_tile, mask=(rows[:, None] < M) & in_k[None, :], other=0.0)
        w = tl.load(w_tile, mask=in_k[:, None] & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_tile += BK
        w_tile += BK * N
    out = tl.where(acc > 0, acc, 0.0)
    tl.store(z_ptr + rows[:, None] * N + cols[None, :], out.to(tl.float16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


VARIANTS = {
    22: (linear_relu_bias_first,),
    23: (compiled_kernels.copy_rows_kernel_hinted, compiled_kernels.copy_rows_kernel_row_loop_one_warp),
    24: (test_dropout_layernorm.dropout_multiplied_by_inverse,),
    25: (test_dropout_layernorm.layernorm_shifted_one_pass,),
    26: (test_dropout_layernorm.layernorm_backward_tile,
         alternative_kernels.layernorm_backward_kernel_one_program_sums),
    27: (test_cross_entropy.cross_entropy_three_passes, test_cross_entropy.cross_entropy_row_loop),
    28: (test_attention_backward.attention_backward_two_passes, test_attention_backward.attention_backward_scaled_q),
}
