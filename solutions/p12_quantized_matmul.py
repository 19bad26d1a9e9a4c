"""Puzzle 12 reference: 4-bit weights unpacked in registers, then a float32 tl.dot."""

import triton
import triton.language as tl


@triton.jit
def quant_dot_kernel(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                     B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    # BEGIN SOLUTION
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    GROUP: tl.constexpr = 8  # weights per scale/shift group (one group per weight word)
    WORDS: tl.constexpr = B_MID // FPINT  # weight words (and groups) per row in one chunk
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    nibble_shift = tl.arange(0, FPINT) * 4
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):  # MID is a multiple of B_MID: no mask along k
        group = k0 // GROUP + tl.arange(0, WORDS)  # also the index of the weight word
        # Load each packed word once and unpack its 8 nibbles with a broadcast shift: value k of a
        # row is nibble k % 8 of word k // 8, so (word, nibble) flattens to k.
        words = tl.load(weight_ptr + rows[:, None] * (MID // FPINT) + group[None, :], mask=rows_in[:, None], other=0)
        w = (words[:, :, None] >> nibble_shift[None, None, :]) & 0xF  # B0 x WORDS x 8
        scale = tl.load(scale_ptr + rows[:, None] * (MID // GROUP) + group[None, :], mask=rows_in[:, None], other=0.0)
        # The shift of group g is nibble g % 8 of offset word g // 8.
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // (GROUP * FPINT)) + (group // FPINT)[None, :],
                              mask=rows_in[:, None], other=0)
        shift = (shift_words >> ((group % FPINT) * 4)[None, :]) & 0xF  # B0 x WORDS
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])
    # END SOLUTION
