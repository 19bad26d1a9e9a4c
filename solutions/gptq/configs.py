"""Launch configs for :func:`solutions.gptq.matmul.gptq_matmul`, chosen offline so a run needs no tuning.

``TUNED`` maps (M bucket, K, N) to the config that measured fastest on an NVIDIA H100 (see
``benchmarks/gptq/tune.py`` and ``benchmarks/gptq/results/``), ``DECODE_TUNED`` likewise for shapes
tuned at decode sizes only (the lean decoder's fused projections). Shapes outside the table get a
heuristic from the same measurements: the M bucket picks the tile, split-K fills the SMs.
``DEQUANT_FROM`` and :func:`select_method` choose, per shape and M, between the fused kernel and
dequantize-then-cuBLAS (prefill sizes), from the same tuning runs. On Hopper GPUs prefill sizes go to
the warp-specialised kernel first: ``WS_TILES`` / :func:`ws_tile` give its tile, or None where the
other methods measured faster. ``DEVICE_TABLES`` holds per-GPU overrides of these (H100-tuned) tables,
chosen by the CUDA device's name (the H200's prefill rows that fell under 0.9x cuBLAS with them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import torch
import triton


@dataclass(frozen=True)
class GPTQConfig:
    """Launch parameters of :func:`solutions.gptq.matmul.gptq_matmul`. ``split_k`` is an upper bound (see
    :func:`solutions.gptq.plans.plan_split_k`).

    ``ptx_dequant`` selects the inline-PTX dequantization on GPU; it is ignored (plain Triton) under
    the interpreter and when the weight has a general g_idx. ``swap_ab`` picks the kernel: True
    computes C^T = W^T A^T with the weights as wgmma's register operand (every tuned config, M = 1
    to 4096); False computes C = A W with the dequantized weights staged in shared memory, a weight
    tile reused by BLOCK_M rows of A (needs the plain qweight). A general g_idx always uses the
    swapped kernel. With ``num_warps=8`` and BLOCK_N a multiple of 128 on the repacked weights, the
    swapped kernel loads the words in wgmma's row order (``kernels._mma_row_order``). ``tma_a`` (swapped
    kernel, row-major 16-byte-aligned A, no a_perm; a CUDA GPU of compute capability 9.0+ or the
    interpreter) loads A through a TMA descriptor; elsewhere, and for BLOCK_M >= 256 with 3 or more
    stages (wrong results on Triton 3.6, see plans.use_tma_a), A is read with pointers as usual.
    """

    block_m: int = 16
    block_n: int = 128
    block_k: int = 128
    group_m: int = 8
    split_k: int = 4
    num_warps: int = 4
    num_stages: int = 3
    ptx_dequant: bool = True
    swap_ab: bool = True
    maxnreg: int | None = None  # cap on registers per thread (more resident programs per SM)
    # Scale the fp32 MMA result of a step instead of the weights (only where a step lies in one
    # group). None: when that is fewer multiplies (2 BLOCK_M <= BLOCK_K). Scaling the result needs
    # the MMA finished before the multiply, and a second accumulator's worth of registers.
    scale_after_dot: bool | None = None
    # Read A's tiles with the TMA engine (Hopper and later; see plans.use_tma_a): one bulk copy per stage
    # instead of per-thread address and mask arithmetic, which frees registers and issue slots for the
    # dequantization. Measured faster only for some prefill tiles, so the tuned table turns it on per entry.
    tma_a: bool = False


T = TypeVar("T")
SMALL_M_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
LARGE_M_BUCKETS = (256, 512, 1024, 2048, 4096)  # prefill; larger M takes the 4096 entry
M_BUCKETS = SMALL_M_BUCKETS + LARGE_M_BUCKETS


def _cfg(block_m: int, block_n: int, block_k: int, split_k: int, num_warps: int, num_stages: int,
         swap_ab: bool = True, maxnreg: int | None = None, group_m: int = 8,
         scale_after_dot: bool | None = None, tma_a: bool = False) -> GPTQConfig:
    return GPTQConfig(block_m=block_m, block_n=block_n, block_k=block_k, group_m=group_m, split_k=split_k,
                      num_warps=num_warps, num_stages=num_stages, swap_ab=swap_ab, maxnreg=maxnreg,
                      scale_after_dot=scale_after_dot, tma_a=tma_a)


def _buckets(k: int, n: int, *configs: GPTQConfig) -> dict[tuple[int, int, int], GPTQConfig]:
    """The entries of one (K, N): the config tuned at M = 1 serves the buckets 1..8, then 16, 32, 64, 128."""
    return dict(zip([(m, k, n) for m in SMALL_M_BUCKETS], configs[:1] * 3 + configs, strict=True))


def _decode(k: int, n: int, config: GPTQConfig) -> dict[tuple[int, int, int], GPTQConfig]:
    """The entries of a (K, N) tuned for decoding only: the config tuned at M = 1 for the buckets 1..8."""
    return {(m, k, n): config for m in SMALL_M_BUCKETS if m <= 8}


def _large(k: int, n: int, *entries: T) -> dict[tuple[int, int, int], T]:
    """The prefill entries of one (K, N) (configs, or ws tiles): one per bucket of LARGE_M_BUCKETS, in order."""
    return dict(zip([(m, k, n) for m in LARGE_M_BUCKETS], entries, strict=True))


# (M bucket, K, N) -> config: the winners of benchmarks/gptq/tune.py on an NVIDIA H100 80GB HBM3,
# triton 3.6.0, G = 128, after the repacking in natural K order (results/h100_natural_tune/best.json;
# earlier rounds in results/). The comment is the tuner's median time per call (CUDA-graph replays) at
# the M it was tuned at: M = 1 stands for the buckets 1..8 (BLOCK_M = 16 serves them all).
# _cfg(block_m, block_n, block_k, split_k, num_warps, num_stages, ...). Every entry is the swapped kernel
# on the repacked weights (BLOCK_K = 128); the prefill buckets (M >= 256) follow the M <= 128 ones.
TUNED: dict[tuple[int, int, int], GPTQConfig] = {
    **_buckets(4096, 4096,
               _cfg(16, 128, 128, 16, 4, 2, maxnreg=128),  # 7.7 us (M=1)
               _cfg(16, 128, 128, 16, 4, 2, maxnreg=128),  # 8.0 us (M=16)
               _cfg(32, 128, 128, 8, 4, 3),  # 8.6 us (M=32)
               _cfg(64, 128, 128, 8, 4, 3),  # 10.0 us (M=64)
               _cfg(64, 128, 128, 4, 4, 3)),  # 13.1 us (M=128)
    **_buckets(4096, 11008,
               _cfg(16, 128, 128, 6, 4, 3, maxnreg=128),  # 13.2 us (M=1)
               _cfg(16, 128, 128, 4, 4, 3, maxnreg=128),  # 13.3 us (M=16)
               _cfg(32, 128, 128, 4, 4, 3, scale_after_dot=False),  # 16.2 us (M=32)
               _cfg(64, 128, 128, 4, 4, 3, scale_after_dot=False),  # 19.1 us (M=64)
               _cfg(64, 128, 128, 2, 4, 3, scale_after_dot=False)),  # 31.7 us (M=128)
    **_buckets(8192, 28672,
               _cfg(16, 128, 128, 12, 4, 3, maxnreg=128),  # 46.6 us (M=1)
               _cfg(16, 128, 128, 12, 4, 3, maxnreg=128),  # 47.5 us (M=16)
               _cfg(32, 128, 128, 1, 4, 3),  # 53.9 us (M=32)
               _cfg(64, 128, 128, 2, 4, 3),  # 70.6 us (M=64)
               _cfg(64, 128, 128, 4, 4, 3)),  # 132.1 us (M=128)
    **_buckets(11008, 4096,
               _cfg(16, 128, 128, 16, 4, 3, maxnreg=128),  # 13.1 us (M=1)
               _cfg(16, 128, 128, 16, 4, 3, maxnreg=128),  # 13.3 us (M=16)
               _cfg(32, 128, 128, 8, 4, 3),  # 14.4 us (M=32)
               _cfg(64, 128, 128, 8, 4, 3),  # 16.4 us (M=64)
               _cfg(64, 128, 128, 4, 4, 3)),  # 26.2 us (M=128)
    **_buckets(28672, 8192,
               _cfg(16, 128, 128, 8, 4, 3, maxnreg=128),  # 45.6 us (M=1)
               _cfg(16, 128, 128, 8, 4, 3, maxnreg=128),  # 46.8 us (M=16)
               _cfg(32, 128, 128, 4, 4, 3),  # 51.5 us (M=32)
               _cfg(64, 128, 128, 4, 4, 3),  # 62.5 us (M=64)
               _cfg(64, 128, 128, 2, 4, 3)),  # 116.5 us (M=128)
    # Prefill buckets (results/h100_prefill/tune): the swapped kernel with 8 warps (two warpgroups of 64
    # columns each, words loaded in wgmma's row order) and 128 x 128 weight tiles. Comment: the tuner's
    # median at that M, cuBLAS fp16 and dequantize-then-cuBLAS in the same run (see DEQUANT_FROM).
    # tma_a=True entries: A read by the TMA engine, chosen where it won by 5% or more in the interleaved
    # A/B of results/h100_tma/ab_tma.md (the comment gives that run's medians instead).
    **_large(4096, 4096,
             _cfg(256, 128, 128, 4, 8, 3),  # 19.8 us (M=256; cuBLAS 18.5, dequant 35.1)
             _cfg(128, 128, 128, 1, 8, 3, tma_a=True),  # 30.7 us (M=512; cuBLAS 27.9, pointer loads 34.8)
             _cfg(256, 128, 128, 1, 8, 3),  # 55.7 us (M=1024; cuBLAS 46.5, dequant 62.5)
             _cfg(256, 128, 128, 1, 8, 3),  # 113.6 us (M=2048; cuBLAS 95.1, dequant 116.2)
             _cfg(256, 128, 128, 1, 8, 3)),  # 260.2 us (M=4096; cuBLAS 196.6, dequant 242.3)
    **_large(4096, 11008,
             _cfg(256, 128, 128, 1, 8, 3),  # 52.8 us (M=256; cuBLAS 39.5, dequant 87.1)
             _cfg(128, 128, 128, 1, 8, 3, tma_a=True),  # 92.5 us (M=512; cuBLAS 85.3, pointer loads 100.4)
             _cfg(256, 128, 128, 1, 8, 3),  # 165.5 us (M=1024; cuBLAS 136.1, dequant 191.1)
             _cfg(256, 128, 128, 1, 8, 3),  # 337.1 us (M=2048; cuBLAS 286.2, dequant 349.3)
             _cfg(256, 128, 128, 1, 8, 3)),  # 721.9 us (M=4096; cuBLAS 614.4, dequant 661.1)
    **_large(8192, 28672,
             _cfg(256, 128, 128, 1, 8, 3),  # 218.7 us (M=256; cuBLAS 191.3, dequant 404.9)
             _cfg(256, 128, 128, 1, 8, 3),  # 467.1 us (M=512; cuBLAS 376.2, dequant 575.0)
             _cfg(256, 128, 128, 1, 8, 3),  # 883.1 us (M=1024; cuBLAS 732.3, dequant 928.8)
             _cfg(256, 128, 128, 1, 8, 3),  # 1693.3 us (M=2048; cuBLAS 1463.1, dequant 1633.1)
             _cfg(256, 128, 128, 1, 8, 3)),  # 3546.5 us (M=4096; cuBLAS 2952.7, dequant 3053.1)
    **_large(11008, 4096,
             _cfg(256, 128, 128, 4, 8, 3),  # 40.8 us (M=256; cuBLAS 45.3, dequant 91.0)
             _cfg(256, 128, 128, 2, 8, 3),  # 74.0 us (M=512; cuBLAS 65.1, dequant 111.2)
             _cfg(256, 128, 128, 1, 8, 3),  # 141.8 us (M=1024; cuBLAS 121.6, dequant 174.5)
             _cfg(128, 256, 128, 1, 8, 4, tma_a=True),  # 317.0 us (M=2048; cuBLAS 282.6, 128x128 pointers 350.2)
             _cfg(256, 128, 128, 1, 8, 3)),  # 669.4 us (M=4096; cuBLAS 590.6, dequant 558.0)
    **_large(28672, 8192,
             _cfg(256, 128, 128, 2, 8, 3),  # 185.5 us (M=256; cuBLAS 182.5, dequant 440.6)
             _cfg(256, 128, 128, 1, 8, 3),  # 402.6 us (M=512; cuBLAS 369.6, dequant 597.3)
             _cfg(256, 128, 128, 1, 8, 3),  # 846.3 us (M=1024; cuBLAS 746.4, dequant 946.8)
             _cfg(256, 128, 128, 1, 8, 3),  # 1641.8 us (M=2048; cuBLAS 1473.6, dequant 1606.6)
             _cfg(256, 128, 128, 1, 8, 3)),  # 3347.9 us (M=4096; cuBLAS 2903.9, dequant 3248.0)
}


# (M bucket, K, N) -> config for shapes tuned only at decode sizes (M = 1 standing for the buckets 1..8;
# larger M take the heuristic): the fused q/k/v and gate/up projections of the lean decoder
# (solutions/gptq/decode.py) on a Llama-7B-shaped model. Timed as the decoder calls them, into an output
# taken as zeroed (tune.py --zeroed-out, results/h100_lean_decode2/tune_fused); the comment gives that
# time and the heuristic config's in the same run. Same kernel and tile as the M = 1 entries above, the
# split chosen for about 4 programs per SM (480 and 516 programs).
DECODE_TUNED: dict[tuple[int, int, int], GPTQConfig] = {
    **_decode(4096, 12288, _cfg(16, 128, 128, 5, 4, 3, maxnreg=128)),  # 12.4 us (heuristic: 12.7)
    **_decode(4096, 22016, _cfg(16, 128, 128, 3, 4, 3, maxnreg=128)),  # 19.4 us (heuristic: 20.1)
}


# The configuration of the published split-K GPTQ kernel (BLOCK 16 x 32 x 128, GROUP_M 8, SPLIT_K 4,
# interleaved shares of K added by fp16 atomics) as a config of the unswapped kernel, which like the
# original stages the dequantized W tile in shared memory: the baseline of benchmarks/gptq/bench.py's
# "published" column. No tuned entry uses it; it reads the plain qweight (load_gptq_layer(...,
# keep_plain=True)).
PUBLISHED_SPLIT_K = GPTQConfig(block_m=16, block_n=32, block_k=128, group_m=8, split_k=4, num_warps=4, num_stages=3,
                               swap_ab=False)

# Prefill (M >= 256) for shapes outside TUNED: (BLOCK_M, num_stages) of the swapped kernel with 8 warps
# and BLOCK_N = 128 (heuristic_config), by M bucket. 256 x 128 with 3 stages won 22 of the 25 tuned
# (M, shape) keys; 2 stages lost to 3 in all 71 pairs (by 2-60%), and 4 stages only fit BLOCK_M = 128.
LARGE_M_TILE: dict[int, tuple[int, int]] = {m: (256, 3) for m in LARGE_M_BUCKETS}

# (K, N) -> the smallest M bucket from which dequantize-then-cuBLAS measured faster than the fused
# kernel (None: never, up to 4096), from the same tuning run (the comments in TUNED). Dequantizing costs
# about K N 2.5 bytes of memory traffic whatever M is, so it only pays where the GEMM is long enough.
DEQUANT_FROM: dict[tuple[int, int], int | None] = {
    (4096, 4096): 4096,  # M = 2048: fused 113.6 us, dequant 116.2
    (4096, 11008): 4096,  # M = 2048: fused 337.1, dequant 349.3
    (8192, 28672): 2048,
    (11008, 4096): 2048,
    (28672, 8192): 2048,
}
# Other shapes: dequantize from this M bucket on (None: never). At M = 2048 dequant won on three of the
# five tuned shapes (by 2-10%) and lost on two (by 2-4%); at 4096 it won on all five, at 1024 on none.
DEQUANT_RULE_MIN_M: int | None = 2048


def m_bucket(m: int) -> int:
    """The smallest bucket >= m (the largest bucket for anything larger)."""
    for b in M_BUCKETS:
        if m <= b:
            return b
    return M_BUCKETS[-1]


def _sm_count() -> int:
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return 132  # H100 SXM; only shapes the grid in the interpreter


def _block_k_for(k: int, group_size: int) -> int:
    """The largest BLOCK_K in (128, 64, 32) whose steps each lie in one group (G = K: any)."""
    for block_k in (128, 64, 32):
        if group_size % block_k == 0 or group_size >= k:
            return block_k
    return 32  # G = 8, 16, 24...: one group per word, still correct


def heuristic_config(m: int, k: int, n: int, group_size: int = 128) -> GPTQConfig:
    """A config for any shape: a tile by M bucket, then split-K until about 4 programs per SM
    (prefill tiles: about one per SM, the most that fit)."""
    bucket = m_bucket(m)
    block_k = _block_k_for(k, group_size)
    if bucket in LARGE_M_BUCKETS:
        return _large_m_heuristic(m, k, n, block_k)
    # Swapped kernel: weights in wgmma's register operand. Up to 64 rows of A per tile (the measured
    # winners at every M up to 128); from M = 64 on, scaling the weights keeps the MMA asynchronous.
    block_m = min(64, max(16, bucket))
    cfg = GPTQConfig(block_m=block_m, block_n=128, block_k=block_k, num_warps=4, num_stages=3,
                     scale_after_dot=False if bucket >= 64 else None)
    tiles = triton.cdiv(m, cfg.block_m) * triton.cdiv(n, cfg.block_n)
    target = 4 * _sm_count()
    split = 1
    while tiles * split * 2 <= target and k // (split * 2) >= 4 * cfg.block_k:
        split *= 2
    return GPTQConfig(**{**cfg.__dict__, "split_k": split})


def _large_m_heuristic(m: int, k: int, n: int, block_k: int) -> GPTQConfig:
    """Prefill: the swapped kernel with 8 warps and 128 columns, the measured winners' BLOCK_M and stages."""
    block_m, stages = LARGE_M_TILE[m_bucket(m)]
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, 128)
    split = 1
    while tiles * split * 2 <= _sm_count() and k // (split * 2) >= 8 * block_k:
        split *= 2
    return GPTQConfig(block_m=block_m, block_n=128, block_k=block_k, split_k=split, num_warps=8,
                      num_stages=stages)


