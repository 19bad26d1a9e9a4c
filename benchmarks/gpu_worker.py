"""What the GPU worker costs a learner: its start-up and each grading cell's overhead (CUDA GPU).

    python benchmarks/gpu_worker.py [--repeat 5] [--puzzles N ...] [--out benchmarks/results/<device>/gpu_worker.md]

Learner kernels compiled for a GPU run in a worker process (puzzles/running/gpu_worker.py). Measured here:

- start-up: from starting a worker to its "ready" (torch, Triton and CUDA loaded, a trivial kernel
  compiled and launched), in the background of `import puzzles`; and one round trip to a ready worker;
- per puzzle: `test(reference, spec)` wall time, "first" (the kernel's first test() in this process:
  Triton's compile, its on-disk cache empty) and "warm" (the median of --repeat re-runs: the
  worker keeps the rebuilt kernel); "no access check" is `test(..., record=False)`, without the
  interpreter's access check that runs beside the GPU runs in a forked child (the worker's part
  alone); and the time the kernel itself took in the worker (all sizes, launch and sync);
- after a fault: how long until the next test() answers (the spare worker takes over; a new spare loads meanwhile).
Target (issue 20): a warm grading cell within 1 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="gpu-worker-bench-"))  # a cold compile
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
NO_GPU = "no CUDA GPU here: the GPU worker runs only on one"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--puzzles", type=int, nargs="*", help="puzzle numbers (default: every puzzle)")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = parser.parse_args()

    from cuda_here import cuda_available

    if not cuda_available():
        print(NO_GPU)
        return 0
    started = time.perf_counter()
    from puzzles import on_gpu, test
    from puzzles.course import catalog
    from puzzles.running import gpu_worker

    imported = time.perf_counter() - started
    if not on_gpu():
        print(NO_GPU)
        return 0
    worker = gpu_worker.worker()
    worker.ready()
    ready_after_import = time.perf_counter() - started
    fresh = time.perf_counter()
    process = gpu_worker.launch("cuda")  # a worker of its own: the one in use keeps its spare
    process.wait_ready()
    startup = time.perf_counter() - fresh
    process.end()
    trips = []
    for _ in range(20):
        reply = worker.call("os:getpid")
        trips.append(reply.seconds)
    lines = [f"# GPU worker on {worker.device_name}", "",
             f"`python benchmarks/gpu_worker.py --repeat {args.repeat}`; torch "
             f"{_version('torch')}, triton {_version('triton')}", "",
             f"- `import puzzles`: {imported:.2f} s; worker ready {ready_after_import:.2f} s after the import began "
             "(it loads in the background)",
             f"- a fresh worker's start-up (torch, Triton, CUDA, a warm-up kernel): {startup:.2f} s",
             f"- one round trip to a ready worker: {statistics.median(trips) * 1e3:.2f} ms (median of 20)", "",
             "| puzzle | sizes | first test() s | warm test() s (median) | warm, no access check s | "
             "kernel in worker s | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    worst = 0.0
    for number in args.puzzles or [p.number for p in catalog.all_puzzles()]:
        p = catalog.get(number)
        kernel = p.reference()
        t = time.perf_counter()
        first = test(kernel, p.spec, quiet=True)
        first_s = time.perf_counter() - t
        warm = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = test(kernel, p.spec, quiet=True)
            warm.append(time.perf_counter() - t)
        bare = []
        for _ in range(args.repeat):  # record=False: the GPU worker's part alone
            t = time.perf_counter()
            test(kernel, p.spec, quiet=True, record=False)
            bare.append(time.perf_counter() - t)
        in_worker = sum(o.seconds for o in result.outcomes)
        worst = max(worst, statistics.median(warm))
        verdict = "passed" if result.passed and first.passed else result.reason()[:60]
        lines.append(f"| {number} | {len(result.outcomes)} | {first_s:.2f} | {statistics.median(warm):.3f} | "
                     f"{statistics.median(bare):.3f} | {in_worker:.4f} | {verdict} |")
    # After a fault the spare worker (loaded meanwhile) takes over, and a new spare starts in the background.
    if worker.spare is not None:
        worker.spare.wait_ready()
    wild = _wild_kernel()
    t = time.perf_counter()
    faulted = test(wild, catalog.get(2).spec, quiet=True)
    fault_s = time.perf_counter() - t
    t = time.perf_counter()
    after = test(catalog.get(2).reference(), catalog.get(2).spec, quiet=True)
    after_s = time.perf_counter() - t
    lines += ["", f"Slowest warm median: {worst:.3f} s (target: within 1 s).", "",
              f"- a wild-pointer kernel (puzzle 2): verdict in {fault_s:.2f} s: {faulted.first_failure.reason()[:160]}",
              f"- the next test() (a correct kernel, the spare worker taking over): {after_s:.2f} s, "
              f"{'passed' if after.passed else 'FAILED'}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


def _version(name: str) -> str:
    return __import__(name).__version__


def _wild_kernel():
    source = '''
import triton
import triton.language as tl


@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets * 1000000000, tl.load(x_ptr + offsets, mask=offsets < N0))
'''
    path = Path(tempfile.mkdtemp()) / "wild_kernel.py"
    path.write_text(source)
    scope: dict = {}
    exec(compile(source, str(path), "exec"), scope)
    return scope["add_mask2_kernel"]


if __name__ == "__main__":
    sys.exit(main())
