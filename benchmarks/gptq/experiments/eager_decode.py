"""The script behind results/h100_decode16/eager_profile/ (its printout output.txt, the profiles prof_*.txt):

    PYTHONPATH=$PWD python3 benchmarks/gptq/experiments/eager_decode.py 16     (argument: layers)

Eager decode: fp16 vs int4 interleaved in rounds (medians), then torch.profiler around one generate
(9 new tokens, batch 8) per model after a warm-up. decode.py --rounds now does the first part.
"""
import json
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/gptq: decode.py
from decode import benchmark_llama, timed_generate  # noqa: E402

out = os.environ.get("OUT", "/tmp")
layers = int(sys.argv[1]) if len(sys.argv) > 1 else 16
_, fp16, int4 = benchmark_llama(layers)
models = {"fp16": fp16, "int4": int4}
T = 32
for batch in (1, 8, 32):
    ids = torch.randint(1, 32000, (batch, 32), device="cuda")
    for m in models.values():
        for _ in range(2):
            timed_generate(m, ids, 1 + T, disable_compile=True)
    res = {n: [] for n in models}
    for _ in range(5):
        for n, m in models.items():
            full = timed_generate(m, ids, 1 + T, disable_compile=True)
            first = timed_generate(m, ids, 1, disable_compile=True)
            res[n].append((full - first) / T * 1e3)
    med = {n: statistics.median(v) for n, v in res.items()}
    spread = {n: [round(min(v), 2), round(max(v), 2)] for n, v in res.items()}
    print(json.dumps({"batch": batch, "ms_per_step": med, "spread": spread,
                      "int4_over_fp16_speed": med["fp16"] / med["int4"]}), flush=True)
ids = torch.randint(1, 32000, (8, 32), device="cuda")
for n, m in models.items():
    timed_generate(m, ids, 9, disable_compile=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        timed_generate(m, ids, 9, disable_compile=True)
    ka = prof.key_averages()
    txt = (ka.table(sort_by="self_cpu_time_total", row_limit=25) + "\n\n"
           + ka.table(sort_by="self_cuda_time_total", row_limit=20))
    open(f"{out}/prof_{n}_b8.txt", "w").write(txt)
    tot_cpu = sum(e.self_cpu_time_total for e in ka) / 1e3
    tot_gpu = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) for e in ka) / 1e3
    print(n, f"profiled generate(9 tokens) b8: self CPU total {tot_cpu:.1f} ms, self GPU total {tot_gpu:.1f} ms",
          flush=True)
