"""The small fused kernels of one Llama decoding step (one token per sequence), for :mod:`solutions.gptq.decode`.

A decoding step at batch 1-8 reads every weight once and does little else, so what costs time beside
the matmuls is the number of kernels: each one is a few microseconds even when it moves a few
kilobytes. transformers' eager layer launches about 40 (RMSNorm alone is six); these four kernels
and the matmuls make about ten per layer:

- :func:`add_rms_norm`: residual += delta (in place), then RMSNorm of the residual;
- :func:`rope_attend`: rotary embedding of q and k, k and v written into the static cache at the
  step's position, then attention of the new token over the cache (online softmax);
- :func:`silu_mul`: the gated MLP's ``silu(gate) * up``;
- :func:`greedy_pick`: the argmax of each row of logits, written as the next input id and into the
  token buffer after the current position.

Each rounds where transformers' Llama rounds to fp16 (RMSNorm's normalised value before the weight,
each product of the rotary embedding, SiLU before the product), so the step follows the model's own
numbers closely; attention and reductions sum in another order (fp32).
The position is read from a one-element tensor on the device, so a captured CUDA graph replays the
same kernels at every position.

The first three also take ``zero``: a flat fp16 buffer they fill with zeros on the side, its pieces
dealt out over all their programs. It is the output buffer of the matmul that runs next, on this
kernel's output: a split-K matmul adds its shares into it with atomics, so it must hold zeros, and
clearing it here saves the fill kernel a graph would otherwise replay before each such matmul (four per
layer).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from solutions.gptq.pdl import STEP_EARLY, pdl_kwargs, start_next_kernel, wait_for_previous_kernel

ZERO_BLOCK = tl.constexpr(1024)  # fp16 elements a program zeroes per store of its share of ``zero``
ZERO_CHUNK = 4096  # add_rms_norm: about this many elements of ``zero`` per program, with at most
ZERO_PROGRAMS_MAX = 16  # this many programs per row
# rope_attend: cache positions per block of its loop, and warps per program (read at launch, so that
# benchmarks/gptq/experiments/ab_pdl.py can try others)
ATTEND_BLOCK_L = 128  # 128: 1.043 ms a step against 1.091 with 32 (H100, batch 1, positions 32-96)
ATTEND_WARPS = 4
GREEDY_BLOCK = 32768  # greedy_pick: logits per block of its loop over a row


@triton.jit
def _follow_previous_kernel(PDL: tl.constexpr):
    """With PDL: wait for the previous kernel (every memory access comes after), having let the next one
    start first where the flags say so (else it starts when this one ends)."""
    if PDL:
        if PDL & STEP_EARLY:
            start_next_kernel()
        wait_for_previous_kernel()


@triton.jit
def _zero_share(ptr, numel, BLOCK: tl.constexpr):
    """Zero this program's share of ``numel`` fp16 elements at ``ptr``: BLOCK-element pieces dealt out in
    turn to every program of the (one- or two-dimensional) grid."""
    program = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    programs = tl.num_programs(0) * tl.num_programs(1)
    for start in range(program * BLOCK, numel, programs * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(ptr + offs, tl.zeros((BLOCK,), dtype=tl.float16), mask=offs < numel)


def _zero_args(zero: Tensor | None, fallback: Tensor) -> tuple[Tensor, int]:
    """The (pointer, element count) kernel arguments for an optional ``zero`` buffer (count 0: none)."""
    if zero is None:
        return fallback, 0
    if zero.dtype != torch.float16 or not zero.is_contiguous():
        raise ValueError(f"zero must be a contiguous fp16 buffer, got {zero.dtype} with strides {zero.stride()}")
    return zero, zero.numel()


@triton.jit
def _add_rms_norm_kernel(delta_ptr, resid_ptr, weight_ptr, out_ptr, zero_ptr, n, eps, delta_stride, resid_stride,
                         out_stride, zero_numel, HAS_DELTA: tl.constexpr, BLOCK: tl.constexpr,
                         PDL: tl.constexpr):
    _follow_previous_kernel(PDL)
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    # Programs (row, 0) normalise their row; every program zeroes a share of ``zero`` (the others only that).
    mask = (offs < n) & (tl.program_id(1) == 0)
    x = tl.load(resid_ptr + row * resid_stride + offs, mask=mask, other=0.0)
    w = tl.load(weight_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_DELTA:
        d = tl.load(delta_ptr + row * delta_stride + offs, mask=mask, other=0.0)
    _zero_share(zero_ptr, zero_numel, BLOCK=ZERO_BLOCK)  # while the loads are in flight
    if HAS_DELTA:
        # residual + delta, rounded as in torch (an fp32 delta first to fp16, as a linear layer's output)
        x = (x.to(tl.float32) + d.to(tl.float16).to(tl.float32)).to(tl.float16)
        tl.store(resid_ptr + row * resid_stride + offs, x, mask=mask)
    xf = x.to(tl.float32)
    variance = tl.sum(xf * xf, axis=0) / n
    normed = (xf * (1.0 / tl.sqrt(variance + eps))).to(tl.float16)
    tl.store(out_ptr + row * out_stride + offs, (w * normed.to(tl.float32)).to(tl.float16), mask=mask)


def add_rms_norm(resid: Tensor, weight: Tensor, eps: float, delta: Tensor | None = None,
                 out: Tensor | None = None, zero: Tensor | None = None, pdl: bool | int = False) -> Tensor:
    """``resid += delta`` (in place, when ``delta`` is given), then ``weight * rmsnorm(resid)``; fp16 (B, N).
    ``zero``: a buffer (no input or output of this call) to fill with zeros on the side. ``pdl``: launch
    with programmatic dependent launch (True, or flags of :mod:`solutions.gptq.pdl`; the other kernels here
    take it too)."""
    rows, n = resid.shape
    out = torch.empty_like(resid) if out is None else out
    src = resid if delta is None else delta
    zero_ptr, zero_numel = _zero_args(zero, resid)
    block = triton.next_power_of_2(n)
    # One program per row cannot clear a buffer of 22016 x B halves fast: helpers zero pieces of ZERO_CHUNK.
    zeroing = max(1, min(ZERO_PROGRAMS_MAX, triton.cdiv(zero_numel, rows * ZERO_CHUNK)))
    _add_rms_norm_kernel[(rows, zeroing)](src, resid, weight, out, zero_ptr, n, eps, src.stride(0), resid.stride(0),
                                  out.stride(0), zero_numel, HAS_DELTA=delta is not None, BLOCK=block,
                                  num_warps=8 if block >= 2048 else 4, **pdl_kwargs(pdl))
    return out


@triton.jit
def rope_rotate(ptr, d, cos, sin, HALF: tl.constexpr):
    """x * cos + rotate_half(x) * sin for the head vector x at ``ptr`` (``d``: its indices), each product
    rounded to fp16 as transformers' fp16 ops do."""
    x = tl.load(ptr + d).to(tl.float32)
    partner = tl.load(ptr + tl.where(d < HALF, d + HALF, d - HALF)).to(tl.float32)
    rotated = tl.where(d < HALF, -partner, partner)
    return ((x * cos).to(tl.float16).to(tl.float32) + (rotated * sin).to(tl.float16).to(tl.float32)).to(tl.float16)


