"""The MXFP4 format of puzzle 33 in PyTorch (OCP Microscaling v1.0): e2m1 values packed two to a byte along K, one
e8m0 scale per block of 32 values along K. The spec, the slips, the library baseline and the input builder all
read the format through these functions, so there is one definition of it.

Layout (the one `tl.dot_scaled` reads for its right-hand side, whose scales it wants transposed, N × K/32):
`w` uint8 K/2 × N, byte `w[j, n]` holds rows 2j (low nibble) and 2j + 1 (high nibble) of column n;
`scale` uint8 K/32 × N, block `b` of column `n` is multiplied by 2^(scale[b, n] − 127); 255 (NaN) is never made.
"""

from __future__ import annotations

import torch
from torch import Tensor

BLOCK = 32  # values sharing one scale, along K
BIAS = 127  # e8m0's exponent bias
NAN_SCALE = 255  # e8m0's one NaN; the quantizer never writes it
ELEMENT_EMAX = 2  # the largest e2m1 exponent: 6 = 1.5 · 2^2

# Nibble -> value: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0; exponent 0 is subnormal (0 and 0.5).
E2M1_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                            -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def nibbles_along_k(w: Tensor) -> Tensor:
    """The K × N nibbles (0..15) of bytes packed along K: row 2j is the low nibble of w[j], row 2j + 1 the high."""
    low, high = w & 0xF, w >> 4
    return torch.stack([low, high], dim=1).flatten(0, 1)


def pack_along_k(codes: Tensor) -> Tensor:
    """The inverse of nibbles_along_k: K × N nibbles -> K/2 × N bytes."""
    codes = codes.to(torch.uint8)
    return codes[0::2] | (codes[1::2] << 4)


def block_scales(scale: Tensor) -> Tensor:
    """K × N float32 multipliers: 2^(s − 127) of each value's block."""
    return torch.exp2(scale.float() - BIAS).repeat_interleave(BLOCK, dim=0)


def dequantize(w: Tensor, scale: Tensor) -> Tensor:
    """The K × N float32 weights MXFP4 stores (exact: every value is e2m1 times a power of two)."""
    return E2M1_VALUES.to(w.device)[nibbles_along_k(w).long()] * block_scales(scale)


def nearest_e2m1(magnitude: Tensor) -> Tensor:
    """Codes 0..7 of the e2m1 magnitudes nearest `magnitude` (>= 0), ties to the even code (mantissa bit 0), past 6
    saturating to 6, as the OCP spec's conversion does."""
    grid = E2M1_VALUES[:8].to(magnitude.device)
    below = (torch.searchsorted(grid, magnitude.contiguous(), right=True) - 1).clamp(0, 7)
    above = (below + 1).clamp(max=7)
    to_below, to_above = magnitude - grid[below], grid[above] - magnitude
    take_above = (to_above < to_below) | ((to_above == to_below) & (above % 2 == 0))
    return torch.where(take_above, above, below)


def quantize(weights: Tensor) -> tuple[Tensor, Tensor]:
    """Float K × N weights (K a multiple of 32) -> (w, scale) in MXFP4: each block's scale 2^(⌊log2 amax⌋ − 2), so
    its largest value lands in [4, 8) before rounding (OCP MX v1.0); an all-zero block gets scale 2^0."""
    k_size, n_size = weights.shape
    blocks = weights.float().reshape(k_size // BLOCK, BLOCK, n_size)
    amax = blocks.abs().amax(dim=1)  # K/32 × N
    exponent = torch.where(amax > 0, torch.floor(torch.log2(amax.clamp(min=2.0 ** -126))) - ELEMENT_EMAX,
                           torch.zeros_like(amax))
    exponent = exponent.clamp(-BIAS, NAN_SCALE - 1 - BIAS)
    scaled = blocks / torch.exp2(exponent)[:, None, :]
    codes = nearest_e2m1(scaled.abs()) | (torch.signbit(scaled).long() << 3)
    return pack_along_k(codes.reshape(k_size, n_size)), (exponent + BIAS).to(torch.uint8)


def graded_weights(sizes: dict[str, int], index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 33's `draw_inputs` (every size, and the speed size): normal weights whose magnitude changes by a power
    of two from block to block and column to column (2^-6 to 2^3), quantized; so every scale differs from its
    neighbours and a scale read from the wrong block, or a wrong bias, changes the values."""
    k_size, n_size = sizes["K"], sizes["N"]
    magnitude = torch.randint(-6, 4, (k_size // BLOCK, n_size), generator=gen).float()
    weights = torch.randn(k_size, n_size, generator=gen) * torch.exp2(magnitude).repeat_interleave(BLOCK, dim=0)
    w, scale = quantize(weights)
    return {"w": w, "scale": scale}
