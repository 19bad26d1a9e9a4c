"""The warp-specialised Gluon prefill kernel (solutions/gptq/ws_prefill.py) and its place in gptq_matmul.

Without a GPU: the tile table's rules, and an offline sm_90 compile of every tile in it (the dequantized
weights must reach the wgmma without a layout conversion, and ptxas must not serialise the wgmma).
On a Hopper GPU: every tile against the dequantized reference at ragged M, gptq_matmul choosing it,
CUDA-graph capture, and the fallback when the kernel fails to build.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import triton

from solutions.gptq import configs, dequantize, gptq_matmul, load_gptq_layer, quantize_rtn, ws_prefill
from solutions.gptq.configs import LARGE_M_BUCKETS, TUNED, WS_TILES, WSTile, m_bucket, select_config, ws_tile
from solutions.gptq.plans import ws_choice

ROOT = Path(__file__).resolve().parents[2]
CUDA = torch.cuda.is_available()
HOPPER = CUDA and torch.cuda.get_device_capability()[0] == 9
# Every tile a table can pick, on any GPU (DEVICE_TABLES too).
TILES = sorted({tile for table in (WS_TILES, *(t.ws_tiles for t in configs.DEVICE_TABLES.values()))
                for tile in table.values() if tile is not None})
KERNELS = sorted({(tile.block_m, tile.stages) for tile in TILES})  # stream-K is a launch, not a kernel
SMEM_BYTES = 227 * 1024  # H100 / H200 shared memory per block
TOL = 1e-2


def _smem(block_m: int, stages: int) -> int:
    """The kernel's ring: per stage an fp16 A tile (BLOCK_M x 128) and 128 columns of words (8 KB)."""
    return stages * (block_m * 128 * 2 + 128 * 16 * 4)


H100 = "NVIDIA H100 80GB HBM3"


def test_ws_tiles_fit_and_follow_the_measured_rules(monkeypatch):
    monkeypatch.setattr(configs, "device_name", lambda: H100)  # the H100's tables (see the test below)
    assert KERNELS and all(kernel in ((128, 3), (128, 4), (256, 2), (256, 3)) for kernel in KERNELS)
    assert all(_smem(*kernel) + 1024 <= SMEM_BYTES for kernel in KERNELS)
    assert any(tile.stream_k for tile in TILES) and any(not tile.stream_k for tile in TILES)
    assert {b for b, _, _ in WS_TILES} == set(LARGE_M_BUCKETS)
    for (bucket, k, n), tile in WS_TILES.items():
        assert ws_tile(bucket, k, n) == tile
    # Decode and small prefill stay on the Triton kernel; other shapes follow the rule.
    assert ws_tile(128, 4096, 4096) is None and ws_tile(16, 8192, 28672) is None
    assert ws_tile(512, 5120, 13824) == WSTile(128, 4) and ws_tile(3000, 5120, 13824) == WSTile(256, 3)
    assert ws_tile(256, 5120, 13824) == WSTile(256, 3) and ws_tile(256, 5120, 5120) is None  # 108 vs 40 tiles
    assert m_bucket(300) == 512 and ws_tile(300, 4096, 4096) == WSTile(128, 4)
    # Stream-K only where it measured faster; an explicit request off the table gets one program per tile.
    assert ws_tile(512, 8192, 28672).stream_k and not ws_tile(512, 28672, 8192).stream_k
    assert not ws_tile(512, 5120, 13824, explicit=True).stream_k


def test_device_tables_apply_only_on_their_gpu_and_leave_the_h100_path_unchanged(monkeypatch):
    h200 = configs.DEVICE_TABLES["H200"]
    assert h200.tuned and h200.ws_tiles
    for name in (H100, "NVIDIA H100 PCIe", ""):  # "": no GPU
        monkeypatch.setattr(configs, "device_name", lambda name=name: name)
        assert configs.device_tables() is None
        assert all(ws_tile(*key) == tile for key, tile in WS_TILES.items())
        assert all(select_config(*key) == cfg for key, cfg in TUNED.items())
    monkeypatch.setattr(configs, "device_name", lambda: "NVIDIA H200")
    assert configs.device_tables() is h200
    for key, tile in WS_TILES.items():
        assert ws_tile(*key) == h200.ws_tiles.get(key, tile)
    for key, cfg in TUNED.items():
        assert select_config(*key) == h200.tuned.get(key, cfg)
    for key, cfg in h200.tuned.items():  # a fused override: no ws tile there, a prefill config of the kernel
        assert h200.ws_tiles[key] is None and cfg.swap_ab and cfg.block_k == 128 and cfg.num_warps == 8
    # Every H200 tile is one of the kernels compiled and checked here (stream-K is a launch).
    assert all(t is None or (t.block_m, t.stages) in KERNELS for t in h200.ws_tiles.values())


