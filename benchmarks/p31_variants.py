"""Puzzle 31 (a pipelined, warp-specialized float16 matmul through tensor descriptors) on a GPU: the reference
over tile shapes, stages and warps, the same loop without warp specialization, and the unpipelined slow kernel
(num_stages=1), against torch.mm (cuBLAS) on float16 at 4096 x 4096 x 4096.

    python benchmarks/p31_variants.py [--out benchmarks/results]

Needs a CUDA GPU with TMA (sm_90+); without one it says so and exits 0. Writes p31_variants.md under --out/<device>/.
Decides: the speed goal's levers (the best tiles, stages, warps), whether warp specialization pays at this size,
and a library_note where every kernel stays behind cuBLAS.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
from cuda_here import variants_out, write_device_table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "kernels")]
from p31_pipelined_matmul import pipelined_not_warp_specialized, unpipelined  # noqa: E402

from solutions.p31_pipelined_matmul import pipelined_matmul_kernel  # noqa: E402

KERNELS = (("reference (warp-specialized)", pipelined_matmul_kernel),
           ("pipelined, no warp specialization", pipelined_not_warp_specialized),
           ("unpipelined (num_stages=1)", unpipelined))
TILES = ((128, 128, 64), (128, 256, 64), (64, 128, 64), (128, 128, 32))


def main() -> int:
    out = variants_out(__doc__, (9, 0), "a CUDA GPU with TMA (sm_90+)")
    if out is None:
        return 0
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    n = 4096
    x = torch.randn(n, n, device="cuda", dtype=torch.float16)
    y = torch.randn(n, n, device="cuda", dtype=torch.float16)
    z = torch.empty(n, n, device="cuda", dtype=torch.float16)
    want = x @ y
    rows = [("torch.mm (cuBLAS)", "", triton.testing.do_bench(lambda: torch.mm(x, y)))]
    for bm, bn, bk in TILES:
        for stages in (2, 3, 4, 5):
            for warps in (4, 8):
                for name, kernel in KERNELS:
                    if name.startswith("unpipelined") and stages != 2:
                        continue  # its loop ignores NUM_STAGES
                    grid = (triton.cdiv(n, bn), triton.cdiv(n, bm))

                    def launch(kernel=kernel, grid=grid, bm=bm, bn=bn, bk=bk, stages=stages, warps=warps):
                        kernel[grid](x, y, z, n, n, n, BM=bm, BN=bn, BK=bk, NUM_STAGES=stages, num_warps=warps)
                    try:
                        z.zero_()
                        launch()
                        ok = torch.allclose(z.float(), want.float(), rtol=1e-2, atol=1e-1)
                        ms = triton.testing.do_bench(launch)
                    except Exception as exc:  # noqa: BLE001 - shared memory or registers exceeded: say so, go on
                        rows.append((name, f"{bm} x {bn} x {bk}, {stages} stages, {warps} warps: "
                                           f"{type(exc).__name__}", float("inf")))
                        continue
                    what = f"{bm} x {bn} x {bk}, {stages} stages, {warps} warps{'' if ok else ' WRONG'}"
                    rows.append((name, what, ms))
    flops = 2 * n ** 3
    lines = [f"# Puzzle 31's pipelined matmul on {torch.cuda.get_device_name()}", "",
             f"torch {torch.__version__}, triton {triton.__version__}; float16 {n} x {n} x {n}; do_bench medians.",
             "Command: python benchmarks/p31_variants.py", "", "| kernel | tiles | us | TFLOP/s |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {name} | {what} | {ms * 1000:.1f} | {flops / ms / 1e9:.0f} |"
              for name, what, ms in sorted(rows, key=lambda r: r[2])]
    write_device_table(out, "p31_variants.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
