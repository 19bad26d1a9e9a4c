"""GPTQ int4 dequantize-and-multiply: :func:`gptq_matmul`, the call every user of the package makes.

    y = gptq_matmul(x, weight)          # x fp16 (..., K), weight a GPTQWeight (K, N) -> y fp16 (..., N)

The package in layers, each importing only those below it:

* :mod:`solutions.gptq.quantize` (int4 packing, a round-to-nearest quantizer) and
  :mod:`solutions.gptq.loader` (``GPTQWeight``: a checkpoint layer validated and repacked);
* :mod:`solutions.gptq.configs`: ``GPTQConfig`` and the launch configs tuned on an H100;
* :mod:`solutions.gptq.dequant` (int4 -> fp16 in registers), :mod:`solutions.gptq.kernels` (the Triton
  kernels), :mod:`solutions.gptq.ws_prefill` (the warp-specialised Gluon prefill kernel for Hopper);
* :mod:`solutions.gptq.launch` (a cheap launcher for compiled kernels) and :mod:`solutions.gptq.plans`
  (which kernel a call runs, with which arguments, cached per call signature);
* this module; :mod:`solutions.gptq.layer` (``GPTQLinear``, a torch custom op) on top.

Design notes and measurements: benchmarks/gptq/NOTES.md.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor

from solutions.gptq.configs import GPTQConfig
from solutions.gptq.loader import GPTQWeight
from solutions.gptq.plans import Plan, Replan, default_config


def gptq_matmul(
    a: Tensor,
    weight: GPTQWeight,
    *,
    split_k: int | None = None,
    config: GPTQConfig | None = None,
    deterministic: bool = False,
    method: str = "auto",
) -> Tensor:
    """``a @ W`` for fp16 ``a`` of shape (..., K) and a 4-bit GPTQ weight W (K, N); fp16 (..., N).

    ``config`` defaults to the tuned table in :mod:`solutions.gptq.configs`; ``split_k`` overrides
    its split. Split-K shares are added with fp16 atomics (each share's fp32 tile is rounded once
    before the add); ``deterministic=True`` sums fp32 shares in a fixed order instead, so repeated
    calls give identical bits. ``method``: ``"fused"`` (the dequantize-and-multiply Triton kernels),
    ``"dequant"`` (dequantize W to fp16 in chunks, then cuBLAS), ``"ws"`` (the warp-specialised Gluon
    kernel of :mod:`solutions.gptq.ws_prefill`, Hopper only), ``"auto"`` (unless a config is given: on a
    Hopper GPU the warp-specialised kernel where :func:`solutions.gptq.configs.ws_tile` gives a tile,
    prefill sizes; else dequant where :func:`solutions.gptq.configs.select_method` says so, on a GPU; else
    fused). If the Gluon kernel fails to build once (another Triton's Gluon API), ``"auto"`` warns once
    and uses the others from then on.

    The launch is planned once per (M, A's strides and alignment, options) and cached on ``weight``;
    replacing a weight's tensors in place needs ``weight.clear_plans()``.
    """
    a2 = a if a.dim() == 2 else a.reshape(-1, a.shape[-1])
    # Everything a plan depends on is in the key, so a hit needs no further checks: Triton
    # specialises on 16-byte alignment and on strides equal to 1, hence the strides and alignment.
    # The options join the key only where one differs from its default (a shorter key to build).
    key = (a2.shape, a2.stride(), a2.data_ptr() % 16 == 0, a2.get_device(), a2.dtype)
    if config is not None or split_k is not None or deterministic or method != "auto":
        key += (config, split_k, deterministic, method)
    plan = weight._plans.get(key)
    if plan is not None and plan.hot is not None:
        out = plan.hot(a2)
        return out if a2 is a else out.reshape(*a.shape[:-1], plan.n)
    if plan is None:
        k, n = weight.k, weight.n
        if a.shape[-1] != k:
            raise ValueError(f"a has {a.shape[-1]} columns, the weight has K={k} rows")
        if a.dtype != torch.float16:
            raise TypeError(f"a must be fp16, got {a.dtype}")
        if a.device != weight.scales.device:
            raise ValueError(f"a is on {a.device}, the weight on {weight.scales.device}")
        if method not in ("auto", "fused", "dequant", "ws"):
            raise ValueError(f"method must be 'auto', 'fused', 'dequant' or 'ws', got {method!r}")
        if a2.shape[0] == 0:
            return a.new_empty((*a.shape[:-1], n))
        cfg = config
        if split_k is not None:
            cfg = replace(cfg if cfg is not None else default_config(a2.shape[0], weight), split_k=split_k)
        plan = Plan(a2, weight, cfg, deterministic, method)
        weight._plans[key] = plan
    try:
        out = plan(a2)
    except Replan:  # the warp-specialised kernel failed once: ws_prefill.supported() is False from now on
        plan = weight._plans[key] = Plan(a2, weight, config, deterministic, method)
        out = plan(a2)
    return out if a2 is a else out.reshape(*a.shape[:-1], plan.n)
