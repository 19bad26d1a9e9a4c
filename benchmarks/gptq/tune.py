"""Offline tuner for gptq_matmul: times candidate configs per (M bucket, K, N) on the GPU.

    python3 benchmarks/gptq/tune.py --out DIR [--budget-s 420] [--m 16 32 64 128] [--shapes 0 1 2 3 4]
                                    [--kn 4096,12288 ...] [--extra] [--include BEST.json] [--candidates JSON]
                                    [--jobs 16] [--zeroed-out]

Every candidate is first checked against an fp32 reference (rel. error < 1e-2), then timed with
triton.testing.do_bench (median; L2 flushed between runs, weight copies rotated). Writes
DIR/tune.jsonl (every measurement) and DIR/best.json (fastest per key), and prints the winners
as Python lines for solutions/gptq/configs.py. M <= 16 shares one kernel (BLOCK_M = 16), so it is
tuned at M = 16 and the winner serves the buckets 1..16.

Prefill buckets (M >= 256) time the large-tile candidates (:func:`large_m_candidates`), the M = 128
winner of the shape, dequantize-then-cuBLAS (``method="dequant"``) and cuBLAS fp16, and print the
per-shape method table (``DEQUANT_FROM``). ``--jobs`` compiles every candidate first in that many
processes (each compile takes seconds; the kernels do not depend on the shape beyond what the
proxy shape shares with the real ones: multiples of 128, 16-byte alignment).

``--kn`` adds shapes by value (K,N) beside the ``--shapes`` indices into common.SHAPES, e.g. the fused
q/k/v (4096,12288) and gate/up (4096,22016) of the lean decoder. ``--zeroed-out`` times each call as
solutions/gptq/decode.py makes it: into a preallocated output taken as zeroed (``out_zeroed=True``), so a
split-K config's time has no zero-fill kernel in it (the decode step zeroes that buffer inside another
kernel); without it, a split-K call's time includes its fill (a graph node, as in any captured caller).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch
import triton
from common import SHAPES, buckets_for, copies_to_beat_l2, environment, gptq_bytes, gpu_time_us, random_layer, rel_err

from solutions.gptq import GPTQConfig, dequantize, gptq_matmul
from solutions.gptq.configs import LARGE_M_BUCKETS, TUNED

SMS = 132  # H100 SXM: only bounds the split-K candidates


def large_m_candidates(m: int, k: int, n: int) -> list[GPTQConfig]:
    """Prefill tiles (M >= 256): the swapped kernel on the repacked weights with 8 warps (two warpgroups of
    64 rows of W^T each, words loaded in wgmma's row order), BLOCK_M = 128 or 256 rows of A per weight
    tile, 2-4 stages (256 x 128 x 128 fp16 A tiles take 64 KB a stage: 3 fit in shared memory); split-K
    only where the tiles alone leave SMs idle (one program per SM at these tiles). Then the tiles that read
    A through the TMA engine (``tma_a``): 128 x 128 and 128 x 256 (W^T rows x A rows), 3-4 stages."""
    out = []
    for bm, stages in ((128, 2), (128, 3), (128, 4), (256, 2), (256, 3)):
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, 128)
        for split in (1, 2, 4):
            if split == 1 or (tiles * split <= 2 * SMS and k // split >= 1024):
                out.append(GPTQConfig(bm, 128, 128, 8, split, 8, stages))
    for bn, stages in ((128, 3), (128, 4), (256, 3), (256, 4)):
        out.append(GPTQConfig(128, bn, 128, 8, 1, 8, stages, tma_a=True))
    return out


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


_PROXY: dict = {}


def _precompile(cfg: GPTQConfig, m: int) -> str | None:
    """Compile ``cfg`` into Triton's on-disk cache by running it once on a 1024 x 1024 layer at this M (a
    worker process; the benchmark shapes specialise the same way, and M only by M = 1 and M % 16). None,
    or the error."""
    try:
        if not _PROXY:
            _PROXY["w"] = random_layer(1024, 1024)
        if m not in _PROXY:
            _PROXY[m] = torch.randn(m, 1024, device="cuda", dtype=torch.float16)
        gptq_matmul(_PROXY[m], _PROXY["w"], config=cfg)
        torch.cuda.synchronize()
        return None
    except Exception as e:  # noqa: BLE001 - reported, and the config is timed (and fails) later anyway
        return f"{type(e).__name__}: {str(e)[:200]}"


def precompile(cases: list[tuple[GPTQConfig, int]], jobs: int) -> None:
    """Compile the distinct (config, M) cases in ``jobs`` processes (Triton compiles one kernel per process
    at a time). M matters only as Triton specialises it: 1, a multiple of 16, or neither."""
    import multiprocessing

    distinct = list(dict.fromkeys((cfg, 1 if m == 1 else 16 if m % 16 == 0 else m) for cfg, m in cases))
    t0 = time.time()
    with multiprocessing.get_context("spawn").Pool(min(jobs, len(distinct))) as pool:
        errors = pool.starmap(_precompile, distinct, chunksize=1)
    for (cfg, _), err in zip(distinct, errors, strict=True):
        if err:
            print(f"precompile {cfg}: {err}", file=sys.stderr)
    print(f"precompiled {len(distinct)} configs in {time.time() - t0:.0f} s", flush=True)


def _json_list(text: str) -> list:
    """A JSON list given inline or as the path of a file that holds it."""
    return json.loads(text if text.lstrip().startswith("[") else Path(text).read_text())


def timed_call(a: torch.Tensor, weight, cfg: GPTQConfig, zeroed_out: bool):
    """One call of ``cfg`` to time: as any caller makes it, or into a preallocated output taken as zeroed
    (what it holds after many replays does not matter for the time)."""
    if not zeroed_out:
        return lambda: gptq_matmul(a, weight, config=cfg)
    out = a.new_zeros((a.shape[0], weight.n))
    return lambda: gptq_matmul(a, weight, config=cfg, out=out, out_zeroed=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--m", type=int, nargs="*", default=[16, 32, 64, 128])
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--kn", nargs="*", default=[], help="more shapes as K,N pairs (e.g. 4096,12288)")
    parser.add_argument("--zeroed-out", action="store_true",
                        help="time calls into a preallocated output taken as zeroed (no split-K zero-fill)")
    parser.add_argument("--extra", action="store_true", help="second round: the extra candidates")
    parser.add_argument("--include", type=Path, help="a previous best.json whose winners compete again")
    parser.add_argument("--jobs", type=int, default=0, help="precompile every candidate in this many processes")
    parser.add_argument("--candidates", type=_json_list,
                        help="configs to time instead of the built-in lists: a JSON list or a file holding one, "
                             'e.g. [{"block_m": 64, "split_k": 8}] (missing fields take GPTQConfig\'s defaults)')
    args = parser.parse_args()
    shapes = [SHAPES[i] for i in args.shapes] + [tuple(int(x) for x in kn.split(",")) for kn in args.kn]
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

    def configs_for(m: int, k: int, n: int) -> list[GPTQConfig]:
        key = f"{m},{k},{n}"
        again = [GPTQConfig(**previous[key]["cfg"])] if key in previous else []
        if m < 16 and f"16,{k},{n}" in previous:
            again.append(GPTQConfig(**previous[f"16,{k},{n}"]["cfg"]))
        if m in LARGE_M_BUCKETS and (128, k, n) in TUNED:
            again.append(TUNED[(128, k, n)])  # the config these M got before the prefill buckets
        if given:
            return again + given
        return again + (large_m_candidates(m, k, n) if m in LARGE_M_BUCKETS else candidates(m, args.extra))

    if args.jobs:
        precompile([(c, m) for m in args.m for k, n in shapes for c in configs_for(m, k, n)], args.jobs)
    layers: dict[tuple[int, int], tuple[list, torch.Tensor]] = {}
    for m in args.m:  # the most important bucket first: a spent budget cuts the tail
        for k, n in shapes:
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
            dequant_us = None
            if m in LARGE_M_BUCKETS and time.time() - t_start <= args.budget_s:
                out = gptq_matmul(a, copies[0], method="dequant")
                assert rel_err(out, ref) < 1e-2
                dequant_us = gpu_time_us([lambda a=a, w=w: gptq_matmul(a, w, method="dequant") for w in copies],
                                         warmup=5, rep=20)
                log.write(json.dumps({"m": m, "k": k, "n": n, "method": "dequant", "us": dequant_us,
                                      "cublas_us": cublas_us}) + "\n")
            for cfg in configs_for(m, k, n):
                if time.time() - t_start > args.budget_s:
                    break
                rec = {"m": m, "k": k, "n": n, "cfg": cfg.__dict__}
                try:
                    out = gptq_matmul(a, copies[0], config=cfg)
                    err = rel_err(out, ref)
                    rec["rel_err"] = err
                    if not err < 1e-2:
                        rec["error"] = "wrong result"
                    else:
                        calls = [timed_call(a, w, cfg, args.zeroed_out) for w in copies]
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
                if dequant_us is not None:
                    b["dequant_us"] = dequant_us
                dq = f", dequant {dequant_us:.1f} us" if dequant_us is not None else ""
                print(f"M={m:4d} K={k:6d} N={n:6d}: {b['us']:8.1f} us {b['gbps']:6.0f} GB/s (cuBLAS {cublas_us:.1f} us"
                      f"{dq})  {b['cfg']}", flush=True)
            (args.out / "best.json").write_text(json.dumps(best, indent=1))
    (args.out / "best.json").write_text(json.dumps(best, indent=1))
    print("\n# for solutions/gptq/configs.py: TUNED entries")
    for key, b in best.items():
        m, k, n = map(int, key.split(","))
        fields = ", ".join(f"{name}={value!r}" for name, value in b["cfg"].items()
                           if value != getattr(GPTQConfig(), name) or name in ("block_m", "block_n", "block_k"))
        for bucket in buckets_for(m, k, n, best):
            print(f"    ({bucket}, {k}, {n}): GPTQConfig({fields}),  # {b['us']:.1f} us")
    print("\n# for solutions/gptq/configs.py: DEQUANT_FROM (smallest measured M from which dequant was faster)")
    for k, n in shapes:
        faster = [m for m in sorted(args.m) if f"{m},{k},{n}" in best and "dequant_us" in best[f"{m},{k},{n}"]
                  and best[f"{m},{k},{n}"]["dequant_us"] < best[f"{m},{k},{n}"]["us"]]
        print(f"    ({k}, {n}): {faster[0] if faster else None},  # dequant faster at M = {faster}")
    print(f"tuning took {time.time() - t_start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