class WSTile(NamedTuple):
    """A launch of the warp-specialised prefill kernel: rows per tile, ring stages, and whether the
    programs are one per SM sharing the K steps out evenly (stream-K) instead of one per tile."""

    block_m: int
    stages: int
    stream_k: bool = False


_SK = True  # stream-K, in the table below
# Prefill on Hopper: the warp-specialised Gluon kernel (solutions/gptq/ws_prefill.py), a WSTile per
# (M bucket, K, N): the fastest of results/h100_ws/ (two runs at M = 512-2048, one at 256 and 4096)
# and, for stream-K, results/h100_streamk/ (methods taking turns, medians). Stream-K won where the
# tiles fill the SMs unevenly and K is short enough that A stays in the L2 (M = 512 on 4096 x 11008
# and 8192 x 28672: 0.96-0.99x cuBLAS instead of 0.88-0.96x); with K = 28672 it lost (its programs
# read different K slices at once). None: the Triton kernel or the dequant path was faster (M = 256 on
# 4096^2 and 11008 x 4096, where 32 column tiles leave most SMs idle without split-K; 28672 x 8192 tied).
WS_TILES: dict[tuple[int, int, int], WSTile | None] = {
    **_large(4096, 4096, None, WSTile(128, 4), WSTile(256, 2), WSTile(256, 3), WSTile(256, 3)),
    **_large(4096, 11008, WSTile(256, 3), WSTile(256, 3, _SK), WSTile(256, 2), WSTile(256, 2, _SK),
             WSTile(256, 2, _SK)),
    **_large(11008, 4096, None, WSTile(128, 4), WSTile(256, 2), WSTile(256, 3), WSTile(256, 3)),
    **_large(8192, 28672, WSTile(256, 3), WSTile(256, 3, _SK), WSTile(256, 3), WSTile(256, 3), WSTile(256, 3)),
    **_large(28672, 8192, None, WSTile(256, 2), WSTile(256, 3), WSTile(256, 3), WSTile(256, 3)),
}
# Other shapes: 128-row tiles at M = 512, 256-row tiles from 1024, one program per tile; at M = 256
# only where the 256 x 128 tiles number at least WS_MIN_TILES (the measured winners had 86 and 224,
# the losers 32 and 64).
WS_MIN_TILES = 80


