"""Where a lean decode step's time goes, kernel by kernel, as the GPU ran it (PDL overlaps included).

    python3 benchmarks/gptq/experiments/step_timeline.py --layers 16 --batch 1 8 --modes 25 0 --out $OUT/timeline

torch.profiler (CUPTI) records each kernel's start and end in a few replays of the step's CUDA graph.
With programmatic dependent launch a kernel starts while the one before it runs and waits in place,
so its duration says little; what it adds to the step is its *marginal* time, from the previous
kernel's end to its own. The marginal times of a replay add up to the step. Per kind of kernel
(each matmul by its projection, each small kernel by name): median duration, median marginal time,
median gap (start minus the previous end; negative: it was resident early), and for the matmuls the
weight bytes over the marginal time against the copy bandwidth. A mode is the kernels' PDL flags
(solutions/gptq/pdl.py; 25 is ``DECODE``, 0 none).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import copy_bandwidth, gptq_bytes  # noqa: E402
from decode import benchmark_llama, weight_bytes  # noqa: E402

from solutions.gptq.decode import GraphDecoder  # noqa: E402

# Which matmul a gptq launch is, from the step kernel just before it (decode.DecodeStep.run's order).
AFTER = {"norm_1": "qkv", "attend": "o", "norm_2": "gate_up", "silu": "down"}


def kernel_events(trace: Path) -> list[tuple[str, float, float]]:
    """(name, start us, end us) of every GPU kernel in a chrome trace, in start order."""
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
               if e.get("cat") == "kernel" and "dur" in e]
    return sorted(kernels, key=lambda k: k[1])


def label_step(names: list[str]) -> list[str]:
    """A label per kernel of the step: the matmuls by projection, the small kernels by role."""
    labels, norms_in_layer, previous = [], 0, ""
    for name in names:
        if "add_rms_norm" in name:
            norms_in_layer = norms_in_layer % 2 + 1
            label = f"norm_{norms_in_layer}"
        elif "rope_attend" in name:
            label = "attend"
        elif "silu_mul" in name:
            label = "silu"
            norms_in_layer = 0
        elif "greedy_pick" in name:
            label = "greedy_pick"
        elif "gptq_small_m" in name:
            label = AFTER.get(previous, "gptq?")
        elif "gemv" in name or "gemm" in name or "Kernel2" in name or "sm90" in name:
            label = "head"
        else:
            label = "other: " + name[:40]
        labels.append(label)
        previous = label
    return labels


def timeline(dec: GraphDecoder, trace: Path, replays: int) -> list[list[tuple[str, float, float]]]:
    """The kernels of each of ``replays`` replays (after one untraced), as (label, start, end) in us."""
    from torch.profiler import ProfilerActivity, profile

    dec.prefill(torch.randint(1, 1000, (dec.batch, 32), device="cuda"))
    dec.step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            dec.step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    kernels = kernel_events(trace)
    per = len(kernels) // replays
    steps = [kernels[i * per:(i + 1) * per] for i in range(replays)]
    return [list(zip(label_step([k[0] for k in step]), (k[1] for k in step), (k[2] for k in step), strict=True))
            for step in steps]


def summarize(steps: list[list[tuple[str, float, float]]], bandwidth: float, shapes: dict[str, int]) -> dict:
    """Median per label over the replays (the first kernel of each replay has no marginal time)."""
    duration, marginal, gap, count = defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(int)
    step_us = []
    for step in steps:
        per_step_marginal: dict[str, float] = defaultdict(float)
        for (label, start, end), (_, _, prev_end) in zip(step[1:], step[:-1], strict=True):
            duration[label].append(end - start)
            gap[label].append(start - prev_end)
            per_step_marginal[label] += end - prev_end
        for label, total in per_step_marginal.items():
            marginal[label].append(total)
        step_us.append(step[-1][2] - step[0][1])
        for label, _, _ in step:
            count[label] += 1
    rows = {}
    for label in sorted(marginal, key=lambda name: -statistics.median(marginal[name])):
        row = {"launches": count[label] // len(steps), "marginal_us": round(statistics.median(marginal[label]), 1),
               "median_duration_us": round(statistics.median(duration[label]), 2),
               "median_gap_us": round(statistics.median(gap[label]), 2)}
        if label in shapes:
            total_bytes = shapes[label] * row["launches"]
            row["bw_of_copy"] = round(total_bytes / (row["marginal_us"] * 1e-6) / bandwidth, 3)
        rows[label] = row
    return {"step_us": round(statistics.median(step_us), 1), "kernels": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--modes", type=int, nargs="*", default=[25, 0])
    parser.add_argument("--replays", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    config, fp16, int4 = benchmark_llama(args.layers)
    del fp16
    bandwidth = copy_bandwidth()
    hidden, inter, vocab = config.hidden_size, config.intermediate_size, config.vocab_size
    # The weights' bytes (gptq_bytes at M = 0: int4 words, scales, zeros).
    shapes = {"qkv": gptq_bytes(0, hidden, 3 * hidden), "o": gptq_bytes(0, hidden, hidden),
              "gate_up": gptq_bytes(0, hidden, 2 * inter), "down": gptq_bytes(0, inter, hidden),
              "head": hidden * vocab * 2}
    floor_us = weight_bytes(int4) / bandwidth * 1e6
    results = {"device": torch.cuda.get_device_name(), "copy_bandwidth_tbs": round(bandwidth / 1e12, 3),
               "floor_us": round(floor_us, 1), "runs": []}
    print(f"{results['device']}: copy {bandwidth / 1e12:.2f} TB/s, floor {floor_us:.1f} us", flush=True)
    for batch in args.batch:
        for mode in args.modes:
            dec = GraphDecoder(int4, batch, 32 + args.replays + 4, pdl=mode)
            summary = summarize(timeline(dec, args.out / f"trace_b{batch}_m{mode}.json", args.replays),
                                bandwidth, shapes)
            results["runs"].append({"batch": batch, "mode": mode, **summary})
            print(f"\nbatch {batch}, PDL {mode}: step {summary['step_us']} us ({summary['step_us'] / floor_us:.2f}x)")
            for label, row in summary["kernels"].items():
                print(f"  {label:12} {row}")
            del dec
            torch.cuda.empty_cache()
    (args.out / "timeline.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
