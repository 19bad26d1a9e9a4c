"""Programmatic dependent launch in the lean decode step: which form of it pays (solutions/gptq/pdl.py).

    python3 benchmarks/gptq/experiments/ab_pdl.py --layers 16 --batch 1 8 --variants 0 1 3 5 7 9 9:64:4 --rounds 5

A mode is the kernels' PDL constexpr: 0 off; 1 launched with PDL (each kernel waits for the previous
one first thing, lets the next start after its main loop or at its end); +2 the matmuls prefetch their
weight share into L2 before they wait; +4 the matmuls let the next kernel start first thing instead; +8
the step's other kernels do; +16, +32 or +48: the matmuls prefetch only their first 1, 2 or 3 K steps. A
variant is MODE or MODE:BLOCK_L:WARPS, the latter also setting rope_attend's loop block and warps
(decode_kernels.ATTEND_BLOCK_L / ATTEND_WARPS), then optionally /PROJ=FLAGS,... giving some matmuls other
flags (GraphDecoder's matmul_pdl; PROJ one of decode.PROJECTIONS), e.g. ``25/o=27`` (o_proj prefetches its
whole share). For each mode a GraphDecoder
of the same int4 16-layer Llama (decode.py's model) is captured; the modes take turns in each round, 64
replays timed together; medians. Also the step's matmuls alone as one graph (decode.linears_ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import copy_bandwidth  # noqa: E402
from decode import benchmark_llama, linears_ms, step_ms_in_turns, weight_bytes  # noqa: E402

from solutions.gptq import decode_kernels  # noqa: E402
from solutions.gptq.decode import GraphDecoder  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--variants", nargs="*", default=["0", "1", "3", "5", "7", "9"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", nargs="*", default=[],
                        help="variants to profile (torch.profiler, GPU time per kernel name per step)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 0
    config, fp16, int4 = benchmark_llama(args.layers)
    del fp16
    floor_ms = weight_bytes(int4) / copy_bandwidth() * 1e3
    print(f"{torch.cuda.get_device_name()}: int4 floor {floor_ms:.3f} ms", flush=True)
    results = []
    defaults = (decode_kernels.ATTEND_BLOCK_L, decode_kernels.ATTEND_WARPS)
    for batch in args.batch:
        ids = torch.randint(1, config.vocab_size, (batch, 32), device="cuda")
        decoders = {}
        for variant in args.variants:
            head, _, overrides = variant.partition("/")
            mode, *attend = (int(v) for v in head.split(":"))
            pairs = (item.split("=") for item in overrides.split(",") if item)
            matmul_pdl = {name: int(flags) for name, flags in pairs}
            decode_kernels.ATTEND_BLOCK_L, decode_kernels.ATTEND_WARPS = attend or defaults
            decoders[variant] = GraphDecoder(int4, batch, 32 + args.steps + 2, pdl=mode, matmul_pdl=matmul_pdl)
        decode_kernels.ATTEND_BLOCK_L, decode_kernels.ATTEND_WARPS = defaults
        tokens = {mode: dec.generate(ids, args.steps) for mode, dec in decoders.items()}
        times = step_ms_in_turns(decoders, ids, args.steps, args.rounds)
        base = tokens[args.variants[0]]
        for mode, dec in decoders.items():
            step = statistics.median(times[mode])
            row = {"batch": batch, "mode": mode, "pdl": dec.pdl, "step_ms": round(step, 4),
                   "step_over_floor": round(step / floor_ms, 3), "linears_ms": round(linears_ms(dec), 4),
                   "tokens_equal_first": bool(torch.equal(tokens[mode], base)),
                   "steps_ms": [round(t, 4) for t in times[mode]]}
            results.append(row)
            print(json.dumps(row), flush=True)
        for mode in map(str, args.profile):
            if mode in decoders:
                print(json.dumps({"batch": batch, "mode": mode, "kernels": kernel_times(decoders[mode])}), flush=True)
        del decoders
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"floor_ms": floor_ms, "rows": results}, indent=1))
    return 0


def kernel_times(dec, steps: int = 20) -> dict:
    """GPU time per step of each kernel name (us, and launches per step) over ``steps`` replays, and their sum."""
    from torch.profiler import ProfilerActivity, profile

    dec.prefill(torch.randint(1, 1000, (dec.batch, 32), device="cuda"))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            dec.step()
        torch.cuda.synchronize()
    rows = {}
    for event in prof.key_averages():
        if event.device_type.name == "CUDA" and event.count:
            total = getattr(event, "device_time_total", None) or event.cuda_time_total
            rows[event.key[:60]] = (round(total / steps, 1), event.count // steps)
    ordered = dict(sorted(rows.items(), key=lambda item: -item[1][0]))
    return {"sum_us": round(sum(v[0] for v in ordered.values()), 1), **ordered}


if __name__ == "__main__":
    sys.exit(main())
