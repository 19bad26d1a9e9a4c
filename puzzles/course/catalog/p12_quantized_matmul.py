"""Puzzle 12: quantized matrix multiplication."""

import torch
from jaxtyping import Float32, Int32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, SpeedGoal

FPINT = 8  # 4-bit values per int32 word
GROUP = 8  # consecutive weights of a row that share one scale and one shift


def unpack_nibbles(words: Tensor) -> Tensor:
    """int32 words -> their 8 nibbles, low nibble first: shape (..., n) -> (..., 8n)."""
    shifts = torch.arange(FPINT, dtype=torch.int32, device=words.device) * 4
    return ((words[..., None] >> shifts) & 0xF).flatten(-2)


def quant_dot_spec(
    scale: Float32[Tensor, "N0 MID//8"],
    offset: Int32[Tensor, "N0 MID//64"],
    weight: Int32[Tensor, "N0 MID//8"],
    activation: Float32[Tensor, "MID N1"],
) -> Float32[Tensor, "N0 N1"]:
    """z = (scale * (w - shift)) @ activation, with w and shift unpacked from 4-bit nibbles"""
    w = unpack_nibbles(weight)  # N0 x MID, values 0..15
    shift = unpack_nibbles(offset)  # N0 x MID/GROUP, one shift per group
    per_weight = lambda t: t.repeat_interleave(GROUP, dim=1)  # noqa: E731 - one group -> its 8 weights
    dequantized = per_weight(scale) * (w - per_weight(shift)).to(torch.float32)
    return dequantized @ activation


PUZZLE = Puzzle(
    number=12,
    slug="quantized_matmul",
    title="Quantized matrix multiply",
    kernel_name="quant_dot_kernel",
    spec=quant_dot_spec,
    reduction=Reduction("MID", KSlice("activation", 0)),  # a loop over MID that stops early is named
    statement=r"""
A matrix multiply whose left operand is stored as 4-bit integers. The weight matrix `W` has
`N0` rows and `MID` columns; each of its values is a 4-bit unsigned integer `w` in `0 … 15`
(a *nibble*: nibble `n` of a word is its bits `4n … 4n + 3`, nibble 0 the lowest), packed 8 to an
int32 word (`FPINT = 8`), low nibble first: value `k` of a row is nibble
`k % 8` of word `k // 8`, i.e. `(word >> 4*(k % 8)) & 0xF`. So `weight` has shape
`N0 × MID/8`.

The values of a row come in groups of `GROUP = 8` consecutive weights; a group `g` shares one
float `scale[r, g]` and one 4-bit `shift` (its zero point). The shifts are packed like the
weights, 8 per int32 word, so `offset` has shape `N0 × MID/64`, and the shift of group `g`
is nibble `g % 8` of word `g // 8`. Dequantized,

$$W_{r,k} = \mathrm{scale}_{r,\,\lfloor k/8\rfloor}\,\big(w_{r,k} - \mathrm{shift}_{r,\,\lfloor k/8\rfloor}\big),
\qquad z = W \cdot \mathrm{activation}$$

with `activation` of shape `MID × N1` and `z` of shape `N0 × N1`. The packed words are random
32-bit integers, so every nibble, the top one included, takes every value: an arithmetic
shift of a negative word fills with ones, so mask with `0xF` after shifting. Grid axis 0 walks
the rows of `z` in blocks of `B0`, axis 1 its columns in blocks of `B1`; each program walks
`MID` in chunks of `B_MID` (a multiple of 64, so a chunk holds whole shift words). `MID` is a
multiple of `B_MID`; `N0` and `N1` are any sizes. `tl.dot` is allowed.
""",
    sizes=(
        {"N0": 32, "N1": 32, "MID": 64, "B0": 16, "B1": 16, "B_MID": 64},
        {"N0": 24, "N1": 40, "MID": 256, "B0": 16, "B1": 32, "B_MID": 128},  # two shift words a chunk, two chunks
        {"N0": 40, "N1": 20, "MID": 192, "B0": 32, "B1": 16, "B_MID": 64},
    ),
    hints=(
        "Load a `B0 × B_MID/8` tile of words once and unpack it with a broadcast shift: "
        "`(words[:, :, None] >> (tl.arange(0, 8) * 4)[None, None, :]) & 0xF` is `B0 × B_MID/8 × 8`, "
        "and `tl.reshape(..., (B0, B_MID))` puts value `k` at column `k`.",
        "The group of column `k` is `k // 8`; its shift is nibble `(k // 8) % 8` of offset word `k // 64`.",
        "Dequantize in float32, then `acc += tl.dot(w_tile, activation_tile)`.",
    ),
    rtol=1e-2,
    atol=1e-1,
    likely_mistakes=(
        Mistake("the shift (zero point) is left out: each weight is scale · (w − shift), with the shift of its group",
                mistakes.quant_dot_without_shift),
        Mistake("the words are masked before the shift, (word & 0xF) >> 4·n, which keeps only nibble 0: shift first, "
                "then mask, (word >> 4·n) & 0xF", mistakes.quant_dot_masked_first),
        Mistake("value k takes its shift from nibble k % 8 (its own place in its weight word); the shift belongs to "
                "its group g = k // 8: nibble g % 8 of offset word g // 8", mistakes.quant_dot_shift_by_value),
        Mistake("the weights are unpacked 8 bits apart, (word >> 8·n) & 0xF; a nibble is 4 bits: nibble n is "
                "(word >> 4·n) & 0xF", mistakes.quant_dot_weights_by_byte),
        Mistake("the weights and the shifts are unpacked 8 bits apart, (word >> 8·n) & 0xF; a nibble is 4 bits: "
                "(word >> 4·n) & 0xF", mistakes.quant_dot_all_by_byte),
    ),
    perf_size={"N0": 4096, "N1": 4096, "MID": 4096, "B0": 64, "B1": 64, "B_MID": 64},
    fast_reference=FastReference(
        "One change: the dequantized weight tile and the activation tile go into `tl.dot` as fp16 "
        "(`.to(tl.float16)`), the accumulator staying float32. `tl.dot` of float32 tiles runs on the tensor "
        "cores as TF32, whose mantissa has 10 bits, like fp16's; for values in fp16's range (4-bit weights times "
        "their scale, a layer's activations) the products are as accurate, and fp16 tiles take half the shared "
        "memory and run at twice the tensor-core rate of TF32 on an H100."),
    flops=lambda s: 2 * s["N0"] * s["N1"] * s["MID"],
    speed_goal=SpeedGoal(levers=(
        "unpack a whole B_MID x B1 block of weights at once (shifts and masks on a loaded block, not per "
        "element), apply scale and shift per group before one tl.dot per step, tiles of 64-128 with num_warps"
        " 4-8")),
    no_library=(
        "torch's int4 weight-only matmul (torch._weight_int4pack_mm) takes groups of 32 to 256 weights "
        "with bfloat16 scales and zero points in its own tiled layout; this puzzle's groups are 8 weights "
        "with 4-bit shifts, which it cannot take (puzzle 18, GPTQ's groups of 128, is timed against it)"),
)
