"""Puzzle 15 (int8 weight-only gemv) on a GPU: the teaching reference against variants that keep more weight bytes
in flight per program, at the puzzle's perf size and launch (its grid, BN and BK, four warps), against
torch.compile(spec) and the memory floor. What it finds decides puzzle 15's fast reference.

    python benchmarks/p15_variants.py [--out benchmarks/results]

Needs a CUDA GPU; without one it says so and exits 0. Writes p15_variants.md under --out/<device>/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from cuda_here import variants_out, write_device_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from puzzles.course import catalog  # noqa: E402
from solutions.p15_int8_gemv import int8_gemv_kernel  # noqa: E402
from solutions.p15_int8_gemv_fast import int8_gemv_kernel as fast_int8_gemv_kernel  # noqa: E402


@triton.jit
def gemv_tile_accumulator(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    """A BK x BN float32 accumulator: each trip is multiply-adds in place, one sum across rows after the loop."""
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    n_in = n < N
    acc = tl.zeros([BK, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        k_in = k < K
        x = tl.load(x_ptr + k, mask=k_in, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & n_in[None, :], other=0)
        acc += x[:, None] * w.to(tl.float32)
    scale = tl.load(scale_ptr + n, mask=n_in, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (tl.sum(acc, axis=0) * scale).to(tl.float16), mask=n_in)


@triton.jit
def gemv_tile_accumulator_wide(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    """The BK x BN accumulator fed two chunks per trip (two loads in flight, one add each)."""
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    n_in = n < N
    acc = tl.zeros([BK, BN], dtype=tl.float32)
    for k0 in range(0, K, 2 * BK):
        ka = k0 + tl.arange(0, BK)
        kb = ka + BK
        xa = tl.load(x_ptr + ka, mask=ka < K, other=0.0).to(tl.float32)
        xb = tl.load(x_ptr + kb, mask=kb < K, other=0.0).to(tl.float32)
        wa = tl.load(weight_ptr + ka[:, None] * N + n[None, :], mask=(ka < K)[:, None] & n_in[None, :], other=0)
        wb = tl.load(weight_ptr + kb[:, None] * N + n[None, :], mask=(kb < K)[:, None] & n_in[None, :], other=0)
        acc += xa[:, None] * wa.to(tl.float32) + xb[:, None] * wb.to(tl.float32)
    scale = tl.load(scale_ptr + n, mask=n_in, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (tl.sum(acc, axis=0) * scale).to(tl.float16), mask=n_in)


@triton.jit
def gemv_wide_chunks_staged(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr,
                            TRIP: tl.constexpr = 4, STAGES: tl.constexpr = 3):
    """TRIP chunks of BK rows a trip, and the trips in tl.range with STAGES stages (4 and 3: the fast reference)."""
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    n_in = n < N
    acc = tl.zeros([BN], dtype=tl.float32)
    CHUNK: tl.constexpr = TRIP * BK
    for k0 in tl.range(0, K, CHUNK, num_stages=STAGES):
        k = k0 + tl.arange(0, CHUNK)
        k_in = k < K
        x = tl.load(x_ptr + k, mask=k_in, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & n_in[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n_in, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n_in)


@triton.jit
def gemv_four_chunks(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    gemv_wide_chunks_staged(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, 4, 1)


@triton.jit
def gemv_four_stages(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    gemv_wide_chunks_staged(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, 1, 4)


@triton.jit
def gemv_eight_chunks(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    gemv_wide_chunks_staged(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, 8, 1)


@triton.jit
def gemv_two_chunks_four_stages(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    gemv_wide_chunks_staged(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, 2, 4)


VARIANTS = {"reference": int8_gemv_kernel, "wide chunks (4 x BK a trip)": gemv_four_chunks,
            "tl.range, 4 stages": gemv_four_stages, "BK x BN accumulator": gemv_tile_accumulator,
            "BK x BN accumulator, 2 chunks a trip": gemv_tile_accumulator_wide,
            "wide chunks (8 x BK a trip)": gemv_eight_chunks,
            "wide chunks (4 x BK), tl.range 3 stages (the fast reference)": fast_int8_gemv_kernel,
            "wide chunks (2 x BK), tl.range 4 stages": gemv_two_chunks_four_stages}


def main() -> int:
    out = variants_out(__doc__)
    if out is None:
        return 0
    p = catalog.get(15)
    s = dict(p.perf_size)
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(s["K"], device="cuda", generator=gen).half()
    w = torch.randint(-127, 128, (s["K"], s["N"]), device="cuda", dtype=torch.int8, generator=gen)
    scale = (torch.rand(s["N"], device="cuda", generator=gen) / 100).half()
    want = p.spec(x, w, scale)
    grid = p.grid(s)
    floor_us = (x.numel() * 2 + w.numel() + scale.numel() * 2 + s["N"] * 2) / 4.8e12 * 1e6
    compiled = torch.compile(p.spec)
    compiled(x, w, scale)
    rows = [("torch.compile(spec)", triton.testing.do_bench(lambda: compiled(x, w, scale)) * 1000, 0.0)]
    for name, kernel in VARIANTS.items():
        z = torch.empty(s["N"], device="cuda", dtype=torch.float16)

        def launch(kernel=kernel, z=z):
            kernel[grid](x, w, scale, z, s["N"], s["K"], BN=s["BN"], BK=s["BK"])

        launch()
        error = ((z.float() - want.float()).abs().max() / want.float().abs().max()).item()
        rows.append((name, triton.testing.do_bench(launch) * 1000, error))
    device = torch.cuda.get_device_name()
    lines = [f"# Puzzle 15 variants on {device}", "",
             f"torch {torch.__version__}, triton {triton.__version__}; `python benchmarks/p15_variants.py`; perf size "
             f"{s}, grid {grid}, four warps; do_bench medians. Memory floor at 4.8 TB/s: {floor_us:.1f} us.", "",
             "| kernel | us | x torch.compile | max error / max |", "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {us:.1f} | {rows[0][1] / us:.2f} | {error:.1e} |" for name, us, error in rows]
    write_device_table(out, "p15_variants.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
