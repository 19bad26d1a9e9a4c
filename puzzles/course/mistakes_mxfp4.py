"""Common slips of puzzle 33 (block-scaled MXFP4 matmul), computed: the output a kernel with one slip in it stores,
from the same inputs (see mistakes.py for how a verdict uses them). Each decodes the weights with the slip, then
multiplies in float32 as the spec does.

The graded weights come from puzzles/course/mxfp4.py's quantizer with a scale that differs between blocks and
columns (mxfp4.graded_weights), so a scale read from the wrong block changes the values.
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course import mxfp4
from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


def times_x(i: Inputs, weights: Tensor) -> Tensor:
    """z = x @ weights in float32, as the spec."""
    return i["x"].float() @ weights.float()


def decoded(codes: Tensor) -> Tensor:
    """The e2m1 values of K × N nibbles."""
    return mxfp4.E2M1_VALUES.to(codes.device)[codes.long()]


def nibbles_swapped(i: Inputs, sizes: Sizes) -> Tensor:
    """Row 2j read from the high nibble and row 2j + 1 from the low one."""
    w = i["w"]
    swapped = (w >> 4) | ((w & 0xF) << 4)
    return times_x(i, mxfp4.dequantize(swapped, i["scale"]))


def scale_without_bias(i: Inputs, sizes: Sizes) -> Tensor:
    """2^s instead of 2^(s − 127), the weights made float16 for tl.dot: every scale past 2^15 overflows to inf."""
    multiplier = torch.exp2(i["scale"].float()).repeat_interleave(mxfp4.BLOCK, dim=0)
    return times_x(i, (decoded(mxfp4.nibbles_along_k(i["w"])) * multiplier).half())


def scales_read_as_n_by_blocks(i: Inputs, sizes: Sizes) -> Tensor:
    """The K/32 × N scales read at n · (K/32) + k // 32, as if stored N × K/32 (tl.dot_scaled's layout)."""
    scale = i["scale"]
    transposed_reading = scale.flatten().reshape(scale.shape[1], scale.shape[0]).T
    return times_x(i, mxfp4.dequantize(i["w"], transposed_reading))


def scale_per_32_bytes(i: Inputs, sizes: Sizes) -> Tensor:
    """The block of row k taken as (k // 2) // 32, the byte row's: one scale stretched over 64 values."""
    k_size = i["w"].shape[0] * 2
    rows = torch.arange(k_size) // 2 // mxfp4.BLOCK
    multiplier = torch.exp2(i["scale"].float() - mxfp4.BIAS)[rows.clamp(max=i["scale"].shape[0] - 1)]
    return times_x(i, decoded(mxfp4.nibbles_along_k(i["w"])) * multiplier)


def sign_ignored(i: Inputs, sizes: Sizes) -> Tensor:
    """Bit 3 dropped: every value taken as its magnitude."""
    return times_x(i, decoded(mxfp4.nibbles_along_k(i["w"]) & 0x7) * mxfp4.block_scales(i["scale"]))


def nibbles_as_int4(i: Inputs, sizes: Sizes) -> Tensor:
    """Each nibble read as puzzle 14's offset-binary int4, nibble − 8, instead of an e2m1 code."""
    values = mxfp4.nibbles_along_k(i["w"]).float() - 8
    return times_x(i, values * mxfp4.block_scales(i["scale"]))


def subnormals_as_normal(i: Inputs, sizes: Sizes) -> Tensor:
    """The arithmetic decode 2^(e − 1) · (1 + m/2) used for exponent 0 too: codes 0 and 1 become 0.5 and 0.75
    instead of 0 and 0.5."""
    codes = mxfp4.nibbles_along_k(i["w"]).long()
    exponent, mantissa = (codes >> 1) & 0x3, (codes & 0x1).float()
    magnitude = torch.exp2(exponent.float() - 1) * (1 + mantissa / 2)
    sign = 1 - 2 * ((codes >> 3) & 0x1).float()
    return times_x(i, sign * magnitude * mxfp4.block_scales(i["scale"]))
