"""A small GPTQ-format quantizer (round-to-nearest) and the int4 packing helpers.

It produces tensors in the layout AutoGPTQ checkpoints use, so the kernel and the loader can be
tested without a real checkpoint. Shapes, for a weight W of shape (K, N) used as ``C = A @ W``
(K input features, N output features; this is ``nn.Linear.weight.T``):

``qweight``  int32 (K / 8, N)
    8 four-bit values packed along K. Nibble ``n`` of ``qweight[i, j]``, i.e.
    ``(word >> 4 * n) & 0xF``, is the quantized value of row ``8 * i + n``, column ``j``.
``qzeros``   int32 (K / G, N / 8)
    8 four-bit zero points packed along N. Nibble ``n`` of ``qzeros[g, j]`` is the zero point of
    group ``g``, column ``8 * j + n``.
``scales``   fp16 (K / G, N)
    One scale per group and column.
``g_idx``    int32 (K,)
    The group of each row of W: ``k // G`` without act-order, a permutation of that with it.

Dequantization: ``W[k, n] = (q[k, n] - (z[g_idx[k], n] + offset)) * s[g_idx[k], n]`` where
``offset`` is 1 in the classic ``gptq`` checkpoint format (AutoGPTQ stores ``zero - 1``) and 0 in
``gptq_v2``. Group size ``-1`` (per channel) means a single group of all K rows.

Quantization here is plain round-to-nearest per group, asymmetric, with the range widened to
contain 0 (as AutoGPTQ does). It is not the GPTQ algorithm (no Hessian error feedback): the
kernel only needs tensors in the right layout and values in the right ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

BITS = 4
PACK = 32 // BITS  # values per int32 word
MAX_Q = (1 << BITS) - 1
CHECKPOINT_FORMATS = ("gptq", "gptq_v2")


def zero_offset(checkpoint_format: str) -> int:
    """The constant added to a stored zero point: 1 for ``gptq`` (stored zero = zero - 1), 0 for ``gptq_v2``."""
    if checkpoint_format not in CHECKPOINT_FORMATS:
        raise ValueError(f"checkpoint_format must be one of {CHECKPOINT_FORMATS}, got {checkpoint_format!r}")
    return 1 if checkpoint_format == "gptq" else 0


def _to_int32_words(words: Tensor) -> Tensor:
    """int64 values in [0, 2**32) -> int32 with the same bits (nibble 7 >= 8 makes the word negative)."""
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def _check_nibbles(values: Tensor) -> None:
    if values.dtype.is_floating_point:
        raise TypeError(f"4-bit values must be an integer tensor, got {values.dtype}")
    if values.numel() and (int(values.min()) < 0 or int(values.max()) > MAX_Q):
        raise ValueError("4-bit values must lie in [0, 15]")


def pack_int4_along_k(q: Tensor) -> Tensor:
    """Pack (K, N) 4-bit values into int32 words (K / 8, N): row ``8 * i + n`` goes to nibble ``n`` of row ``i``."""
    _check_nibbles(q)
    k, n = q.shape
    if k % PACK:
        raise ValueError(f"K={k} must be a multiple of {PACK} to pack along K")
    q = q.to(torch.int64).reshape(k // PACK, PACK, n)
    shifts = (torch.arange(PACK, device=q.device, dtype=torch.int64) * BITS).view(1, PACK, 1)
    return _to_int32_words((q << shifts).sum(dim=1))


def unpack_int4_along_k(qweight: Tensor) -> Tensor:
    """Inverse of :func:`pack_int4_along_k`: int32 (K / 8, N) -> int32 (K, N) with values in [0, 15]."""
    if qweight.dtype != torch.int32:
        raise TypeError(f"packed words must be int32, got {qweight.dtype}")
    kw, n = qweight.shape
    shifts = (torch.arange(PACK, device=qweight.device, dtype=torch.int32) * BITS).view(1, PACK, 1)
    # An arithmetic shift of a negative word drags sign bits down, but the mask keeps only 4 bits.
    return ((qweight.unsqueeze(1) >> shifts) & MAX_Q).reshape(kw * PACK, n)


def pack_int4_along_n(z: Tensor) -> Tensor:
    """Pack (R, N) 4-bit values into int32 words (R, N / 8): column ``8j + n`` goes to nibble ``n`` of column ``j``."""
    _check_nibbles(z)
    r, n = z.shape
    if n % PACK:
        raise ValueError(f"N={n} must be a multiple of {PACK} to pack along N")
    z = z.to(torch.int64).reshape(r, n // PACK, PACK)
    shifts = (torch.arange(PACK, device=z.device, dtype=torch.int64) * BITS).view(1, 1, PACK)
    return _to_int32_words((z << shifts).sum(dim=2))


def unpack_int4_along_n(qzeros: Tensor) -> Tensor:
    """Inverse of :func:`pack_int4_along_n`: int32 (R, N / 8) -> int32 (R, N) with values in [0, 15]."""
    if qzeros.dtype != torch.int32:
        raise TypeError(f"packed words must be int32, got {qzeros.dtype}")
    r, nw = qzeros.shape
    shifts = (torch.arange(PACK, device=qzeros.device, dtype=torch.int32) * BITS).view(1, 1, PACK)
    return ((qzeros.unsqueeze(2) >> shifts) & MAX_Q).reshape(r, nw * PACK)


@dataclass
class QuantizedLayer:
    """What :func:`quantize_rtn` returns: checkpoint tensors plus the matching quantize config."""

    tensors: dict[str, Tensor]  # qweight, qzeros, scales, g_idx: exactly the keys of an AutoGPTQ layer
    quantize_config: dict  # bits, group_size, desc_act, checkpoint_format
    q: Tensor  # (K, N) int32 unpacked values, for tests
    zeros: Tensor  # (K / G, N) int32 real zero points (before the storage offset), for tests


def quantize_rtn(
    w: Tensor,
    group_size: int = 128,
    *,
    act_order: bool = False,
    importance: Tensor | None = None,
    checkpoint_format: str = "gptq",
) -> QuantizedLayer:
    """Quantize a (K, N) float weight to asymmetric 4 bits per group, round-to-nearest.

    ``group_size`` is 32, 64, 128 (any divisor of K works) or -1 for one group per column.
    With ``act_order`` the rows are assigned to groups in decreasing ``importance`` (default: the
    rows' squared norms, standing in for GPTQ's Hessian diagonal), as AutoGPTQ's ``desc_act`` does:
    row ``perm[i]`` belongs to group ``i // G`` and ``g_idx`` records it. qweight keeps the original
    row order.

    In the ``gptq`` format a real zero point of 0 cannot be stored (it would be -1), so zero points
    are clamped to [1, 15] there, costing at most one quantization level in groups that are all
    non-negative; ``gptq_v2`` stores [0, 15].
    """
    offset = zero_offset(checkpoint_format)
    if w.dim() != 2 or not w.dtype.is_floating_point:
        raise ValueError("w must be a 2-D floating-point tensor (K, N)")
    k, n = w.shape
    g = k if group_size == -1 else group_size
    if g <= 0 or k % g or k % PACK or n % PACK:
        raise ValueError(f"K={k} must be a multiple of 8 and of the group size {group_size}; N={n} of 8")
    w = w.detach().to(torch.float64)
    if act_order:
        imp = (w * w).sum(dim=1) if importance is None else importance.to(w.device, torch.float64)
        perm = torch.argsort(imp, descending=True, stable=True)
    else:
        perm = torch.arange(k, device=w.device)
    g_idx = torch.empty(k, dtype=torch.int32, device=w.device)
    g_idx[perm] = (torch.arange(k, device=w.device) // g).to(torch.int32)

    # Statistics per (group, column) over the rows in that group, taken in permuted order.
    wg = w[perm].reshape(k // g, g, n)
    lo = wg.amin(dim=1).clamp(max=0.0)
    hi = wg.amax(dim=1).clamp(min=0.0)
    flat = (lo == 0) & (hi == 0)  # an all-zero group: any scale works, avoid dividing by 0
    lo, hi = torch.where(flat, -1.0, lo), torch.where(flat, 1.0, hi)
    # Round the scale to fp16 first, then quantize against the stored value: the error we pay is
    # the one the checkpoint will show.
    scales = ((hi - lo) / MAX_Q).to(torch.float16)
    s = scales.to(torch.float64)
    zeros = torch.round(-lo / s).clamp(offset, MAX_Q).to(torch.int32)

    rows_group = g_idx.long()
    q = torch.round(w / s[rows_group]) + zeros[rows_group]
    q = q.clamp(0, MAX_Q).to(torch.int32)

    tensors = {
        "qweight": pack_int4_along_k(q),
        "qzeros": pack_int4_along_n(zeros - offset),
        "scales": scales,
        "g_idx": g_idx,
    }
    config = {"bits": BITS, "group_size": group_size, "desc_act": act_order, "checkpoint_format": checkpoint_format}
    return QuantizedLayer(tensors=tensors, quantize_config=config, q=q, zeros=zeros)
