"""GPTQ int4 dequantize-and-multiply: :func:`gptq_matmul`, the call every user of the package makes.

    y = gptq_matmul(x, weight)          # x fp16 (..., K), weight a GPTQWeight (K, N) -> y fp16 (..., N)

The package in layers, each importing only those below it:

* :mod:`solutions.gptq.quantize` (int4 packing, a round-to-nearest quantizer) and
  :mod:`solutions.gptq.loader` (``GPTQWeight``: a checkpoint layer validated and repacked);
* :mod:`solutions.gptq.configs`: ``GPTQConfig`` and the launch configs tuned on an H100;
* :mod:`solutions.gptq.pdl` (programmatic dependent launch: the flags and device helpers the kernels use);
* :mod:`solutions.gptq.dequant` (int4 -> fp16 in registers), :mod:`solutions.gptq.kernels` (the Triton
  kernels), :mod:`solutions.gptq.ws_prefill` (the warp-specialised Gluon prefill kernel for Hopper);
* :mod:`solutions.gptq.launch` (a cheap launcher for compiled kernels) and :mod:`solutions.gptq.plans`
  (which kernel a call runs, with which arguments, cached per call signature);
* this module; :mod:`solutions.gptq.layer` (``GPTQLinear``, a torch custom op) on top;
* beside it, a model's decoding: :mod:`solutions.gptq.decode_kernels` (the step's small kernels) and
  :mod:`solutions.gptq.decode` (``GraphDecoder``: the whole greedy step one CUDA graph);
  :mod:`solutions.gptq.pdl_check` checks offline that the step's kernels keep the PDL rule.

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
    out: Tensor | None = None,
    out_zeroed: bool = False,
    pdl: bool | int = False,
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

    ``out``: a contiguous, 16-byte-aligned fp16 tensor of the result's shape to write into (and return)
    instead of a new one. A call that adds split-K shares with atomics (:func:`accumulates`) zeroes it
    first, unless ``out_zeroed=True``: the caller promises it holds zeros, as when an earlier kernel of a
    CUDA graph cleared it (solutions/gptq/decode.py), which saves the zero-fill launch. Other calls
    overwrite it whatever it holds.

    ``pdl=True`` (or flags of :mod:`solutions.gptq.pdl`): where the call runs the fused small-M kernel on a
    Hopper GPU, launch it with programmatic dependent launch: it may start while the kernel before it still
    runs, and waits for that kernel before it reads A or touches C. It pays in a chain of kernels that all
    follow that rule (the lean decoder's step); elsewhere it changes nothing but the launch.

    The launch is planned once per (M, A's strides and alignment, options) and cached on ``weight``;
    replacing a weight's tensors in place needs ``weight.clear_plans()``.
    """
    a2 = a if a.dim() == 2 else a.reshape(-1, a.shape[-1])
    key = (a2.shape, a2.stride(), a2.data_ptr() % 16 == 0, a2.get_device(), a2.dtype)  # plan_key, inlined
    if config is not None or split_k is not None or deterministic or method != "auto" or pdl:
        key += (config, split_k, deterministic, method, pdl)
    plan = weight.plan_cache.get(key)
    if out is None and plan is not None and plan.hot is not None:
        result = plan.hot(a2)
        return result if a2 is a else result.reshape(*a.shape[:-1], plan.n)
    if plan is None:
        plan = _new_plan(a, a2, weight, key, split_k, config, deterministic, method, pdl)
        if plan is None:  # M = 0
            return out if out is not None else a.new_empty((*a.shape[:-1], weight.n))
    c = None if out is None else _output_rows(out, a, plan.m, plan.n)
    try:
        result = plan(a2, c, out_zeroed)
    except Replan:  # the warp-specialised kernel failed once: ws_prefill.supported() is False from now on
        plan = weight.plan_cache[key] = Plan(a2, weight, config, deterministic, method, pdl)
        result = plan(a2, c, out_zeroed)
    if out is not None:
        return out
    return result if a2 is a else result.reshape(*a.shape[:-1], plan.n)


def accumulates(a: Tensor, weight: GPTQWeight, *, split_k: int | None = None, config: GPTQConfig | None = None,
                deterministic: bool = False, method: str = "auto", pdl: bool | int = False) -> bool:
    """Whether ``gptq_matmul(a, weight, ...)`` with these options adds split-K shares into its output with
    atomics: the calls where ``out_zeroed=True`` saves a zero-fill. Plans the call (no launch)."""
    a2 = a if a.dim() == 2 else a.reshape(-1, a.shape[-1])
    key = plan_key(a2, split_k, config, deterministic, method, pdl)
    plan = weight.plan_cache.get(key)
    if plan is None:
        plan = _new_plan(a, a2, weight, key, split_k, config, deterministic, method, pdl)
    return plan is not None and plan.atomic


def plan_key(a2: Tensor, split_k: int | None, config: GPTQConfig | None, deterministic: bool,
             method: str, pdl: bool | int = False) -> tuple:
    """The key of a call's plan in ``GPTQWeight.plans``. Everything a plan depends on is in it, so a hit
    needs no further checks: Triton specialises on 16-byte alignment and on strides equal to 1, hence the
    strides and alignment. The options join the key only where one differs from its default (a shorter
    key to build; gptq_matmul builds it inline, the hottest line of a call)."""
    key = (a2.shape, a2.stride(), a2.data_ptr() % 16 == 0, a2.get_device(), a2.dtype)
    if config is not None or split_k is not None or deterministic or method != "auto" or pdl:
        key += (config, split_k, deterministic, method, pdl)
    return key


def _new_plan(a: Tensor, a2: Tensor, weight: GPTQWeight, key: tuple, split_k: int | None,
              config: GPTQConfig | None, deterministic: bool, method: str, pdl: bool | int = False) -> Plan | None:
    """Check the call's arguments and plan it (cached under ``key``); None for an empty A (M = 0)."""
    k = weight.k
    if a.shape[-1] != k:
        raise ValueError(f"a has {a.shape[-1]} columns, the weight has K={k} rows")
    if a.dtype != torch.float16:
        raise TypeError(f"a must be fp16, got {a.dtype}")
    if a.device != weight.scales.device:
        raise ValueError(f"a is on {a.device}, the weight on {weight.scales.device}")
    if method not in ("auto", "fused", "dequant", "ws"):
        raise ValueError(f"method must be 'auto', 'fused', 'dequant' or 'ws', got {method!r}")
    if a2.shape[0] == 0:
        return None
    cfg = config
    if split_k is not None:
        cfg = replace(cfg if cfg is not None else default_config(a2.shape[0], weight), split_k=split_k)
    plan = Plan(a2, weight, cfg, deterministic, method, pdl)
    weight.plan_cache[key] = plan
    return plan


def _output_rows(out: Tensor, a: Tensor, m: int, n: int) -> Tensor:
    """``out`` as the (M, N) matrix the kernels write, after checking that they can write it."""
    expected = (*a.shape[:-1], n)
    if tuple(out.shape) != expected:
        raise ValueError(f"out has shape {tuple(out.shape)}, the result is {expected}")
    if out.dtype != torch.float16 or out.device != a.device:
        raise ValueError(f"out must be fp16 on {a.device}, got {out.dtype} on {out.device}")
    # The kernels are compiled for a row-major C at a 16-byte-aligned address (Triton specialises on it).
    if not out.is_contiguous() or out.data_ptr() % 16:
        raise ValueError("out must be contiguous and 16-byte aligned (a fresh tensor, or an aligned slice of one)")
    return out.view(m, n)
