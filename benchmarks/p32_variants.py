"""Puzzle 32 (an FP8 scaled matmul) on a GPU: the reference over tile shapes, stages and warps, with w as the puzzle
stores it (N x K: each output channel's K values contiguous, "K-major", the layout Hopper's fp8 tensor-core
instruction reads its second operand in), and the same kernel for a w stored K x N (the puzzle's first layout, kept
in tests/kernels as the slip of reading w as K x N), against torch._scaled_mm (cuBLASLt) with rowwise scales, at
4096 x 4096 x 4096.

    python benchmarks/p32_variants.py [--out benchmarks/results]

Needs a CUDA GPU of compute capability 8.9 or newer; without one it says so and exits 0. Writes p32_variants.md
under --out/<device>/. Decided: w's layout, not the tile configuration, kept the first reference 8x behind the
library, so the puzzle stores w N x K; and the speed goal's tiles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
from cuda_here import variants_out, write_device_table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "kernels")]
from p32_fp8_scaled_matmul import fp8_w_read_as_k_by_n  # noqa: E402

from solutions.p32_fp8_scaled_matmul import fp8_scaled_matmul_kernel  # noqa: E402

TILES = ((128, 128, 128), (128, 256, 64), (128, 256, 128), (128, 128, 64), (64, 128, 128))


def main() -> int:
    out = variants_out(__doc__, (8, 9), "a CUDA GPU of compute capability 8.9+")
    if out is None:
        return 0
    n = 4096
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    w = torch.randn(n, n, device="cuda", generator=gen).to(torch.float8_e4m3fn)  # N x K, as the puzzle stores it
    w_kn = w.t().contiguous()  # the same weights K x N
    x_scale = torch.rand(n, device="cuda", generator=gen) + 0.5
    w_scale = torch.rand(n, device="cuda", generator=gen) + 0.5
    z = torch.empty(n, n, device="cuda", dtype=torch.float16)
    want = (x.float() @ w.float().t()) * x_scale[:, None] * w_scale[None, :]
    rows = [("torch._scaled_mm (rowwise, bfloat16 out)", "", triton.testing.do_bench(
        lambda: torch._scaled_mm(x, w.t(), scale_a=x_scale[:, None].contiguous(),
                                 scale_b=w_scale[None, :].contiguous(), out_dtype=torch.bfloat16)))]
    kernels = (("w stored K x N", fp8_w_read_as_k_by_n, w_kn), ("reference, w N x K", fp8_scaled_matmul_kernel, w))
    for bm, bn, bk in TILES:
        for stages in (3, 4):
            for warps in (4, 8):
                for name, kernel, w_in in kernels:
                    grid = (triton.cdiv(n, bm), triton.cdiv(n, bn))

                    def launch(kernel=kernel, w_in=w_in, grid=grid, bm=bm, bn=bn, bk=bk, stages=stages, warps=warps):
                        kernel[grid](x, x_scale, w_in, w_scale, z, n, n, n, BM=bm, BN=bn, BK=bk, num_stages=stages,
                                     num_warps=warps)
                    try:
                        z.zero_()
                        launch()
                        ok = torch.allclose(z.float(), want, rtol=2e-2, atol=2e-1)
                        ms = triton.testing.do_bench(launch)
                    except Exception as exc:  # noqa: BLE001 - shared memory or registers exceeded: say so, go on
                        rows.append((name, f"{bm} x {bn} x {bk}, {stages} stages, {warps} warps: "
                                           f"{type(exc).__name__}", float("inf")))
                        continue
                    rows.append((name, f"{bm} x {bn} x {bk}, {stages} stages, {warps} warps{'' if ok else ' WRONG'}",
                                 ms))
    flops = 2 * n ** 3
    lines = [f"# Puzzle 32's FP8 scaled matmul on {torch.cuda.get_device_name()}", "",
             f"torch {torch.__version__}, triton {triton.__version__}; float8_e4m3fn {n} x {n} x {n}, float16 out; "
             "do_bench medians.", "Command: python benchmarks/p32_variants.py", "", "| kernel | tiles | us | TFLOP/s |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {what} | {ms * 1000:.1f} | {flops / ms / 1e9:.0f} |"
              for name, what, ms in sorted(rows, key=lambda r: r[2])]
    write_device_table(out, "p32_variants.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
