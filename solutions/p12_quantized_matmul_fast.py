"""Puzzle 12, fast reference: the teaching reference's unpacking, fp16 tiles into tl.dot.

Same signature, grid and result as solutions/p12_quantized_matmul.py. One change: the dequantized weight
tile and the activation tile are rounded to fp16 before `tl.dot`, the float32 accumulator kept. A
`tl.dot` of float32 tiles runs on the tensor cores as TF32, whose mantissa has 10 bits, as fp16's has;
for values in fp16's range (4-bit weights times their scale, activations of a layer) the products are
as accurate, and fp16 tiles take half the shared memory and twice the tensor-core rate on an H100.
"""

import triton
import triton.language as tl


@triton.jit
def quant_dot_kernel(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                     B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    FPINT: tl.constexpr = 8  # nibbles per int32 word
    GROUP: tl.constexpr = 8  # weights per scale/shift group (one group per weight word)
    WORDS: tl.constexpr = B_MID // FPINT
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    nibble_shift = tl.arange(0, FPINT) * 4
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        group = k0 // GROUP + tl.arange(0, WORDS)
        words = tl.load(weight_ptr + rows[:, None] * (MID // FPINT) + group[None, :], mask=rows_in[:, None], other=0)
        w = (words[:, :, None] >> nibble_shift[None, None, :]) & 0xF  # B0 x WORDS x 8
        scale = tl.load(scale_ptr + rows[:, None] * (MID // GROUP) + group[None, :], mask=rows_in[:, None], other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // (GROUP * FPINT)) + (group // FPINT)[None, :],
                              mask=rows_in[:, None], other=0)
        shift = (shift_words >> ((group % FPINT) * 4)[None, :]) & 0xF
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)).to(tl.float16), activation.to(tl.float16))
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])
