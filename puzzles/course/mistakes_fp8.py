"""Puzzle 32 (an FP8 scaled matmul): its inputs, quantized as a model's are, and its common slips, computed: the
output a kernel with one slip in it stores, from the same inputs (see mistakes.py for how a verdict uses them).

The inputs: real-valued rows of different magnitudes (x's, and w's: N x K, a row per output channel), each quantized
with its own scale so that its largest value lands on float8_e4m3fn's largest, 448. Casting the scaled floats to
float8 makes every stored value exactly representable, and the rows' scales differ enough (a factor of 10) that a
scale read along the wrong axis is far off.

Not here: scaling each chunk's product, acc += tl.dot(x, tl.trans(w)) * scale. It is right (the scale does not
depend on k), only slower: a multiply per chunk instead of one per tile (the tests' SLOW kernel).
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
    """x (M x K) and w (N x K) quantized per row, from floats whose rows have magnitudes between 0.3 and 3."""
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    x = (torch.rand(m, k, generator=gen) * 2 - 1) * 10 ** (torch.rand(m, 1, generator=gen) - 0.5)
    w = (torch.rand(n, k, generator=gen) * 2 - 1) * 10 ** (torch.rand(n, 1, generator=gen) - 0.5)
    x_fp8, x_scale = quantize(x, dim=1)
    w_fp8, w_scale = quantize(w, dim=1)
    return {"x": x_fp8, "x_scale": x_scale, "w": w_fp8, "w_scale": w_scale}


def products(i: Inputs) -> Tensor:
    """x @ w.T in float32: the sum every kernel accumulates, before its scales."""
    return i["x"].float() @ i["w"].float().T


def chunk_products(i: Inputs, sizes: Sizes) -> list[Tensor]:
    """x @ w.T chunk by chunk along K (BK at a time), in float32: what each tl.dot of the K loop adds."""
    x, w, bk = i["x"].float(), i["w"].float(), sizes["BK"]
    return [x[:, k0:k0 + bk] @ w[:, k0:k0 + bk].T for k0 in range(0, sizes["K"], bk)]


def scales_divided(i: Inputs, sizes: Sizes) -> Tensor:
    """z = (x @ w.T) / (x_scale · w_scale): the scales undone as in quantizing, not applied as in dequantizing."""
    acc = products(i)
    return (acc / (i["x_scale"][:, None] * i["w_scale"][None, :])).to(torch.float16)


def accumulator_rescaled_each_chunk(i: Inputs, sizes: Sizes) -> Tensor:
    """acc = (acc + tl.dot(x, tl.trans(w))) * scale inside the K loop: the first chunk is scaled cdiv(K, BK) times."""
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
    acc = products(i)
    return (acc * i["x_scale"][None, :] * i["w_scale"][:, None]).to(torch.float16)


def x_scale_only(i: Inputs, sizes: Sizes) -> Tensor:
    """z = (x @ w.T) · x_scale: w's scales left out."""
    return (products(i) * i["x_scale"][:, None]).to(torch.float16)


def w_read_as_k_by_n(i: Inputs, sizes: Sizes) -> Tensor:
    """w's bytes read as a K x N matrix (w_ptr + k * N + n, always within its N·K elements): what a kernel written
    for a K x N w computes from the N x K one."""
    as_k_by_n = i["w"].float().reshape(sizes["K"], sizes["N"])
    acc = i["x"].float() @ as_k_by_n
    return (acc * i["x_scale"][:, None] * i["w_scale"][None, :]).to(torch.float16)