class DeviceTables(NamedTuple):
    """One GPU model's overrides of the tables above (H100-tuned), consulted first: fused configs by
    (M bucket, K, N) (over TUNED) and ws tiles (over WS_TILES; None: not the ws kernel there)."""

    tuned: dict[tuple[int, int, int], GPTQConfig]
    ws_tiles: dict[tuple[int, int, int], WSTile | None]


# Device name fragment -> its overrides (the first fragment in the CUDA device's name wins). Every other
# GPU, the H100 included, uses the tables above unchanged.
DEVICE_TABLES: dict[str, DeviceTables] = {
    # NVIDIA H200 (the H100's SMs, faster memory): the rows where the H100's choices fell under 0.9x cuBLAS
    # (results/h200_streamk/prefill.md), re-chosen by benchmarks/gptq/experiments/device_prefill.py
    # (results/h200_prefill_table/: 17 fused configs and ws tiles taking turns, timed as prefill.py times
    # them; the comments give those medians, cuBLAS and the H100's choice in the same run). With it, two
    # rows stay at 0.88-0.89x (benchmarks/gptq/NOTES.md, "Per-device prefill table").
    "H200": DeviceTables(
        # 19.6 us (cuBLAS 17.0; the H100's 256 x 128 split 4: 20.5)
        tuned={(256, 4096, 4096): _cfg(128, 128, 128, 2, 8, 4, tma_a=True)},
        ws_tiles={
            (256, 4096, 4096): None,  # the fused config above (ws tiles 26.6 us at best)
            (512, 4096, 4096): WSTile(128, 3),  # 29.0 us (cuBLAS 26.3; 128/4: 29.2)
            (256, 4096, 11008): WSTile(128, 4, _SK),  # 43.4 us (cuBLAS 39.4; 256/3: 43.7)
            (512, 4096, 11008): WSTile(128, 4, _SK),  # 80.1 us (cuBLAS 77.2; 256/3/sk: 83.6)
        }),
}