def test_cpu_and_unsupported_weights_never_take_the_ws_path():
    w = torch.randn(256, 256) * 0.02
    weight = load_gptq_layer(quantize_rtn(w, 128).tensors, quantize_rtn(w, 128).quantize_config)
    a = torch.randn(512, 256).half()
    assert not ws_prefill.supported(a, weight)
    assert ws_choice(a, weight, explicit=True) is None
    with pytest.raises(ValueError, match="method='ws' needs a Hopper GPU"):
        gptq_matmul(a, weight, method="ws")


@pytest.mark.skipif(not ws_prefill.HAVE_GLUON, reason="this Triton has no Gluon warp_specialize")
def test_ws_kernel_compiles_for_sm90_with_asynchronous_wgmma():
    # Compiling proves the dequantized tile's layout is wgmma's register operand (convert_layout with
    # assert_trivial=True fails otherwise); ptxas then reports whether it kept the wgmma asynchronous.
    # In a subprocess: `import puzzles` switched this process to the interpreter, which cannot compile.
    env = dict(os.environ, TRITON_INTERPRET="0")
    tiles = [f"{bm},{st}" for bm, st in KERNELS]
    run = subprocess.run([sys.executable, "-m", "solutions.gptq.ws_compile_check", *tiles],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    if run.returncode and re.search(r"ImportError|AttributeError|TypeError", run.stderr):
        pytest.skip(f"offline Gluon compile not available on triton {triton.__version__}: {run.stderr[-300:]}")
    assert run.returncode == 0, run.stderr[-3000:]
    reports = [json.loads(line) for line in run.stdout.splitlines()]
    assert [tuple(r["tile"]) for r in reports] == KERNELS
    for r in reports:
        # 8 k16 wgmma per step in each of the two consumer partitions; no serialisation, no spills.
        assert r["wgmma"] == 16 and r["shared_bytes"] <= SMEM_BYTES, r
        assert "serialized" not in r["ptxas"] and "0 bytes spill stores, 0 bytes spill loads" in r["ptxas"], r


hopper = pytest.mark.skipif(not HOPPER, reason="needs a Hopper GPU (compute capability 9.x)")


def _layer(k: int, n: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    layer = quantize_rtn(torch.randn(k, n, generator=gen) * 0.02, 128)
    weight = load_gptq_layer({key: t.cuda() for key, t in layer.tensors.items()}, layer.quantize_config)
    return weight, dequantize(weight).double()


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.gpu
@hopper
@pytest.mark.parametrize("tile", TILES)
def test_gpu_every_ws_tile_matches_reference_at_ragged_m(tile):
    weight, w = _layer(1024, 1152)
    for m in (1, 77, tile[0] + 37):
        a = torch.randn(m, 1024, device="cuda").half()
        out = ws_prefill.gptq_matmul_ws(a, weight, *tile)
        assert out.shape == (m, 1152) and _rel_err(out, a.double() @ w) < TOL, (tile, m)
        assert torch.equal(ws_prefill.gptq_matmul_ws(a, weight, *tile), out)  # stream-K: flags ready again


def _flags_are_zero(device: torch.device) -> bool:
    """Every stream-K flag of every cached scratch is back at zero (what the next launch needs)."""
    programs = ws_prefill.sm_count(device)
    return all(bool((buf[: ws_prefill.flag_words(programs)] == 0).all()) for buf in ws_prefill.SCRATCH_BUFFERS.values())


@pytest.mark.gpu
@hopper
def test_gpu_stream_k_shares_tiles_between_programs_exactly():
    # Tiles split between up to 9 programs (fewer tiles than SMs), a tile and a half per SM, several
    # whole waves before the shared ones, and programs with no K steps at all (M = 1).
    for k, n, m, block_m in ((1024, 1152, 1, 128), (1024, 1152, 300, 256), (2048, 4096, 700, 128),
                             (4096, 11008, 512, 256), (1152, 2304, 1000, 256)):
        weight, w = _layer(k, n, seed=k + m)
        a = torch.randn(m, k, device="cuda").half()
        ref = a.double() @ w
        sk = ws_prefill.gptq_matmul_ws(a, weight, block_m, 3, stream_k=True)
        per_tile = ws_prefill.gptq_matmul_ws(a, weight, block_m, 3)
        assert _rel_err(sk, ref) < TOL and _rel_err(per_tile, ref) < TOL, (k, n, m)
        # The shares add up in fp32 before the one rounding to fp16: at most one fp16 step apart.
        assert (sk.float() - per_tile.float()).abs().max().item() <= 2 ** -10 * per_tile.float().abs().max().item()
        torch.cuda.synchronize()
        assert _flags_are_zero(a.device)


@pytest.mark.gpu
@hopper
def test_gpu_stream_k_under_cuda_graphs_and_on_two_streams():
    weight, w = _layer(4096, 11008)
    a = torch.randn(512, 4096, device="cuda").half()
    assert ws_choice(a, weight, explicit=False).stream_k  # the table's stream-K entry
    ws_prefill.SCRATCH_BUFFERS.clear()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # compiles the kernel; the scratch it caches is this stream's
        gptq_matmul(a, weight)
    torch.cuda.synchronize()
    # Captured before any eager call on the capture stream: the scratch and its zeroing are captured.
    graph = torch.cuda.CUDAGraph()
    out = torch.empty(512, 11008, device="cuda", dtype=torch.float16)
    with torch.cuda.graph(graph):
        out.copy_(gptq_matmul(a, weight))
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        graph.replay()
        torch.cuda.synchronize()
        assert _rel_err(out, a.double() @ w) < TOL
    # Eager calls on two streams at once: each stream has its own flags and partial sums.
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    inputs = [torch.randn(512, 4096, device="cuda").half() for _ in streams]
    outs = []
    torch.cuda.synchronize()
    for stream, x in zip(streams, inputs, strict=True):
        with torch.cuda.stream(stream):
            outs.append([gptq_matmul(x, weight) for _ in range(4)])
    torch.cuda.synchronize()
    for x, results in zip(inputs, outs, strict=True):
        ref = x.double() @ w
        assert all(_rel_err(r, ref) < TOL for r in results)
    assert len(ws_prefill.SCRATCH_BUFFERS) >= 2 and _flags_are_zero(a.device)
    # A stream per call: the scratches kept stay bounded, and results stay right.
    for _ in range(ws_prefill.SCRATCH_STREAMS + 3):
        with torch.cuda.stream(torch.cuda.Stream()):
            assert _rel_err(gptq_matmul(a, weight), a.double() @ w) < TOL
    torch.cuda.synchronize()
    assert len(ws_prefill.SCRATCH_BUFFERS) == ws_prefill.SCRATCH_STREAMS and _flags_are_zero(a.device)


@pytest.mark.gpu
@hopper
def test_gpu_gptq_matmul_picks_ws_for_prefill_and_keeps_the_result():
    weight, w = _layer(1024, 1152)
    a = torch.randn(700, 1024, device="cuda").half()
    ref = a.double() @ w
    first = gptq_matmul(a, weight)
    plan = next(iter(weight.plans.values()))
    assert plan.method == "ws" and plan.hot is not None
    second = gptq_matmul(a, weight)  # the hot path: plan, descriptor per call, fast launch
    assert _rel_err(first, ref) < TOL and torch.equal(first, second)
    small = torch.randn(64, 1024, device="cuda").half()
    gptq_matmul(small, weight)
    assert [p.method for p in weight.plans.values()] == ["ws", "fused"]
    graph = torch.cuda.CUDAGraph()
    out = torch.empty_like(first)
    with torch.cuda.graph(graph):
        out.copy_(gptq_matmul(a, weight))
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    assert _rel_err(out, a.double() @ w) < TOL


@pytest.mark.gpu
@hopper
def test_gpu_a_ws_kernel_that_fails_to_build_falls_back_once_with_a_warning(monkeypatch):
    weight, w = _layer(1024, 1152)
    a = torch.randn(600, 1024, device="cuda").half()

    real_spec = ws_prefill.launch_spec

    class FailingKernel:  # builds like the real one, fails at its first launch (compile)
        def __init__(self, kernel):
            self.fn = kernel.fn

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                raise TypeError("warp_specialize() got an unexpected keyword argument")
            return launch

    def failing_spec(*args, **kwargs):
        kernel, *rest = real_spec(*args, **kwargs)
        return (FailingKernel(kernel), *rest)

    monkeypatch.setattr(ws_prefill, "_UNAVAILABLE", [])
    monkeypatch.setattr(ws_prefill, "launch_spec", failing_spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = gptq_matmul(a, weight)
    assert any("warp-specialised prefill kernel unavailable" in str(c.message) for c in caught)
    assert _rel_err(out, a.double() @ w) < TOL
    assert next(iter(weight.plans.values())).method == "fused" and not ws_prefill.supported(a, weight)
    with pytest.raises(ValueError):
        gptq_matmul(a, weight, method="ws")  # asked for by name: no silent fallback
