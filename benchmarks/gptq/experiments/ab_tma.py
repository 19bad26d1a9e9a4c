"""A/B in one run: the fused prefill kernel with its tuned config (A read by per-thread pointer loads)
against other configs that read A with the TMA engine (``GPTQConfig.tma_a``), and cuBLAS fp16;
methods interleaved in rounds, medians of CUDA-graph replays, weights rotated to beat the L2.

    python3 benchmarks/gptq/experiments/ab_tma.py [--m 512 1024] [--shapes 0 3] [--rounds 3] \\
        [--extra 128,256,128,8,4 ...]

``--extra``: configs as BLOCK_M,BLOCK_N,BLOCK_K,warps,stages (split-K 1), run with TMA.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import SHAPES, ab_cases, gpu_time_us, interleaved_medians, rel_err  # noqa: E402

from solutions.gptq import GPTQConfig, gptq_matmul  # noqa: E402
from solutions.gptq import configs as gptq_configs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, nargs="*", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extra", nargs="*", default=[])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ab_tma.py needs a CUDA GPU; nothing to do.")
        return 0
    extra = {}
    for spec in args.extra:
        bm, bn, bk, warps, stages = (int(x) for x in spec.split(","))
        extra[f"x{spec}"] = GPTQConfig(block_m=bm, block_n=bn, block_k=bk, split_k=1, num_warps=warps,
                                       num_stages=stages, tma_a=True)
    names = ["cublas", "tuned", *extra]
    print("| M | K | N | tuned config | " + " | ".join(f"{x} us" for x in names) + " | "
          + " | ".join(f"cuBLAS/{x}" for x in names[1:]) + " | max err |")
    print("|---:|---:|---:|---|" + "---:|" * (2 * len(names)))
    for m, k, n, a, ref, copies, w16 in ab_cases(args.shapes, args.m):
        base = gptq_configs.select_config(m, k, n)
        cfgs = {"tuned": base, **extra}
        err = 0.0
        for cfg in cfgs.values():
            out = gptq_matmul(a, copies[0], config=cfg)
            err = max(err, rel_err(out, ref))
        assert err < 1e-2, err
        calls = {"cublas": [lambda a=a, w=w: a @ w for w in w16]}
        for name, cfg in cfgs.items():
            calls[name] = [lambda a=a, w=w, cfg=cfg: gptq_matmul(a, w, config=cfg) for w in copies]
        med = interleaved_medians({name: lambda c=calls[name]: gpu_time_us(c) for name in names}, args.rounds)
        tag = (f"{base.block_m}x{base.block_n}x{base.block_k} w{base.num_warps} s{base.num_stages}"
               f" split{base.split_k}")
        ratios = " | ".join(f"{med['cublas'] / med[x]:.2f}" for x in names[1:])
        print(f"| {m} | {k} | {n} | {tag} | " + " | ".join(f"{med[x]:.1f}" for x in names)
              + f" | {ratios} | {err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
