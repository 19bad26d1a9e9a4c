"""A/B in one run: gptq_matmul (tuned configs) on the repacked weights (``qweight_mma``) and on the
plain AutoGPTQ layout, same weight copies, timed alternately as CUDA-graph replays.

    python3 benchmarks/gptq/experiments/ab_repack.py [--m 1 16] [--shapes 3 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import M_VALUES, SHAPES, copies_to_beat_l2, gpu_time_us, random_layer, rel_err  # noqa: E402

from solutions.gptq import dequantize, gptq_matmul  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, nargs="*", default=list(M_VALUES))
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ab_repack.py needs a CUDA GPU; nothing to do.")
        return 0
    print("| M | K | N | plain us | repacked us | plain/repacked | rel err | same bits |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for si in args.shapes:
        k, n = SHAPES[si]
        copies = [random_layer(k, n, seed=s) for s in range(copies_to_beat_l2(k * n // 2))]
        plain = [replace(c, qweight_mma=None) for c in copies]
        ref_w = dequantize(copies[0], torch.float32)
        for m in args.m:
            a = torch.randn(m, k, device="cuda").half()
            ref = a.float() @ ref_w
            out = gptq_matmul(a, copies[0])
            err = rel_err(out, ref)
            assert err < 1e-2, err
            same = torch.equal(gptq_matmul(a, copies[0], deterministic=True),
                               gptq_matmul(a, plain[0], deterministic=True))
            for w in plain:
                gptq_matmul(a, w)
            t = {"plain": [], "repacked": []}
            for _ in range(args.rounds):
                t["plain"].append(gpu_time_us([lambda a=a, w=w: gptq_matmul(a, w) for w in plain]))
                t["repacked"].append(gpu_time_us([lambda a=a, w=w: gptq_matmul(a, w) for w in copies]))
            p, r = min(t["plain"]), min(t["repacked"])
            print(f"| {m} | {k} | {n} | {p:.1f} | {r:.1f} | {p / r:.3f} | {err:.1e} | {same} |", flush=True)
        del copies, plain, ref_w
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
