"""Launch plans of :func:`solutions.gptq.matmul.gptq_matmul`: which kernel a call runs, with what.

A plan is built once per call signature (M, A's strides and alignment, device, options) and kept on the
weight (``GPTQWeight.plans``). It picks the method (the fused Triton kernels of
:mod:`solutions.gptq.kernels`, dequantize-then-cuBLAS, or on Hopper GPUs the warp-specialised Gluon
kernel of :mod:`solutions.gptq.ws_prefill` where ``configs.ws_tile`` says it measured faster), the config,
the grid and every argument but A and C, and launches through :class:`solutions.gptq.launch.Launch`.
Once compiled, the common calls go through ``Plan.hot``, a closure doing only the allocation, the
zero-fill (split-K) and the launch.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import triton
from torch import Tensor
from triton.runtime import driver

from solutions.gptq import ws_prefill
from solutions.gptq.configs import GPTQConfig, WSTile, select_config, select_method, ws_tile
from solutions.gptq.kernels import (
    dequant_to_fp16_kernel,
    gptq_large_m_kernel,
    gptq_small_m_kernel,
    splitk_reduce_kernel,
)
from solutions.gptq.launch import Launch, driver_memset
from solutions.gptq.loader import GPTQWeight
from solutions.gptq.pdl import launch_options, pdl_available, pdl_flags

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # a Triton without host-side descriptors: A is read with pointers
    TensorDescriptor = None


def plan_split_k(k: int, block_k: int, split_k: int) -> tuple[int, int]:
    """(k_per_split, splits): shares of K in whole BLOCK_K steps, at most ``split_k`` of them, none empty."""
    steps = triton.cdiv(k, block_k)
    steps_per_split = triton.cdiv(steps, max(1, min(split_k, steps)))
    k_per_split = steps_per_split * block_k
    return k_per_split, triton.cdiv(k, k_per_split)


DEQUANT_CHUNK_BYTES = 256 * 2**20  # the fp16 temporary holds at most this many bytes of W at a time


def use_dequant(m: int, weight: GPTQWeight) -> bool:
    """Whether ``method="auto"`` dequantizes W and calls cuBLAS for this M (:func:`solutions.gptq.configs.
    select_method`: measured per tuned shape, a rule derived from those measurements elsewhere)."""
    return select_method(m, weight.k, weight.n) == "dequant"


def default_config(m: int, weight: GPTQWeight) -> GPTQConfig:
    """The tuned or heuristic config for this M and weight (:func:`solutions.gptq.configs.select_config`),
    moved to BLOCK_K = BLOCK_N = 128 on the swapped kernel where only the repacked copy is left."""
    cfg = select_config(m, weight.k, weight.n, weight.group_size)
    if weight.qweight is None and not (cfg.swap_ab and cfg.block_k == 128 and 128 % cfg.block_n == 0):
        cfg = replace(cfg, block_k=128, block_n=128, swap_ab=True)
    return cfg


_new_empty, _new_zeros = Tensor.new_empty, Tensor.new_zeros


def use_tma_a(cfg: GPTQConfig, a2: Tensor, has_a_perm: bool) -> bool:
    """Whether the swapped kernel reads A through a TMA descriptor (``cfg.tma_a``, where it can).

    The copy engine needs a row-major A with 16-byte-aligned base and row stride, and a GPU of compute
    capability 9.0 or later (the interpreter runs descriptors too). BLOCK_M >= 256 with 3+ stages is
    refused: on Triton 3.6 (H100) those tiles computed garbage with descriptors, with 2 stages or
    BLOCK_M = 128 they were right (seen 2026-11-23, cause not established; NOTES.md, "TMA for A").
    """
    if not cfg.tma_a or has_a_perm or (cfg.block_m >= 256 and cfg.num_stages >= 3):
        return False
    if a2.stride(1) != 1 or a2.data_ptr() % 16 or (a2.stride(0) * a2.element_size()) % 16:
        return False
    if a2.is_cuda and torch.cuda.get_device_capability(a2.device)[0] < 9:
        return False
    return TensorDescriptor is not None  # None: a Triton without host-side descriptors


def _a_descriptor(block_m: int, block_k: int):
    """A function making the TMA descriptor of A (M, K) with block (block_m, block_k), once per call
    (the descriptor holds A's address)."""
    block = [block_m, block_k]

    def make(a2: Tensor):
        return TensorDescriptor(a2, a2.shape, a2.stride(), block)
    return make


class Replan(Exception):
    """Raised by a plan whose kernel turned out to be unavailable: plan the call again."""


def ws_choice(a2: Tensor, weight: GPTQWeight, explicit: bool) -> WSTile | None:
    """The warp-specialised prefill kernel's WSTile for this call (configs.ws_tile), or None
    where it cannot run or measured slower. ``explicit``: asked for by name, so any M gets a tile."""
    return ws_tile(a2.shape[0], weight.k, weight.n, explicit) if ws_prefill.supported(a2, weight) else None


class Plan:
    """Everything a call of :func:`gptq_matmul` needs besides A (see :mod:`solutions.gptq.launch`).

    ``hot`` is set once the kernel is compiled, for the common fused call without deterministic
    split-K: a closure doing only the allocation, the zero-fill (split-K) and the launch.
    """

    def __init__(self, a2: Tensor, weight: GPTQWeight, cfg: GPTQConfig | None, deterministic: bool,
                 method: str, pdl: bool | int = False) -> None:
        m, k = a2.shape
        n = weight.n
        self.m, self.n, self.mn, self.bias = m, n, (m, n), weight.bias
        self.hot = None
        has_g_idx = weight.g_idx is not None
        w_mma_ok = (weight.qweight_mma is not None and not has_g_idx
                    and (weight.group_size % 32 == 0 or weight.group_size >= k))
        self.requested = method
        tile = ws_choice(a2, weight, explicit=method == "ws") if method in ("auto", "ws") and cfg is None \
            else None
        if method == "ws" and tile is None:
            raise ValueError("method='ws' needs a Hopper GPU, Gluon, the repacked weights, K and N multiples of "
                             "128, one group per 128 rows of K, no act-order permutation, and no config")
        if method == "auto":
            method = "ws" if tile else (
                "dequant" if (cfg is None and a2.is_cuda and use_dequant(m, weight)) else "fused")
        self.method = method
        self.launches: list[Launch] = []
        self.atomic = self.partial = self.bias_init = False
        self.a_arg = Tensor.data_ptr  # what the launch gets for A: its address, or a TMA descriptor
        self.stream_k_programs = None  # the ws kernel's scratch (argument 5): its programs with stream-K, else 0
        self.pdl = 0  # PDL flags of the launch (solutions.gptq.pdl; the fused small-M kernel only, where available)
        g = weight.group_size
        if method == "dequant":
            self._plan_dequant(weight, k, n, w_mma_ok)
            return
        if method == "ws":
            kernel, grid, args, options, self.a_arg = ws_prefill.launch_spec(m, weight, *tile)
            self.launches.append(Launch(kernel, grid, args, {}, options))
            self.c_index, self.splits = 4, 1
            self.stream_k_programs = grid[0] if tile.stream_k else 0
            return
        if cfg is None:
            cfg = default_config(m, weight)
        if cfg.block_k % 32 or cfg.block_m < 16 or cfg.block_n < 16:
            raise ValueError("block_k must be a multiple of 32; block_m and block_n at least 16 (tl.dot)")
        k_per_split, splits = plan_split_k(k, cfg.block_k, cfg.split_k)
        self.splits = splits
        scales = weight.scales if weight.scales.stride(1) == 1 else weight.scales.contiguous()
        # Split-K without determinism adds the shares into a zeroed C with atomics; deterministic
        # split-K stores fp32 shares that a second kernel sums in order; one share stores C directly.
        self.atomic = splits > 1 and not deterministic
        self.partial = splits > 1 and deterministic
        # With atomics, C can start as the bias instead of zeros: one kernel instead of a fill and an add.
        self.bias_init = (self.atomic and weight.bias is not None and weight.bias.dtype == torch.float16
                          and tuple(weight.bias.shape) == (n,))
        if self.partial:
            stride_cs, stride_cm, stride_cn = m * n, n, 1
        else:
            stride_cs, stride_cm, stride_cn = 0, n, 1

        unused = weight.scales  # pointers that a constexpr flag leaves unread still need a tensor
        scales32 = scales.view(torch.int32)  # (K / G, N / 2): two fp16 scales per word
        one_group_per_step = g % cfg.block_k == 0 or g >= k
        swap_ab = cfg.swap_ab or has_g_idx
        flags = dict(
            ZERO_OFFSET=weight.zero_offset,
            HAS_A_PERM=weight.a_perm is not None,
            ONE_GROUP_PER_STEP=one_group_per_step,
            # Scaling the MMA result costs BLOCK_M x BLOCK_N multiplies a step, scaling the weights
            # BLOCK_K x BLOCK_N / 2 (half2): by default the cheaper, where the step has one group.
            SCALE_AFTER_DOT=one_group_per_step and not has_g_idx and (
                cfg.scale_after_dot if cfg.scale_after_dot is not None else 2 * cfg.block_m <= cfg.block_k),
            PTX_DEQUANT=cfg.ptx_dequant and a2.is_cuda and not has_g_idx,
            ATOMIC_OUT=self.atomic,
            EVEN_K=k % cfg.block_k == 0,
            EVEN_N=n % cfg.block_n == 0,
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m, GROUP_SIZE=g,
        )
        options = dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        if cfg.maxnreg is not None and a2.is_cuda:
            options["maxnreg"] = cfg.maxnreg
        grid = (triton.cdiv(m, cfg.block_m) * triton.cdiv(n, cfg.block_n), splits)
        a_perm = weight.a_perm if weight.a_perm is not None else unused
        if swap_ab:
            # The repacked copy comes in blocks of 128 columns x 128 rows of K (BLOCK_K = 128), and each
            # of its words holds rows from 32 consecutive rows of K: one group only if 32 divides G.
            w_mma = w_mma_ok and cfg.block_k == 128 and (128 % cfg.block_n == 0 or cfg.block_n % 128 == 0)
            if not w_mma and weight.qweight is None:
                raise ValueError(f"{cfg} cannot read the repacked weights (BLOCK_K = 128 needed) and the plain "
                                 "qweight was dropped at load time (load_gptq_layer(..., keep_plain=True))")
            qw = weight.qweight_mma if w_mma else weight.qweight
            stride_qk, stride_qn = (128, qw.stride(0)) if w_mma else (qw.stride(0), qw.stride(1))
            args = [None, qw, scales32, scales, weight.qzeros, weight.g_idx if has_g_idx else unused, a_perm, None,
                    m, n, k, k_per_split, a2.stride(0), a2.stride(1), stride_qk, stride_qn,
                    scales.stride(0), scales.stride(1), scales32.stride(0),
                    weight.qzeros.stride(0), weight.qzeros.stride(1), stride_cs, stride_cm, stride_cn]
            # 8 warps: load the words in wgmma's row order (see kernels._mma_row_order); 4 warps need no help.
            load_warps = 8 if w_mma and cfg.num_warps == 8 and cfg.block_n % 128 == 0 else 0
            a_desc = use_tma_a(cfg, a2, weight.a_perm is not None)
            if a_desc:
                self.a_arg = _a_descriptor(cfg.block_m, cfg.block_k)
            self.pdl = pdl_flags(pdl) if pdl and pdl_available(a2.device) else 0
            kwargs = dict(HAS_G_IDX=has_g_idx, W_MMA=w_mma, LOAD_WARPS=load_warps, A_DESC=a_desc, PDL=self.pdl,
                          **flags)
            self.launches.append(Launch(gptq_small_m_kernel, grid, args, kwargs, {**options,
                                                                                 **launch_options(self.pdl)}))
            self.c_index = 7
        else:
            if weight.qweight is None:
                raise ValueError("swap_ab=False reads the plain qweight, which was dropped at load time "
                                 "(load_gptq_layer(..., keep_plain=True) keeps it)")
            qw = weight.qweight
            args = [None, qw, scales32, weight.qzeros, a_perm, None, m, n, k, k_per_split,
                    a2.stride(0), a2.stride(1), qw.stride(0), qw.stride(1), scales32.stride(0),
                    weight.qzeros.stride(0), weight.qzeros.stride(1), stride_cs, stride_cm, stride_cn]
            self.launches.append(Launch(gptq_large_m_kernel, grid, args, flags, options))
            self.c_index = 5
        if self.partial:
            block = 1024
            self.reduce = Launch(splitk_reduce_kernel, (triton.cdiv(m * n, block),), [None, None, m * n],
                                 dict(SPLIT_K=splits, BLOCK=block), {})

    def _plan_dequant(self, weight: GPTQWeight, k: int, n: int, w_mma: bool) -> None:
        """Dequantize W into an fp16 temporary, a chunk of columns at a time, and multiply with cuBLAS."""
        if not w_mma and weight.qweight is None:
            raise ValueError("the dequantize path needs the plain qweight or the repacked copy")
        block_n = 128
        chunk = max(block_n, DEQUANT_CHUNK_BYTES // (2 * k) // block_n * block_n)
        self.chunks = [(n0, min(n0 + chunk, n)) for n0 in range(0, n, chunk)]
        self.temp_cols = min(chunk, n)
        qw = weight.qweight_mma if w_mma else weight.qweight
        stride_qk, stride_qn = (0, qw.stride(0)) if w_mma else (qw.stride(0), qw.stride(1))
        unused = weight.scales
        for n0, n_end in self.chunks:
            args = [qw, weight.qzeros, weight.scales, weight.g_idx if weight.g_idx is not None else unused,
                    weight.a_perm if weight.a_perm is not None else unused, None, k, n, n0, n_end,
                    stride_qk, stride_qn, weight.qzeros.stride(0), weight.qzeros.stride(1),
                    weight.scales.stride(0), weight.scales.stride(1), self.temp_cols, 1]
            flags = dict(ZERO_OFFSET=weight.zero_offset, HAS_G_IDX=weight.g_idx is not None,
                         HAS_A_PERM=weight.a_perm is not None, W_MMA=w_mma, GROUP_SIZE=weight.group_size,
                         BLOCK_N=block_n)
            grid = (triton.cdiv(k, 128), triton.cdiv(n_end - n0, block_n))
            self.launches.append(Launch(dequant_to_fp16_kernel, grid, args, flags, dict(num_warps=4)))

    def __call__(self, a2: Tensor, out: Tensor | None = None, out_zeroed: bool = False) -> Tensor:
        """C = A W into ``out`` (M, N) when given (holding zeros if ``out_zeroed``), else a new tensor."""
        mn = self.mn
        if self.method == "dequant":
            out = a2.new_empty(mn) if out is None else out
            temp = a2.new_empty((a2.shape[1], self.temp_cols))
            for (n0, n_end), launch in zip(self.chunks, self.launches, strict=True):
                w = temp if n_end - n0 == self.temp_cols else temp[:, : n_end - n0]
                launch((5, w))
                torch.mm(a2, w, out=out[:, n0:n_end])
            if self.bias is not None:
                out += self.bias
            return out
        launch = self.launches[0]
        first = launch.fast is None
        add_bias = self.bias is not None
        if self.atomic:
            # The split-K shares are added into C: zeroed, or holding the bias (no add afterwards).
            # Calls without ``out`` and with a hot closure do not get here; that closure zeroes C by a
            # driver memset. A given C that holds zeros takes the shares as it is (the bias added after).
            if out is not None and out_zeroed:
                c = out
            elif self.bias_init:
                add_bias = False
                if out is None:
                    out = c = self.bias.expand(mn).contiguous()
                else:
                    out = c = out.copy_(self.bias.expand(mn))
            else:
                out = c = a2.new_zeros(mn) if out is None else out.zero_()
        elif self.partial:
            out = a2.new_empty(mn) if out is None else out
            c = a2.new_empty((self.splits, *mn), dtype=torch.float32)
        else:
            out = c = a2.new_empty(mn) if out is None else out
        dynamic = [(0, a2 if self.a_arg is Tensor.data_ptr else self.a_arg(a2)), (self.c_index, c)]
        if self.stream_k_programs is not None:
            dynamic.append((5, ws_prefill.scratch_arg(c, self.stream_k_programs)))
        try:
            launch(*dynamic)
        except Exception as error:
            if not (first and self.method == "ws" and self.requested == "auto"):
                raise
            # The Gluon kernel did not compile or launch here (another Triton's Gluon API, say): warn
            # once, and gptq_matmul plans this call again without it.
            ws_prefill.mark_unavailable(error)
            raise Replan from error
        if self.partial:
            self.reduce((0, c), (1, out))
        if add_bias:
            out += self.bias
        if first and launch.fast is not None and not self.partial:
            self.hot = self._make_hot(launch)
        return out

    def _make_hot(self, launch: Launch):
        """The call of a compiled plan (fused kernel, one share or atomic split-K), as one closure."""
        fast, mn, bias, a_arg = launch.fast, self.mn, self.bias, self.a_arg
        get_stream, device = driver.active.get_current_stream, launch.device
        if self.stream_k_programs is not None:
            scratch_arg = ws_prefill.scratch_arg
            programs = self.stream_k_programs

            def hot_ws(a2: Tensor) -> Tensor:
                c = _new_empty(a2, mn)
                stream = get_stream(device)
                fast(stream, a_arg(a2), c.data_ptr(), scratch_arg(c, programs, stream))
                if bias is not None:
                    c += bias
                return c
            return hot_ws
        if not self.atomic or (bias is not None and not self.bias_init):
            zero = _new_zeros if self.atomic else _new_empty

            def hot(a2: Tensor) -> Tensor:
                c = zero(a2, mn)
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                if bias is not None:
                    c += bias
                return c
            return hot
        if bias is not None:
            def hot_bias(a2: Tensor) -> Tensor:
                c = bias.expand(mn).contiguous()  # the shares are added to the bias
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                return c
            return hot_bias
        d32 = driver_memset()
        words = self.m * self.n // 2  # N is a multiple of 8: the fp16 C is a whole number of 32-bit words
        if d32 is None or self.m * self.n % 2:
            def hot_zeroed(a2: Tensor) -> Tensor:
                c = a2.new_zeros(mn)
                fast(get_stream(device), a_arg(a2), c.data_ptr())
                return c
            return hot_zeroed

        capturing = torch.cuda.is_current_stream_capturing

        def hot_memset(a2: Tensor) -> Tensor:
            c = a2.new_empty(mn)
            ptr = c.data_ptr()
            stream = get_stream(device)
            # A nonzero status (e.g. no CUDA context on this thread yet): torch zeroes C instead.
            if capturing() or d32(ptr, 0, words, stream):
                c.zero_()
            fast(stream, a_arg(a2), ptr)
            return c
        return hot_memset

