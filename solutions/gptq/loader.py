"""Load one AutoGPTQ checkpoint layer into what the kernel needs, and the torch reference dequantizer.

The checkpoint layout is described in :mod:`solutions.gptq.quantize`. Loading validates shapes,
dtypes and the quantize config, resolves the zero-point convention (``gptq``: stored zero + 1;
``gptq_v2``: stored zero) and simplifies ``g_idx``:

* a ``g_idx`` equal to ``k // G`` is dropped: the kernel computes groups from ``k``;
* an act-order ``g_idx`` (a permutation of ``k // G``, as ``desc_act`` writes) is removed by
  reordering the rows of ``qweight`` so that groups become contiguous again; the kernel then reads
  A's columns through ``a_perm`` (``A[:, a_perm] @ W[a_perm]`` is ``A @ W``), which costs a gather of
  the small activation instead of a per-row gather of scales and zero points;
* any other ``g_idx`` is kept and the kernel gathers scales and zero points per row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
from torch import Tensor

from solutions.gptq.quantize import (
    BITS,
    PACK,
    pack_int4_along_k,
    unpack_int4_along_k,
    unpack_int4_along_n,
    zero_offset,
)

_KNOWN_KEYS = {"qweight", "qzeros", "scales", "g_idx", "bias"}


@dataclass
class GPTQWeight:
    """A 4-bit GPTQ weight W of shape (K, N), ready for :func:`solutions.gptq.matmul.gptq_matmul`.

    Row ``r`` of ``qweight`` holds original row ``a_perm[r]`` of W when ``a_perm`` is set (act-order
    reordered at load time), row ``r`` otherwise. Row ``r``'s group is ``g_idx[r]`` when ``g_idx``
    is set, ``r // group_size`` otherwise.
    """

    qweight: Tensor | None  # int32 (K / 8, N), packed along K; None when dropped for qweight_mma
    qzeros: Tensor  # int32 (K / G, N / 8), packed along N, stored values (before zero_offset)
    scales: Tensor  # fp16 (K / G, N)
    group_size: int  # G; K for per-channel (-1 in the checkpoint)
    zero_offset: int  # 1 for the gptq format, 0 for gptq_v2
    g_idx: Tensor | None = None  # int32 (K,): general per-row groups (rare after load)
    a_perm: Tensor | None = None  # int32 (K,): A's column for each stored row (act-order)
    bias: Tensor | None = None  # fp16 (N,), added to the output when present
    qweight_mma: Tensor | None = None  # int32 (N / 128, K / 128, 128, 16): qweight repacked (repack_for_mma)
    # gptq_matmul's launch plans (plans.py) by call signature: filled by solutions.gptq.matmul alone (read them
    # through ``plans``); emptied by clear_plans().
    plan_cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def k(self) -> int:
        if self.qweight is None:
            return self.qweight_mma.shape[1] * MMA_TILE
        return self.qweight.shape[0] * PACK

    @property
    def n(self) -> int:
        return self.scales.shape[1]

    @property
    def plans(self) -> Mapping[tuple, object]:
        """The cached launch plans (:class:`solutions.gptq.plans.Plan`) by call signature, read-only."""
        return MappingProxyType(self.plan_cache)

    def clear_plans(self) -> None:
        """Forget the cached launch plans (needed after replacing this weight's tensors)."""
        self.plan_cache.clear()

    def plain_qweight(self) -> Tensor:
        """qweight (K / 8, N), rebuilt from the repacked copy when it was dropped at load time."""
        return self.qweight if self.qweight is not None else unrepack_for_mma(self.qweight_mma)

    def to(self, device: torch.device | str) -> GPTQWeight:
        """The same weight with every tensor on ``device``."""

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(device)

        return GPTQWeight(
            qweight=move(self.qweight),
            qzeros=move(self.qzeros),
            scales=move(self.scales),
            group_size=self.group_size,
            zero_offset=self.zero_offset,
            g_idx=move(self.g_idx),
            a_perm=move(self.a_perm),
            bias=move(self.bias),
            qweight_mma=move(self.qweight_mma),
        )


MMA_TILE = 128  # columns and rows of K per block of repack_for_mma


def repack_for_mma(qweight: Tensor) -> Tensor:
    """qweight (K / 8, N) -> (N / 128, K / 128, 128, 16): one contiguous 8 KB block per 128 columns
    x 128 rows of K (one K step of a program of the swapped kernel at BLOCK_K = 128), in which each
    thread's nibbles sit where its wgmma register fragment wants them. Needs K % 128 == 0 and N % 128 == 0.

    In the swapped kernel the thread with quad lane l of a warp holds, for every 32 rows of K, the
    fp16 pairs at rows 32c + 16b2 + 8b1 + 2l + h (h, b1, b2 in {0, 1}; ``dequant.slots_to_mma_order``).
    Here word 4c + l of a column's 16-word run is rebuilt from exactly those 8 rows: nibble
    4h + 2b2 + b1 holds row 32c + 16b2 + 8b1 + 2l + h, so the dequantized fragment comes out in
    natural K order and A is used as stored. The run is stored with position 4l + c holding word
    4c + l: a thread's 4 words are one 16-byte cp.async and one shared-memory read.
    """
    kw, n = qweight.shape
    k = kw * PACK
    _require(k % MMA_TILE == 0 and n % MMA_TILE == 0,
             f"repack_for_mma needs K and N multiples of {MMA_TILE}, got K={k}, N={n}")
    q = unpack_int4_along_k(qweight).reshape(k // MMA_TILE, 4, 2, 2, 4, 2, n)  # (kb, c, b2, b1, l, h, n)
    # New packed row of a block: 4l + c (its storage position); nibble: 4h + 2b2 + b1.
    q = q.permute(0, 4, 1, 5, 2, 3, 6).reshape(k, n)
    words = pack_int4_along_k(q).reshape(k // MMA_TILE, 16, n // MMA_TILE, MMA_TILE)  # (kb, 4l + c, nb, n)
    return words.permute(2, 0, 3, 1).contiguous()


def unrepack_for_mma(qweight_mma: Tensor) -> Tensor:
    """Inverse of :func:`repack_for_mma`: (N / 128, K / 128, 128, 16) -> qweight (K / 8, N)."""
    nb, kb = qweight_mma.shape[:2]
    words = qweight_mma.permute(1, 3, 0, 2).reshape(kb * 16, nb * MMA_TILE)  # (kb, 4l + c, nb, n)
    q = unpack_int4_along_k(words).reshape(kb, 4, 4, 2, 2, 2, nb * MMA_TILE)  # (kb, l, c, h, b2, b1, n)
    q = q.permute(0, 2, 4, 5, 1, 3, 6).reshape(kb * MMA_TILE, nb * MMA_TILE)  # rows (kb, c, b2, b1, l, h)
    return pack_int4_along_k(q)


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ValueError(message)


def load_gptq_layer(tensors: dict[str, Tensor], quantize_config: dict, *, reorder_act_order: bool = True,
                    repack: bool = True, keep_plain: bool | None = None) -> GPTQWeight:
    """Validate an AutoGPTQ layer (``qweight``, ``qzeros``, ``scales``, optional ``g_idx``, ``bias``).

    ``quantize_config`` is the checkpoint's ``quantize_config.json`` as a dict: ``bits`` (must be
    4), ``group_size`` (-1 or a divisor of K), ``desc_act``, ``checkpoint_format`` ("gptq" by
    default, or "gptq_v2"). With ``reorder_act_order=False`` an act-order ``g_idx`` is kept as is
    (slower kernel path; useful to test that path). With ``repack`` (default) and K, N multiples of 128, the
    weight also gets ``qweight_mma`` (:func:`repack_for_mma`), which the small-M kernel reads with
    fewer, wider loads. ``keep_plain`` (default: only where there is no repacked copy) keeps the plain
    ``qweight`` beside it; every path of :func:`~solutions.gptq.matmul.gptq_matmul` with its default
    configs reads the repacked copy when there is one, so by default it is dropped (no second copy).
    No repack where G is not a multiple of 32 (a repacked word spans 32 rows of K: the kernels could
    never read it).
    """
    unknown = set(tensors) - _KNOWN_KEYS
    _require(not unknown, f"unexpected tensors {sorted(unknown)}; a GPTQ layer has {sorted(_KNOWN_KEYS)}")
    for key in ("qweight", "qzeros", "scales"):
        _require(key in tensors, f"missing tensor {key!r}")
    bits = quantize_config.get("bits", BITS)
    _require(bits == BITS, f"only 4-bit GPTQ is supported, the config says bits={bits}")
    fmt = quantize_config.get("checkpoint_format", "gptq")
    offset = zero_offset(fmt)
    desc_act = bool(quantize_config.get("desc_act", False))

    qweight, qzeros, scales = tensors["qweight"], tensors["qzeros"], tensors["scales"]
    for key, t, dtype in (("qweight", qweight, torch.int32), ("qzeros", qzeros, torch.int32),
                          ("scales", scales, torch.float16)):
        _require(t.dtype == dtype, f"{key} must be {dtype}, got {t.dtype}")
        _require(t.dim() == 2, f"{key} must be 2-D, got shape {tuple(t.shape)}")
    k, n = qweight.shape[0] * PACK, qweight.shape[1]
    _require(n % PACK == 0, f"N={n} (qweight.shape[1]) must be a multiple of {PACK}")

    group_size = quantize_config.get("group_size", -1)
    g = k if group_size == -1 else int(group_size)
    _require(g > 0 and k % g == 0, f"group_size={group_size} must be -1 or a positive divisor of K={k}")
    n_groups = k // g
    _require(scales.shape == (n_groups, n), f"scales must be {(n_groups, n)} for K={k}, N={n}, G={g}; "
             f"got {tuple(scales.shape)}")
    _require(qzeros.shape == (n_groups, n // PACK),
             f"qzeros must be {(n_groups, n // PACK)}; got {tuple(qzeros.shape)}")

    g_idx = tensors.get("g_idx")
    if g_idx is not None:
        _require(g_idx.shape == (k,), f"g_idx must have shape ({k},), got {tuple(g_idx.shape)}")
        _require(not g_idx.dtype.is_floating_point, f"g_idx must be an integer tensor, got {g_idx.dtype}")
        g_idx = g_idx.to(torch.int32)
        _require(int(g_idx.min()) >= 0 and int(g_idx.max()) < n_groups, f"g_idx values must lie in [0, {n_groups})")
    _require(not desc_act or g_idx is not None, "desc_act=True needs the layer's g_idx")
    bias = tensors.get("bias")
    if bias is not None:
        _require(bias.shape == (n,), f"bias must have shape ({n},), got {tuple(bias.shape)}")
        bias = bias.to(torch.float16)

    weight = GPTQWeight(qweight=qweight.contiguous(), qzeros=qzeros.contiguous(), scales=scales.contiguous(),
                        group_size=g, zero_offset=offset, bias=bias)
    if g_idx is not None:
        rows = torch.arange(k, device=g_idx.device, dtype=torch.int32)
        perm = torch.argsort(g_idx, stable=True)
        if torch.equal(g_idx, rows // g):
            pass  # the trivial g_idx that checkpoints store even without act-order
        elif reorder_act_order and torch.equal(g_idx[perm], rows // g):
            # Contiguous groups once rows are sorted by group: repack qweight in that order.
            weight.qweight = pack_int4_along_k(unpack_int4_along_k(qweight)[perm])
            weight.a_perm = perm.to(torch.int32)
        else:
            weight.g_idx = g_idx.contiguous()
    if (repack and weight.g_idx is None and k % MMA_TILE == 0 and n % MMA_TILE == 0
            and (g % 32 == 0 or g >= k)):
        weight.qweight_mma = repack_for_mma(weight.qweight)
        if not keep_plain:
            weight.qweight = None
    return weight


def dequantize(weight: GPTQWeight, dtype: torch.dtype = torch.float64) -> Tensor:
    """The reference: W (K, N) in original row order, ``(q - (z + offset)) * s`` computed in ``dtype``."""
    q = unpack_int4_along_k(weight.plain_qweight())
    z = unpack_int4_along_n(weight.qzeros) + weight.zero_offset
    rows = torch.arange(weight.k, device=q.device)
    groups = weight.g_idx.long() if weight.g_idx is not None else rows // weight.group_size
    w = (q - z[groups]).to(dtype) * weight.scales[groups].to(dtype)
    if weight.a_perm is None:
        return w
    out = torch.empty_like(w)
    out[weight.a_perm.long()] = w  # stored row r is original row a_perm[r]
    return out
