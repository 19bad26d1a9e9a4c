"""Offline tuner for gptq_matmul: times candidate configs per (M bucket, K, N) on the GPU.

    python3 benchmarks/gptq/tune.py --out DIR [--budget-s 420] [--m 16 32 64 128] [--shapes 0 1 2 3 4]
                                    [--extra] [--include BEST.json] [--candidates JSON]

Every candidate is first checked against an fp32 reference (rel. error < 1e-2), then timed with
triton.testing.do_bench (median; L2 flushed between runs, weight copies rotated). Writes
DIR/tune.jsonl (every measurement) and DIR/best.json (fastest per key), and prints the winners
as Python lines for solutions/gptq/configs.py. M <= 16 shares one kernel (BLOCK_M = 16), so it is
tuned at M = 16 and the winner serves the buckets 1..16.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch
from common import SHAPES, buckets_for, copies_to_beat_l2, environment, gptq_bytes, gpu_time_us, random_layer

from solutions.gptq import GPTQConfig, dequantize, gptq_matmul


def candidates(m: int, extra: bool = False) -> list[GPTQConfig]:
    """Configs worth timing for one M bucket (G = 128, so BLOCK_K <= 128 keeps one group per step).

    The swapped kernel keeps its weights in wgmma's register fragment only with 4 warps per 128
    rows of N (checked in the SASS: other shapes add a shared-memory round trip), hence the pairs.
    ``extra`` is the second round: finer splits and register caps around the first round's winners
    (M <= 16), and for M >= 32 the swapped kernel's tile shapes with and without scaling after the dot.
    """
    out = []
    if m <= 16 and not extra:
        for bn, stages, split, regs in itertools.product((128, 256), (3, 4), (1, 2, 4, 8, 16), (None, 128)):
            if not (bn == 256 and regs):
                out.append(GPTQConfig(16, bn, 128, 8, split, 8 if bn == 256 else 4, stages, maxnreg=regs))
    elif m <= 16:
        for stages, split, regs in itertools.product((2, 3), (3, 4, 6, 8, 12, 16), (96, 128)):
            out.append(GPTQConfig(16, 128, 128, 8, split, 4, stages, maxnreg=regs))
        for stages, split, regs in itertools.product((3, 4), (4, 8, 16), (None, 128)):
            out.append(GPTQConfig(16, 128, 64, 8, split, 4, stages, maxnreg=regs))
    elif not extra:
        for swap in (True, False):
            bms = ((m,) if swap else (max(64, m),)) if m <= 64 else (64, 128)
            bks = (128,) if swap else (64, 128)
            for bm, bn, bk, warps, split in itertools.product(bms, (128, 256), bks, (4, 8), (1, 2, 4, 8)):
                if swap and bm > 64 or (split == 8 and m > 32) or (bm == 128 and bk == 128 and warps == 4):
                    continue
                out.append(GPTQConfig(bm, bn, bk, 8, split, warps, 3, swap_ab=swap))
    else:
        # Swapped kernel on the repacked weights (BLOCK_K = 128), scaling the weights or the MMA
        # result: the first keeps the MMA asynchronous and needs fewer registers (more programs per SM).
        bms = (m,) if m <= 64 else (64, 128)
        for bm, bn, scale_after, stages, split in itertools.product(bms, (64, 128), (True, False), (2, 3),
                                                                     (1, 2, 4, 8)):
            if (bm == 64 and bn == 64 and m > 64) or (split == 8 and m > 64) or (split == 1 and m > 32):
                continue
            warps = 8 if bm == 128 and bn == 128 else 4
            out.append(GPTQConfig(bm, bn, 128, 8, split, warps, stages, scale_after_dot=scale_after))
    return out


def _json_list(text: str) -> list:
    """A JSON list given inline or as the path of a file that holds it."""
    return json.loads(text if text.lstrip().startswith("[") else Path(text).read_text())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--m", type=int, nargs="*", default=[16, 32, 64, 128])
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--extra", action="store_true", help="second round: the extra candidates")
    parser.add_argument("--include", type=Path, help="a previous best.json whose winners compete again")
    parser.add_argument("--candidates", type=_json_list,
                        help="configs to time instead of the built-in lists: a JSON list or a file holding one, "
                             'e.g. [{"block_m": 64, "split_k": 8}] (missing fields take GPTQConfig\'s defaults)')
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("tune.py needs a CUDA GPU; nothing to do.")
        return 0

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tune_env.json").write_text(json.dumps(environment(), indent=1))
    log = (args.out / "tune.jsonl").open("a")
    t_start = time.time()
    best: dict[str, dict] = {}
    previous = json.loads(args.include.read_text()) if args.include else {}
    given = [GPTQConfig(**c) for c in args.candidates or []]
    layers: dict[tuple[int, int], tuple[list, torch.Tensor]] = {}
    for m in args.m:  # the most important bucket first: a spent budget cuts the tail
        for si in args.shapes:
            k, n = SHAPES[si]
            if (k, n) not in layers:
                copies = [random_layer(k, n, seed=s) for s in range(copies_to_beat_l2(k * n // 2))]
                layers[(k, n)] = (copies, dequantize(copies[0], torch.float32))
            copies, w_ref = layers[(k, n)]
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = a.float() @ w_ref
            key = f"{m},{k},{n}"
            w16 = [dequantize(c, torch.float16) for c in copies[:2]]
            cublas_us = gpu_time_us([lambda a=a, w=w: a @ w for w in w16], warmup=5, rep=20)
            del w16
            again = [GPTQConfig(**previous[key]["cfg"])] if key in previous else []
            if m < 16 and f"16,{k},{n}" in previous:
                again.append(GPTQConfig(**previous[f"16,{k},{n}"]["cfg"]))
            for cfg in again + (given or candidates(m, args.extra)):
                if time.time() - t_start > args.budget_s:
                    break
                rec = {"m": m, "k": k, "n": n, "cfg": cfg.__dict__}
                try:
                    out = gptq_matmul(a, copies[0], config=cfg)
                    err = ((out.float() - ref).norm() / ref.norm()).item()
                    rec["rel_err"] = err
                    if not err < 1e-2:
                        rec["error"] = "wrong result"
                    else:
                        calls = [lambda a=a, w=w, cfg=cfg: gptq_matmul(a, w, config=cfg) for w in copies]
                        us = gpu_time_us(calls, warmup=5, rep=20)
                        rec["us"] = us
                        rec["gbps"] = gptq_bytes(m, k, n) / (us * 1e-6) / 1e9
                except Exception as e:  # noqa: BLE001 - a config may not compile (shared memory): record it
                    rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                log.write(json.dumps(rec) + "\n")
                log.flush()
                if "us" in rec and (key not in best or rec["us"] < best[key]["us"]):
                    best[key] = rec
            if key in best:
                b = best[key]
                b["cublas_us"] = cublas_us
                print(f"M={m:4d} K={k:6d} N={n:6d}: {b['us']:8.1f} us {b['gbps']:6.0f} GB/s (cuBLAS {cublas_us:.1f} us)"
                      f"  {b['cfg']}", flush=True)
            (args.out / "best.json").write_text(json.dumps(best, indent=1))
    (args.out / "best.json").write_text(json.dumps(best, indent=1))
    print("\n# for solutions/gptq/configs.py: TUNED entries")
    for key, b in best.items():
        m, k, n = map(int, key.split(","))
        fields = ", ".join(f"{name}={value!r}" for name, value in b["cfg"].items()
                           if value != getattr(GPTQConfig(), name) or name in ("block_m", "block_n", "block_k"))
        for bucket in buckets_for(m, k, n, best):
            print(f"    ({bucket}, {k}, {n}): GPTQConfig({fields}),  # {b['us']:.1f} us")
    print(f"tuning took {time.time() - t_start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
