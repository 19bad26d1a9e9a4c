"""Puzzle 12 reference: 4-bit weights unpacked in registers, then a float32 tl.dot."""

import triton
import triton.language as tl


@triton.jit
def quant_dot_kernel(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                     B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    # BEGIN SOLUTION
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    GROUP: tl.constexpr = 8  # weights per scale/shift group
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)  # MID is a multiple of B_MID (and of 64): no mask on k
        tile_in = rows_in[:, None]
        # Value k of a row is nibble k % 8 of word k // 8; its group k // 8 shares scale and shift.
        words = tl.load(weight_ptr + rows[:, None] * (MID // FPINT) + (k // FPINT)[None, :], mask=tile_in, other=0)
        w = (words >> ((k % FPINT) * 4)[None, :]) & 0xF
        group = k // GROUP
        scale = tl.load(scale_ptr + rows[:, None] * (MID // GROUP) + group[None, :], mask=tile_in, other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // (GROUP * FPINT)) + (group // FPINT)[None, :],
                              mask=tile_in, other=0)
        shift = (shift_words >> ((group % FPINT) * 4)[None, :]) & 0xF
        weights = scale * (w - shift).to(tl.float32)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        acc += tl.dot(weights, activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])
    # END SOLUTION
