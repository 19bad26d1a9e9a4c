"""The warp-specialised kernel's stream-K launch with a chosen number of programs, where there are fewer
tiles than SMs: with as many programs as SMs the tiles' K steps are shared out unevenly (a tile's share
boundaries fall anywhere); with a multiple of the tiles each tile is split into equal whole shares (split-K
with the kernel's own fix-up). Timed as prefill.py times (one weight copy, CUDA-graph replays of 4 calls,
candidates in turns, medians), beside the shipped ``gptq_matmul`` and cuBLAS fp16.

    python3 benchmarks/gptq/experiments/ab_ws_programs.py --rows 256,0 256,1 512,0 --programs 0 64 128 \\
        --tiles 128,3 128,4 256,3 [--rounds 5]

``--programs``: 0 = a program per tile (no stream-K), else the stream-K grid (the SM count is the shipped one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import SHAPES, resident_layer, time_candidates  # noqa: E402

from solutions.gptq import configs, gptq_matmul, ws_prefill  # noqa: E402


def ws_call(a: torch.Tensor, w, block_m: int, stages: int, programs: int):
    """A closure launching the ws kernel with ``programs`` stream-K programs (0: a program per tile)."""
    sm_count = ws_prefill.sm_count
    if programs:
        ws_prefill.sm_count = lambda device: programs  # stream_k_plan's grid
    try:
        kernel, grid, args, options, a_descriptor = ws_prefill.launch_spec(a.shape[0], w, block_m, stages,
                                                                           stream_k=bool(programs))
    finally:
        ws_prefill.sm_count = sm_count

    # A scratch of this closure's own (flags zero, sized for its grid): the per-stream scratch of ws_prefill
    # assumes one grid size (the SM count), and the candidates here differ in it.
    scratch = torch.zeros(ws_prefill.flag_words(grid[0]) + grid[0] * 2 * 64 * ws_prefill.MAX_BLOCK_M,
                          device=a.device) if programs else None

    def call() -> torch.Tensor:
        c = a.new_empty((a.shape[0], w.n))
        args[0], args[4] = a_descriptor(a), c
        args[5] = scratch if programs else c
        kernel[grid](*args, **options)
        return c
    return call


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", nargs="+", default=["256,0", "256,1", "512,0"])
    parser.add_argument("--programs", type=int, nargs="+", default=[0, 128])
    parser.add_argument("--tiles", nargs="+", default=["128,3", "128,4"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ab_ws_programs.py needs a CUDA GPU; nothing to do.")
        return 0
    print(f"device {configs.device_name()}, {ws_prefill.sm_count(torch.device('cuda'))} SMs", flush=True)
    for row in args.rows:
        m, si = (int(x) for x in row.split(","))
        k, n = SHAPES[si]
        (w,), w_ref, (w16,) = resident_layer(k, n)
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        ref = a.float() @ w_ref
        calls = {"cublas": lambda a=a, w16=w16: a @ w16, "auto": lambda a=a, w=w: gptq_matmul(a, w)}
        for tile in args.tiles:
            block_m, stages = (int(x) for x in tile.split(","))
            for programs in args.programs:
                calls[f"ws {block_m}/{stages} p{programs or 'tile'}"] = ws_call(a, w, block_m, stages, programs)
        time_candidates(calls, ref, args.rounds, f"M={m} K={k} N={n}")
        del w, w_ref, w16
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
