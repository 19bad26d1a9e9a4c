"""Two side measurements behind benchmarks/gptq/NOTES.md, on one CUDA GPU (prints only):

    python3 benchmarks/gptq/experiments/probe.py

1. What the split-K zero-fill costs: ``out.zero_()`` alone, per call, in a CUDA graph.
2. How our kernel and cuBLAS at 128 x 8192 x 28672 (and M = 32) move with the SM clock: the two
   alternated, with nvidia-smi's clock, power and throttle reasons before and after, then again after
   3 s of heavy work and after 3 s idle.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import gpu_time_us, random_layer  # noqa: E402

from solutions.gptq import dequantize, gptq_matmul  # noqa: E402


def gpu_state() -> str:
    query = "clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"
    return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()


def zero_fill_cost() -> None:
    for m, n in ((128, 4096), (128, 11008), (16, 4096), (128, 28672)):
        outs = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in range(4)]
        print(f"zero_ of {m}x{n} fp16: {gpu_time_us([lambda o=o: o.zero_() for o in outs]):.2f} us per call (graph)")
    one = torch.empty(1, device="cuda")
    print(f"a one-element add, for scale: {gpu_time_us([lambda: one.add_(1)]):.2f} us per call (graph)")


def clock_sensitivity(k: int = 8192, n: int = 28672) -> None:
    w = random_layer(k, n)
    w16 = dequantize(w, torch.float16)
    for m in (128, 32):
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        gptq_matmul(a, w)
        for rnd in range(3):
            before = gpu_state()
            ours = gpu_time_us([lambda: gptq_matmul(a, w)])
            after = gpu_state()
            cublas = gpu_time_us([lambda: a @ w16])
            print(f"M={m} round {rnd}: ours {ours:.1f} us [{before} -> {after}]  cuBLAS {cublas:.1f} us", flush=True)
        end = time.time() + 3  # heat: the slow dequantize-then-matmul path for about 3 s
        while time.time() < end:
            a @ dequantize(w, torch.float16)
        torch.cuda.synchronize()
        for rnd in range(2):
            state = gpu_state()
            ours = gpu_time_us([lambda: gptq_matmul(a, w)])
            cublas = gpu_time_us([lambda: a @ w16])
            print(f"M={m} after heat {rnd}: ours {ours:.1f} us [{state}]  cuBLAS {cublas:.1f} us", flush=True)
        time.sleep(3)
        ours = gpu_time_us([lambda: gptq_matmul(a, w)])
        print(f"M={m} after 3 s idle: ours {ours:.1f} us [{gpu_state()}]", flush=True)


def main() -> int:
    if not torch.cuda.is_available():
        print("probe.py needs a CUDA GPU; nothing to do.")
        return 0
    zero_fill_cost()
    clock_sensitivity()
    return 0


if __name__ == "__main__":
    sys.exit(main())
