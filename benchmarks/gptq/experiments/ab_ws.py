"""The warp-specialised Gluon prefill kernel (solutions/gptq/ws_prefill.py) against gptq_matmul as
shipped, dequantize-then-cuBLAS and cuBLAS fp16: correctness at ragged M, then GPU time (CUDA-graph
replays, the methods taking turns in rounds, medians, weights rotated past the L2).

    python3 benchmarks/gptq/experiments/ab_ws.py [--m 512 1024 2048] [--shapes 0 1 2 3 4] [--rounds 3] \\
        [--tiles 128,3 256,2]

``--tiles``: BLOCK_M,STAGES[,sk] of the Gluon kernel (BLOCK_N = BLOCK_K = 128, two consumer warpgroups;
``sk``: stream-K over the SMs instead of a program per tile).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import SHAPES, ab_cases, gpu_time_us, interleaved_medians, random_layer, rel_err  # noqa: E402

from solutions.gptq import dequantize, gptq_matmul, ws_prefill  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, nargs="*", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiles", nargs="*", default=["128,3", "128,4", "256,2", "256,3"])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ab_ws.py needs a CUDA GPU; nothing to do.")
        return 0
    tiles = [(int(t.split(",")[0]), int(t.split(",")[1]), t.endswith(",sk")) for t in args.tiles]
    # Correctness first, on a small layer and ragged M (a wrong kernel must not reach the timings).
    w = random_layer(1024, 1152)
    ref_w = dequantize(w, torch.float32)
    for m in (1, 77, 300):
        a = torch.randn(m, 1024, device="cuda", dtype=torch.float16)
        assert ws_prefill.supported(a, w)
        ref = a.float() @ ref_w
        for bm, st, sk in tiles:
            for _ in range(2):  # twice: stream-K must leave its flags ready for the next launch
                out = ws_prefill.gptq_matmul_ws(a, w, block_m=bm, stages=st, stream_k=sk)
                err = rel_err(out, ref)
                print(f"check M={m} tile {bm}/{st}{'/sk' * sk}: rel err {err:.1e}", flush=True)
                assert err < 1e-2, (m, bm, st, sk, err)
    names = ["cublas", "shipped", "dequant", *(f"ws{bm}/{st}{'/sk' * sk}" for bm, st, sk in tiles)]
    print("| M | K | N | " + " | ".join(f"{x} us" for x in names) + " | "
          + " | ".join(f"cuBLAS/{x}" for x in names[1:]) + " |")
    print("|---:|---:|---:|" + "---:|" * (2 * len(names) - 1))
    for m, k, n, a, ref, copies, w16 in ab_cases(args.shapes, args.m):
        calls = {"cublas": [lambda a=a, w=w: a @ w for w in w16],
                 "shipped": [lambda a=a, w=w: gptq_matmul(a, w) for w in copies],
                 "dequant": [lambda a=a, w=w: gptq_matmul(a, w, method="dequant") for w in copies]}
        for (bm, st, sk), name in zip(tiles, names[3:], strict=True):
            out = ws_prefill.gptq_matmul_ws(a, copies[0], block_m=bm, stages=st, stream_k=sk)
            err = rel_err(out, ref)
            assert err < 1e-2, (m, k, n, bm, st, sk, err)
            calls[name] = [lambda a=a, w=w, bm=bm, st=st, sk=sk: ws_prefill.gptq_matmul_ws(
                a, w, block_m=bm, stages=st, stream_k=sk) for w in copies]
        med = interleaved_medians({name: lambda c=calls[name]: gpu_time_us(c) for name in names}, args.rounds)
        print(f"| {m} | {k} | {n} | " + " | ".join(f"{med[x]:.1f}" for x in names) + " | "
              + " | ".join(f"{med['cublas'] / med[x]:.2f}" for x in names[1:]) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
