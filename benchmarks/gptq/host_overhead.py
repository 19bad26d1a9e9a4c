"""Host (CPU) time per call of the GPTQ matmul against torch.matmul, eager and under CUDA graphs.

    python3 benchmarks/gptq/host_overhead.py --out benchmarks/gptq/results/NAME

For each shape and M, three numbers per method, side by side:

* ``host``: CPU time per call, issuing ``--calls`` calls back to back without waiting for the GPU
  (perf_counter around the loop, after a warm-up); what the Python side of a layer costs.
* ``eager``: wall time per call of the same loop including the final synchronize: what an eager
  model without CUDA graphs sees (the larger of host and GPU time, roughly).
* ``graph``: GPU time per call from CUDA-graph replays (``common.gpu_time_us``): no host cost.

Methods: ``matmul`` (fp16 torch.matmul on the dequantized weight), ``ours`` (gptq_matmul),
``op`` (torch.ops.gptq.matmul on registered weights, the custom op that torch.compile sees), ``module`` (GPTQLinear
called as a module). Each loop cycles through weight copies larger than twice the L2.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from common import copies_to_beat_l2, gpu_time_us, random_layer, start_gpu_run, write_report

from solutions.gptq import dequantize, gptq_matmul
from solutions.gptq.layer import GPTQLinear, _op_args, register_weight

SHAPES = ((4096, 4096), (4096, 11008), (11008, 4096), (8192, 28672))


def loop_times(calls, n_calls: int) -> tuple[float, float]:
    """(host us per call, eager wall us per call) over n_calls, cycling through ``calls``."""
    for call in calls:  # warm-up: plans, cuBLAS handles
        call()
    torch.cuda.synchronize()
    seq = [calls[i % len(calls)] for i in range(n_calls)]
    best_host, best_wall = float("inf"), float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for call in seq:
            call()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        best_host = min(best_host, (t1 - t0) / n_calls * 1e6)
        best_wall = min(best_wall, (t2 - t0) / n_calls * 1e6)
    return best_host, best_wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, nargs="*", default=[1, 16, 128])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    env = start_gpu_run("host_overhead.py", args.out)
    if env is None:
        return 0
    rows = []
    for k, n in SHAPES:
        copies = [random_layer(k, n, seed=s) for s in range(copies_to_beat_l2(k * n // 2))]
        w16 = [dequantize(c, torch.float16) for c in copies[: copies_to_beat_l2(k * n * 2)]]
        modules = [GPTQLinear(c) for c in copies]
        for m in args.m:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            op_args = [_op_args(register_weight(w)) for w in copies]
            methods = {
                "matmul": [lambda a=a, w=w: torch.matmul(a, w) for w in w16],
                "ours": [lambda a=a, w=w: gptq_matmul(a, w) for w in copies],
                "op": [lambda a=a, o=o: torch.ops.gptq.matmul(a, *o) for o in op_args],
                "module": [lambda a=a, mod=mod: mod(a) for mod in modules],
            }
            row = {"M": m, "K": k, "N": n}
            for name, calls in methods.items():
                host, wall = loop_times(calls, args.calls)
                row[f"{name}_host_us"], row[f"{name}_eager_us"] = host, wall
                row[f"{name}_graph_us"] = gpu_time_us(calls)
            rows.append(row)
            print(f"M={m:4d} K={k:6d} N={n:6d}  " + "  ".join(
                f"{x} host/eager/graph {row[x + '_host_us']:.1f}/{row[x + '_eager_us']:.1f}/{row[x + '_graph_us']:.1f}"
                for x in methods), flush=True)
        del copies, w16, modules
        torch.cuda.empty_cache()

    lines = [
        f"# GPTQ host overhead on {env['device']}",
        "",
        f"- command: `{env['command']}`; torch {env['torch']}, triton {env['triton']}",
        f"- host: CPU us per call over {args.calls} back-to-back calls (no sync inside; best of 5);"
        " eager: the same loop's wall time per call including the final sync; graph: GPU us per call"
        " from CUDA-graph replays. Weight copies cycled to exceed twice the L2.",
        "- matmul = fp16 torch.matmul (cuBLAS); ours = gptq_matmul; op = torch.ops.gptq.matmul;"
        " module = GPTQLinear(x)",
        "",
        "| M | K | N | matmul host | ours host | ours/matmul host | op host | module host | matmul eager |"
        " ours eager | module eager | matmul graph | ours graph |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['M']} | {r['K']} | {r['N']} | {r['matmul_host_us']:.1f} | {r['ours_host_us']:.1f} | "
            f"{r['ours_host_us'] / r['matmul_host_us']:.2f} | {r['op_host_us']:.1f} | {r['module_host_us']:.1f} | "
            f"{r['matmul_eager_us']:.1f} | {r['ours_eager_us']:.1f} | {r['module_eager_us']:.1f} | "
            f"{r['matmul_graph_us']:.1f} | {r['ours_graph_us']:.1f} |")
    write_report(args.out, "host_overhead", {"env": env, "rows": rows}, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
