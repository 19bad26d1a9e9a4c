"""Puzzle 29 (a transpose whose every load and store is a TMA copy) on a GPU: the reference over tile shapes and
warps, and variants that overlap the copies, against torch.compile's pointer transpose and the memory floor.

    python benchmarks/p29_variants.py [--out benchmarks/results]

Needs a CUDA GPU with TMA (sm_90+); without one it says so and exits 0. Writes p29_variants.md under --out/<device>/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from cuda_here import variants_out, write_device_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from solutions.p29_tensor_descriptors import transpose_kernel  # noqa: E402


@triton.jit
def transpose_halves(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Both halves' loads issued before either store: two TMA copies in flight per program."""
    i0 = tl.program_id(0) * B0
    j0 = tl.program_id(1) * B1
    half: tl.constexpr = B1 // 2
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[half, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, half])
    a = x_desc.load([j0, i0])
    b = x_desc.load([j0 + half, i0])
    z_desc.store([i0, j0], tl.trans(a))
    z_desc.store([i0, j0 + half], tl.trans(b))


@triton.jit
def transpose_grouped(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr, GROUP: tl.constexpr):
    """The reference with its tiles taken in groups of GROUP tile rows (puzzle 16's order) over a 1-D grid."""
    pid = tl.program_id(0)
    tiles0 = tl.cdiv(N0, B0)
    tiles1 = tl.cdiv(N1, B1)
    per_group = GROUP * tiles0
    first = (pid // per_group) * GROUP
    rows = min(tiles1 - first, GROUP)
    t1 = first + (pid % per_group) % rows
    t0 = (pid % per_group) // rows
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    z_desc.store([t0 * B0, t1 * B1], tl.trans(x_desc.load([t1 * B1, t0 * B0])))


def main() -> int:
    out = variants_out(__doc__, (9, 0), "a CUDA GPU with TMA (sm_90+)")
    if out is None:
        return 0
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    n = 8192
    x = torch.randn(n, n, device="cuda")
    z = torch.empty_like(x)
    want = x.T.contiguous()
    compiled = torch.compile(lambda t: t.T.contiguous())
    compiled(x)
    rows = [("torch.compile(x.T.contiguous())", "", triton.testing.do_bench(lambda: compiled(x)))]
    copy = torch.empty_like(x)
    copy_ms = triton.testing.do_bench(lambda: copy.copy_(x))
    floor_gbps = 2 * x.numel() * 4 / copy_ms / 1e6
    for b0, b1 in ((64, 128), (128, 64), (64, 64), (32, 128), (64, 256), (32, 256)):
        for warps in (4, 8):
            grid = (triton.cdiv(n, b0), triton.cdiv(n, b1))
            for name, kernel in (("reference", transpose_kernel), ("halves", transpose_halves)):
                def launch(kernel=kernel, grid=grid, b0=b0, b1=b1, warps=warps):
                    kernel[grid](x, z, n, n, B0=b0, B1=b1, num_warps=warps)
                z.zero_()
                launch()
                ok = torch.equal(z, want)
                tiles = f"{b0} x {b1}, {warps} warps{'' if ok else ' WRONG'}"
                rows.append((name, tiles, triton.testing.do_bench(launch)))
            for group in (4, 8):
                grid1 = (triton.cdiv(n, b0) * triton.cdiv(n, b1),)
                def launch(grid1=grid1, b0=b0, b1=b1, warps=warps, group=group):
                    transpose_grouped[grid1](x, z, n, n, B0=b0, B1=b1, GROUP=group, num_warps=warps)
                z.zero_()
                launch()
                ok = torch.equal(z, want)
                rows.append((f"grouped {group}", f"{b0} x {b1}, {warps} warps{'' if ok else ' WRONG'}",
                             triton.testing.do_bench(launch)))
    floor_us = 2 * x.numel() * 4 / (floor_gbps * 1e3)
    lines = [f"# Puzzle 29's TMA transpose on {torch.cuda.get_device_name()}", "",
             f"torch {torch.__version__}, triton {triton.__version__}; x {n} x {n} float32; do_bench medians; "
             f"memory floor (a copy's rate) {floor_us:.1f} us.", "Command: python benchmarks/p29_variants.py", "",
             "| kernel | tiles | us |", "| --- | --- | --- |"]
    lines += [f"| {name} | {what} | {ms * 1000:.1f} |" for name, what, ms in sorted(rows, key=lambda r: r[2])]
    write_device_table(out, "p29_variants.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