def device_name() -> str:
    """The current CUDA device's name ("" without one): picks the entry of DEVICE_TABLES."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else ""


def device_tables() -> DeviceTables | None:
    """This GPU's overrides (DEVICE_TABLES), or None: the H100-tuned tables apply as they are."""
    name = device_name()
    return next((tables for fragment, tables in DEVICE_TABLES.items() if fragment in name), None)


def ws_tile(m: int, k: int, n: int, explicit: bool = False) -> WSTile | None:
    """The warp-specialised prefill kernel's launch for this call, or None (use the other methods).
    ``explicit``: the kernel was asked for by name, so every M gets a tile."""
    bucket = m_bucket(m)
    rule = WSTile(128, 4) if bucket <= 512 else WSTile(256, 3)  # 128-row tiles up to M = 512, 256 above
    overrides = device_tables()
    if overrides is not None and (bucket, k, n) in overrides.ws_tiles:
        tile = overrides.ws_tiles[(bucket, k, n)]
    elif (bucket, k, n) in WS_TILES:
        tile = WS_TILES[(bucket, k, n)]
    elif bucket == 256:
        tile = WSTile(256, 3) if triton.cdiv(m, 256) * (n // 128) >= WS_MIN_TILES else None
    else:
        tile = rule if bucket in LARGE_M_BUCKETS else None
    return rule if tile is None and explicit else tile


def select_method(m: int, k: int, n: int) -> str:
    """``"dequant"`` (dequantize W to fp16, then cuBLAS) or ``"fused"`` for gptq_matmul(method="auto"):
    measured per tuned shape (DEQUANT_FROM), else the rule DEQUANT_RULE_MIN_M derived from those runs."""
    bucket = m_bucket(m)
    first = DEQUANT_FROM[(k, n)] if (k, n) in DEQUANT_FROM else DEQUANT_RULE_MIN_M
    return "dequant" if first is not None and bucket >= first else "fused"


def select_config(m: int, k: int, n: int, group_size: int = 128) -> GPTQConfig:
    """The tuned config for (M bucket, K, N) (this GPU's DEVICE_TABLES entry, TUNED, then DECODE_TUNED) when
    there is one and its K steps fit the groups (the tables were tuned at G = 128), else
    :func:`heuristic_config`."""
    key = (m_bucket(m), k, n)
    overrides = device_tables()
    tuned = overrides.tuned.get(key) if overrides is not None else None
    if tuned is None:
        tuned = TUNED.get(key)
    if tuned is None:
        tuned = DECODE_TUNED.get(key)
    if tuned is not None and (group_size % tuned.block_k == 0 or group_size >= k):
        return tuned
    return heuristic_config(m, k, n, group_size)
