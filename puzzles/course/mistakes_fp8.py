"""Puzzle 32 (an FP8 scaled matmul): its inputs, quantized as a model's are, and its common slips, computed: the
output a kernel with one slip in it stores, from the same inputs (see mistakes.py for how a verdict uses them).

The inputs: real-valued rows (and columns) of different magnitudes, each quantized with its own scale so that its
largest value lands on float8_e4m3fn's largest, 448. Casting the scaled floats to float8 makes every stored value
exactly representable, and the per-row and per-column scales differ enough (a factor of 10) that a scale read along
the wrong axis is far off.

Not here: scaling each chunk's product, acc += tl.dot(x, w) * scale. It is right (the scale does not depend on k),
only slower: a multiply per chunk instead of one per tile (the tests' SLOW kernel).
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes, cdiv

Inputs = dict[str, Tensor]
FP8_MAX = 448.0  # float8_e4m3fn's largest finite value (it has no infinity: past it a cast gives NaN)


def quantize(values: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """(float8 values, float32 scales) with values ≈ q * scale, one scale per slice along `dim` (reduced over it)."""
    scale = values.abs().amax(dim=dim, keepdim=True).clamp_min(1e-12) / FP8_MAX
    return (values / scale).to(torch.float8_e4m3fn), scale.squeeze(dim).float()


def quantized_inputs(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """x (M x K) quantized per row and w (K x N) per column, from floats whose rows (columns) have magnitudes
    between 0.3 and 3."""
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    x = (torch.rand(m, k, generator=gen) * 2 - 1) * 10 ** (torch.rand(m, 1, generator=gen) - 0.5)
    w = (torch.rand(k, n, generator=gen) * 2 - 1) * 10 ** (torch.rand(1, n, generator=gen) - 0.5)
    x_fp8, x_scale = quantize(x, dim=1)
    w_fp8, w_scale = quantize(w, dim=0)
    return {"x": x_fp8, "x_scale": x_scale, "w": w_fp8, "w_scale": w_scale}


def chunk_products(i: Inputs, sizes: Sizes) -> list[Tensor]:
    """x @ w chunk by chunk along K (BK at a time), in float32: what each tl.dot of the K loop adds."""
    x, w, bk = i["x"].float(), i["w"].float(), sizes["BK"]
    return [x[:, k0:k0 + bk] @ w[k0:k0 + bk] for k0 in range(0, sizes["K"], bk)]


def scales_divided(i: Inputs, sizes: Sizes) -> Tensor:
    """z = (x @ w) / (x_scale · w_scale): the scales undone as in quantizing, not applied as in dequantizing."""
    acc = i["x"].float() @ i["w"].float()
    return (acc / (i["x_scale"][:, None] * i["w_scale"][None, :])).to(torch.float16)


def accumulator_rescaled_each_chunk(i: Inputs, sizes: Sizes) -> Tensor:
    """acc = (acc + tl.dot(x, w)) * scale inside the K loop: the first chunk is scaled cdiv(K, BK) times."""
    scale = i["x_scale"][:, None] * i["w_scale"][None, :]
    acc = torch.zeros(sizes["M"], sizes["N"])
    for product in chunk_products(i, sizes):
        acc = (acc + product) * scale
    return acc.to(torch.float16)


def accumulator_rescaled_where(sizes: Sizes) -> str:
    chunks = cdiv(sizes["K"], sizes["BK"])
    return f"here K = {sizes['K']} is {chunks} chunks of BK = {sizes['BK']}, so the first is scaled {chunks} times"


def scales_on_swapped_axes(i: Inputs, sizes: Sizes) -> Tensor | None:
    """z[m, n] = acc[m, n] · x_scale[n] · w_scale[m]: each scale indexed by the other axis's offsets (only where
    M = N: elsewhere one of the loads runs past its vector, an out-of-bounds read the grader names itself)."""
    if sizes["M"] != sizes["N"]:
        return None
    acc = i["x"].float() @ i["w"].float()
    return (acc * i["x_scale"][None, :] * i["w_scale"][:, None]).to(torch.float16)


def x_scale_only(i: Inputs, sizes: Sizes) -> Tensor:
    """z = (x @ w) · x_scale: w's scales left out."""
    acc = i["x"].float() @ i["w"].float()
    return (acc * i["x_scale"][:, None]).to(torch.float16)
