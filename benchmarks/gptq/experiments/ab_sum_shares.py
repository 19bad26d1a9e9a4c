"""A/B in one run: split-K by fp16 atomics into a zeroed C (a memset node, then the adds) against split-K
where the last share of each tile sums the shares (``GPTQConfig.sum_shares``: no zeroing, one rounding),
for every (M, shape) whose default config on this GPU splits K; cuBLAS fp16 beside them. Methods take
turns in rounds, medians of CUDA-graph replays; ``--resident``: one weight copy (L2-resident, as
prefill.py times), else copies rotated past the L2 (as bench.py times).

    python3 benchmarks/gptq/experiments/ab_sum_shares.py [--m 16 64 128 256 512] [--shapes 0 1] \\
        [--rounds 5] [--resident]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import SHAPES, ab_cases, gpu_time_us, interleaved_medians, rel_err  # noqa: E402

from solutions.gptq import configs as gptq_configs  # noqa: E402
from solutions.gptq import gptq_matmul  # noqa: E402
from solutions.gptq.plans import plan_split_k  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, nargs="*", default=[1, 16, 32, 64, 128, 256, 512])
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--resident", action="store_true", help="one weight copy (L2-resident), as prefill.py")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ab_sum_shares.py needs a CUDA GPU; nothing to do.")
        return 0
    print(f"device {gptq_configs.device_name()}; weights {'resident' if args.resident else 'rotated past the L2'}")
    print("| M | K | N | config | splits | cuBLAS us | atomics us | sum shares us | atomics / sum | "
          "cuBLAS / sum | err atomics | err sum |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m, k, n, a, ref, copies, w16 in ab_cases(args.shapes, args.m):
        base = gptq_configs.select_config(m, k, n)
        splits = plan_split_k(k, base.block_k, base.split_k)[1]
        if splits < 2:
            continue
        if args.resident:
            copies, w16 = copies[:1], w16[:1]
        cfgs = {"atomics": dataclasses.replace(base, sum_shares=False),
                "sum": dataclasses.replace(base, sum_shares=True)}
        errs = {name: rel_err(gptq_matmul(a, copies[0], config=cfg), ref) for name, cfg in cfgs.items()}
        assert max(errs.values()) < 1e-2, errs
        calls = {"cublas": [lambda a=a, w=w: a @ w for w in w16]}
        for name, cfg in cfgs.items():
            calls[name] = [lambda a=a, w=w, cfg=cfg: gptq_matmul(a, w, config=cfg) for w in copies]
        min_calls = 4 if args.resident else 16
        med = interleaved_medians({name: lambda c=calls[name]: gpu_time_us(c, min_calls=min_calls)
                                   for name in calls}, args.rounds)
        tag = f"{base.block_m}x{base.block_n} w{base.num_warps} s{base.num_stages}{' tma' * base.tma_a}"
        print(f"| {m} | {k} | {n} | {tag} | {splits} | {med['cublas']:.1f} | {med['atomics']:.1f} | {med['sum']:.1f}"
              f" | {med['atomics'] / med['sum']:.3f} | {med['cublas'] / med['sum']:.2f} | {errs['atomics']:.1e}"
              f" | {errs['sum']:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
