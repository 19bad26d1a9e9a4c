"""Where the host time of one gptq_matmul call goes: each piece of the eager path timed on its own.

    python3 benchmarks/gptq/experiments/host_breakdown.py --out benchmarks/gptq/results/NAME

For a few shapes, CPU us per call (median over rounds of back-to-back calls, ``common.host_times``)
of: the allocations (``new_empty``, ``new_zeros``, ``new_empty`` + driver memset, the memset alone),
the plan key and lookup, the kernel launch five ways (Triton's ordinary ``kernel[grid](...)``; the
compiled launcher given tensors plus launch metadata and hook chains, as the first plans did; the
same given int addresses; ints and no hooks; the plan's fast launcher), the plan's hot call, the
whole ``gptq_matmul``, GPTQLinear, and the fp16 counterparts (``torch.matmul``, ``nn.Linear``).

GPU side of the zero-fill change: CUDA-graph GPU time per call (``common.gpu_time_us``, weight copies
beyond the L2) of the split-K kernel after ``new_zeros`` (fill kernel) against after the driver memset,
alternated twice; and a captured gptq_matmul with split-K replayed three times against the eager result
(a missing zero-fill would add the shares on top of the previous replay's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import copies_to_beat_l2, gpu_time_us, host_times, random_layer, start_gpu_run, write_report  # noqa: E402
from host_overhead import fp16_linear  # noqa: E402

from solutions.gptq import dequantize, gptq_matmul  # noqa: E402
from solutions.gptq.launch import driver_memset  # noqa: E402
from solutions.gptq.layer import GPTQLinear  # noqa: E402

CASES = ((1, 4096, 4096), (16, 4096, 11008), (128, 11008, 4096), (16, 8192, 28672))


def pieces(m: int, k: int, n: int) -> tuple[dict, dict]:
    """The closures to time for one shape, and facts about its plan."""
    from triton import knobs
    from triton.runtime import driver

    w = random_layer(k, n)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    gptq_matmul(a, w)
    gptq_matmul(a, w)  # compiled, hot
    (key, plan), = w.plan_cache.items()
    launch = plan.launches[0]
    mn, dev = plan.mn, launch.device
    get_stream = driver.active.get_current_stream
    d32 = driver_memset()
    c = a.new_zeros(mn)
    words = m * n // 2
    compiled = launch.compiled
    run, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    g = launch.grid
    g0, g1, g2 = g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1
    tensors = list(launch.args)
    tensors[0], tensors[plan.c_index] = a, c
    ints = [t.data_ptr() if isinstance(t, torch.Tensor) else t for t in tensors]
    runtime = knobs.runtime
    plans = w.plan_cache

    def jit():
        launch.fn[launch.grid](*tensors[: launch.n_positional], **launch.kwargs, **launch.options)

    def run_hooks(args):
        def call():
            stream = get_stream(dev)
            run(g0, g1, g2, stream, function, packed, compiled.launch_metadata((g0, g1, g2), stream, *args),
                runtime.launch_enter_hook, runtime.launch_exit_hook, *args)
        return call

    def run_nohooks():
        run(g0, g1, g2, get_stream(dev), function, packed, None, None, None, *ints)

    def fast():
        launch.fast(get_stream(dev), a.data_ptr(), c.data_ptr())

    def key_lookup():
        return plans.get((a.shape, a.stride(), a.data_ptr() % 16 == 0, a.get_device(), a.dtype))

    def empty_memset():
        t = a.new_empty(mn)
        d32(t.data_ptr(), 0, words, get_stream(dev))

    module = GPTQLinear(w)
    w16 = dequantize(w, torch.float16)
    linear = fp16_linear(w16)
    calls = {
        "new_empty": lambda: a.new_empty(mn),
        "new_zeros": lambda: a.new_zeros(mn),
        "new_empty + memset": empty_memset,
        "memset": lambda: d32(c.data_ptr(), 0, words, get_stream(dev)),
        "zero_()": c.zero_,
        "get_stream": lambda: get_stream(dev),
        "key + lookup": key_lookup,
        "launch: kernel[grid](...)": jit,
        "launch: run(tensors, metadata, hooks)": run_hooks(tensors),
        "launch: run(ints, metadata, hooks)": run_hooks(ints),
        "launch: run(ints, no hooks)": run_nohooks,
        "launch: plan fast": fast,
        "plan.hot": lambda: plan.hot(a),
        "gptq_matmul": lambda: gptq_matmul(a, w),
        "GPTQLinear": lambda: module(a),
        "torch.matmul fp16": lambda: torch.matmul(a, w16),
        "nn.Linear fp16": lambda: linear(a),
    }
    facts = {"splits": plan.splits, "atomic": plan.atomic, "direct launcher": launch.direct,
             "key": repr(key)}
    return {name: [f] for name, f in calls.items()}, facts


def zero_fill_gpu(m: int, k: int, n: int) -> dict:
    """GPU us per call under CUDA graphs, new_zeros + kernel vs memset + kernel; and graph replay correctness."""
    from triton.runtime import driver

    get_stream = driver.active.get_current_stream
    copies = [random_layer(k, n, seed=s) for s in range(copies_to_beat_l2(k * n // 2))]
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    plans = []
    for w in copies:
        gptq_matmul(a, w)
        gptq_matmul(a, w)
        plans.append(next(iter(w.plan_cache.values())))

    d32 = driver_memset()

    def fill(plan):
        def call():
            c = a.new_zeros(plan.mn)
            plan.launches[0].fast(get_stream(plan.launches[0].device), a.data_ptr(), c.data_ptr())
            return c
        return call

    def memset(plan):  # what the eager hot path does (under capture gptq_matmul itself uses the fill)
        def call():
            c = a.new_empty(plan.mn)
            stream = get_stream(plan.launches[0].device)
            d32(c.data_ptr(), 0, c.numel() // 2, stream)
            plan.launches[0].fast(stream, a.data_ptr(), c.data_ptr())
            return c
        return call

    old_calls = [fill(p) for p in plans]
    new_calls = [memset(p) for p in plans]
    times = {"new_zeros": [], "memset": []}
    for _ in range(2):
        times["new_zeros"].append(gpu_time_us(old_calls))
        times["memset"].append(gpu_time_us(new_calls))
    # A captured split-K call, replayed: each replay must zero C again.
    w = copies[0]
    eager = gptq_matmul(a, w).float()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gptq_matmul(a, w)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = gptq_matmul(a, w)
    errs = []
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        errs.append(((out.float() - eager).norm() / eager.norm()).item())
    return {"graph_new_zeros_us": times["new_zeros"], "graph_memset_us": times["memset"],
            "replay_rel_err": errs, "splits": plans[0].splits}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    env = start_gpu_run("host_breakdown.py", args.out)
    if env is None:
        return 0
    results = []
    for m, k, n in CASES:
        calls, facts = pieces(m, k, n)
        times = host_times(calls, args.calls, args.rounds)
        gpu = zero_fill_gpu(m, k, n)
        results.append({"M": m, "K": k, "N": n, "facts": facts, "host_us": {x: t[0] for x, t in times.items()},
                        "gpu": gpu})
        print(m, k, n, facts, {x: round(t[0], 2) for x, t in times.items()}, gpu, flush=True)
        torch.cuda.empty_cache()

    names = list(results[0]["host_us"])
    lines = [
        f"# Host time of the pieces of a gptq_matmul call on {env['device']}",
        "",
        f"- command: `{env['command']}`; torch {env['torch']}, triton {env['triton']}",
        f"- CPU us per call, median of {args.rounds} rounds of {args.calls} back-to-back calls (no sync inside),"
        " every piece once per round in rotated order",
        "",
        "| piece | " + " | ".join(f"M={r['M']} {r['K']}x{r['N']}" for r in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{r['host_us'][name]:.2f}" for r in results) + " |")
    lines += ["", "Plans: " + "; ".join(
        f"M={r['M']} {r['K']}x{r['N']}: split {r['facts']['splits']}, atomic {r['facts']['atomic']}, "
        f"direct launcher {r['facts']['direct launcher']}" for r in results), "",
        "GPU us per call under CUDA graphs (two alternations each), zero-fill by new_zeros vs driver memset;"
        " relative error of three replays of a captured split-K gptq_matmul against the eager result:", "",
        "| case | new_zeros + kernel | memset + kernel | replay rel. err |", "|---|---:|---:|---|"]
    for r in results:
        gpu = r["gpu"]
        lines.append(f"| M={r['M']} {r['K']}x{r['N']} (split {gpu['splits']}) | "
                     f"{' / '.join(f'{x:.2f}' for x in gpu['graph_new_zeros_us'])} | "
                     f"{' / '.join(f'{x:.2f}' for x in gpu['graph_memset_us'])} | "
                     f"{', '.join(f'{e:.1e}' for e in gpu['replay_rel_err'])} |")
    write_report(args.out, "host_breakdown", {"env": env, "results": results}, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
