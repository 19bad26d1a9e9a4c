"""Puzzle 11's fast reference against the library op a user would call: `torch.bmm` with TF32 allowed (cuBLAS).

    python benchmarks/p11_search.py

Times, at the puzzle's perf shape (8 x 2048 x 2048 x 2048, float32), torch.bmm in IEEE float32 and with TF32, and
the puzzle's kernel (its grid and signature) over tile shapes, warps, stages and the dot's input precision.
Needs a CUDA GPU.
"""

from __future__ import annotations

import itertools
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def dot_kernel(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID,
               B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr, FP16: tl.constexpr,
               WS: tl.constexpr = False):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    batch = tl.program_id(2) * B2
    x_base = x_ptr + batch * N0 * MID
    y_base = y_ptr + batch * MID * N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in tl.range(0, MID, B_MID, warp_specialize=WS):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_base + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_base + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        if FP16:
            acc += tl.dot(x.to(tl.float16), y.to(tl.float16))
        else:
            acc += tl.dot(x, y)
    z_in = (i[:, None] < N0) & (j[None, :] < N1) & (batch < N2)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=z_in)


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 0
    n2, n0, n1, mid = 8, 2048, 2048, 2048
    x = torch.randn(n2, n0, mid, device="cuda")
    y = torch.randn(n2, mid, n1, device="cuda")
    bench = lambda f: triton.testing.do_bench(f, warmup=25, rep=100)  # noqa: E731
    torch.backends.cuda.matmul.allow_tf32 = False
    ieee = bench(lambda: torch.bmm(x, y))
    exact = torch.bmm(x, y)
    torch.backends.cuda.matmul.allow_tf32 = True
    tf32 = bench(lambda: torch.bmm(x, y))
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}")
    print(f"torch.bmm float32 (IEEE): {ieee:.3f} ms   torch.bmm TF32: {tf32:.3f} ms")
    rows = []
    configs = [(True, (b0, b1), bk, warps, stages, ws) for (b0, b1), bk, warps, stages, ws in itertools.product(
        ((128, 256), (256, 128), (128, 128)), (32, 64), (4, 8), (3, 4, 5), (False, True))]
    configs += [(False, (128, 128), 32, 8, 3, ws) for ws in (False, True)]
    for fp16, (b0, b1), bk, warps, stages, ws in configs:
        z = torch.empty(n2, n0, n1, device="cuda")
        grid = (triton.cdiv(n0, b0), triton.cdiv(n1, b1), n2)
        try:
            run = lambda: dot_kernel[grid](x, y, z, n0, n1, n2, mid, B0=b0, B1=b1, B2=1, B_MID=bk, FP16=fp16,  # noqa: E731
                                           WS=ws, num_warps=warps, num_stages=stages)
            run()
            torch.cuda.synchronize()
            err = ((z - exact).abs().max() / exact.abs().max()).item()
            ms = bench(run)
        except Exception as exc:  # noqa: BLE001 - out of shared memory, say
            print(f"skip fp16={fp16} {b0}x{b1}x{bk} w{warps} s{stages} ws={ws}: {type(exc).__name__}")
            continue
        rows.append((ms, fp16, b0, b1, bk, warps, stages, ws, err))
    rows.sort()
    print("| ms | vs TF32 bmm | dot inputs | B0 x B1 x B_MID | warps | stages | warp-specialized | max rel err |")
    print("|---|---|---|---|---|---|---|---|")
    for ms, fp16, b0, b1, bk, warps, stages, ws, err in rows[:25]:
        print(f"| {ms:.3f} | {ms / tf32:.2f} | {'fp16' if fp16 else 'tf32'} | {b0} x {b1} x {bk} | {warps} | {stages} "
              f"| {ws} | {err:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