@triton.jit
def attend_over_cache(q, k, v, k_cache, v_cache, base, pos, d, scale, BLOCK_L: tl.constexpr):
    """One query head's attention output (fp16) over cache positions 0..pos - 1 (rows of D at ``base`` in
    the caches) and the new token's k and v (from registers, not read back from the cache): an online
    softmax in fp32 over blocks of BLOCK_L positions."""
    m = tl.sum(q * k, axis=0) * scale
    total = m * 0.0 + 1.0
    acc = v
    rows = tl.arange(0, BLOCK_L)
    D: tl.constexpr = d.shape[0]
    for start in range(0, pos, BLOCK_L):
        idx = start + rows
        valid = idx < pos
        offs = base + idx[:, None] * D + d[None, :]
        keys = tl.load(k_cache + offs, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(keys * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(scores - m_new)
        values = tl.load(v_cache + offs, mask=valid[:, None], other=0.0).to(tl.float32)
        total = total * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * values, axis=0)
        m = m_new
    return (acc / total).to(tl.float16)


@triton.jit
def _rope_attend_kernel(q_ptr, k_ptr, v_ptr, cos_ptr, sin_ptr, k_cache, v_cache, pos_ptr, out_ptr, zero_ptr,
                        q_stride, k_stride, v_stride, out_stride, cache_len, scale, zero_numel,
                        KV_HEADS: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_L: tl.constexpr,
                        PDL: tl.constexpr):
    _follow_previous_kernel(PDL)
    b = tl.program_id(0)
    g = tl.program_id(1)  # one program per (sequence, kv head): its k/v and the GROUP query heads sharing them
    pos = tl.load(pos_ptr)
    d = tl.arange(0, D)
    cos = tl.load(cos_ptr + pos * D + d).to(tl.float32)
    sin = tl.load(sin_ptr + pos * D + d).to(tl.float32)
    k = rope_rotate(k_ptr + b * k_stride + g * D, d, cos, sin, D // 2)
    v = tl.load(v_ptr + b * v_stride + g * D + d)
    base = (b * KV_HEADS + g).to(tl.int64) * cache_len * D
    kf = k.to(tl.float32)
    vf = v.to(tl.float32)
    for h in tl.static_range(GROUP):
        head = g * GROUP + h
        q = rope_rotate(q_ptr + b * q_stride + head * D, d, cos, sin, D // 2).to(tl.float32)
        out = attend_over_cache(q, kf, vf, k_cache, v_cache, base, pos, d, scale, BLOCK_L)
        tl.store(out_ptr + b * out_stride + head * D + d, out)
    # The new k and v go into the cache last: the loop reads positions before pos only, and its loads need
    # not wait behind stores to the same cache.
    tl.store(k_cache + base + pos * D + d, k)
    tl.store(v_cache + base + pos * D + d, v)
    _zero_share(zero_ptr, zero_numel, BLOCK=ZERO_BLOCK)


def rope_attend(q: Tensor, k: Tensor, v: Tensor, cos: Tensor, sin: Tensor, k_cache: Tensor, v_cache: Tensor,
                pos: Tensor, out: Tensor | None = None, zero: Tensor | None = None, pdl: bool | int = False) -> Tensor:
    """One decoding step of attention: q (B, H * D), k and v (B, KV * D) rows (views of one fused output
    are fine: rows may be strided, heads must be contiguous), cos/sin (L, D) fp16 tables, caches
    (B, KV, L, D) fp16, ``pos`` an int tensor of one element (this token's position). Writes the rotated
    k and v at ``pos`` and returns the attention output (B, H * D) over positions 0..pos. ``zero``: a
    buffer (no input or output of this call) to fill with zeros on the side."""
    batch, kv_heads, cache_len, d = k_cache.shape
    heads = q.shape[1] // d
    out = q.new_empty((batch, heads * d)) if out is None else out
    zero_ptr, zero_numel = _zero_args(zero, out)
    _rope_attend_kernel[(batch, kv_heads)](
        q, k, v, cos, sin, k_cache, v_cache, pos, out, zero_ptr, q.stride(0), k.stride(0), v.stride(0),
        out.stride(0), cache_len, d**-0.5, zero_numel, KV_HEADS=kv_heads, GROUP=heads // kv_heads, D=d,
        BLOCK_L=ATTEND_BLOCK_L, num_warps=ATTEND_WARPS, **pdl_kwargs(pdl))
    return out


@triton.jit
def _silu_mul_kernel(gate_ptr, up_ptr, out_ptr, zero_ptr, n, gate_stride, up_stride, out_stride, zero_numel,
                     BLOCK: tl.constexpr, PDL: tl.constexpr):
    _follow_previous_kernel(PDL)
    _zero_share(zero_ptr, zero_numel, BLOCK=ZERO_BLOCK)
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + row * gate_stride + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + row * up_stride + offs, mask=mask, other=0.0).to(tl.float32)
    act = (g / (1.0 + tl.exp(-g))).to(tl.float16).to(tl.float32)
    tl.store(out_ptr + row * out_stride + offs, (act * u).to(tl.float16), mask=mask)


def silu_mul(gate: Tensor, up: Tensor, out: Tensor | None = None, zero: Tensor | None = None,
             pdl: bool | int = False) -> Tensor:
    """``silu(gate) * up`` for fp16 (B, N) rows (strided views of one fused output are fine). ``zero``: a
    buffer (no input or output of this call) to fill with zeros on the side."""
    rows, n = gate.shape
    out = gate.new_empty((rows, n)) if out is None else out
    zero_ptr, zero_numel = _zero_args(zero, out)
    block = 1024
    _silu_mul_kernel[(rows, triton.cdiv(n, block))](gate, up, out, zero_ptr, n, gate.stride(0), up.stride(0),
                                                    out.stride(0), zero_numel, BLOCK=block, num_warps=4,
                                                    **pdl_kwargs(pdl))
    return out


@triton.jit
def _greedy_pick_kernel(logits_ptr, ids_ptr, tokens_ptr, pos_ptr, vocab, logits_stride, tokens_stride,
                        BLOCK: tl.constexpr, PDL: tl.constexpr):
    _follow_previous_kernel(PDL)
    row = tl.program_id(0)
    best = tl.full((), float("-inf"), tl.float32)
    best_idx = tl.full((), 0, tl.int32)
    for start in range(0, vocab, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * logits_stride + offs, mask=offs < vocab, other=float("-inf")).to(tl.float32)
        chunk_best = tl.max(x, axis=0)
        chunk_idx = tl.argmax(x, axis=0) + start  # the first maximum, as torch.argmax
        better = chunk_best > best  # strictly: an equal value later in the row does not win
        best_idx = tl.where(better, chunk_idx, best_idx)
        best = tl.where(better, chunk_best, best)
    pos = tl.load(pos_ptr)
    token = best_idx.to(tl.int64)
    tl.store(ids_ptr + row, token)
    tl.store(tokens_ptr + row * tokens_stride + pos + 1, token)


def greedy_pick(logits: Tensor, ids: Tensor, tokens: Tensor, pos: Tensor, pdl: bool | int = False) -> None:
    """The argmax of each row of ``logits`` (B, V) into ``ids`` (B,) and ``tokens[:, pos + 1]`` (int64)."""
    rows, vocab = logits.shape
    # The whole row in one block up to GREEDY_BLOCK (Llama's 32000: one load, not eight in a row).
    block = min(triton.next_power_of_2(vocab), GREEDY_BLOCK)
    _greedy_pick_kernel[(rows,)](logits, ids, tokens, pos, vocab, logits.stride(0), tokens.stride(0),
                                 BLOCK=block, num_warps=max(4, min(16, block // 2048)), **pdl_kwargs(pdl))
