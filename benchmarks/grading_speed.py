"""How fast a learner's grading cell answers, on this machine (CPU, Triton's interpreter).

    python benchmarks/grading_speed.py [--repeat 5] [--out benchmarks/results/grading_speed.md]

For each classic puzzle: the median wall time of `test(reference, spec)` over --repeat runs (all
its sizes, access recording on, child process included). Then one cold run of the whole set in a
fresh process, imports included, and the peak resident memory of that process and its children.
Targets (issue "The engine"): each puzzle <= 1 s median; the set of twelve under Triton-Puzzles-
Lite's 7.4 s (measured by the issue's author on the same kind of machine); peak memory < 1 GiB.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

COLD_RUN = """
import time, resource
t0 = time.perf_counter()
import puzzles
from puzzles import test, catalog
ok = all(test(p.reference(), p.spec, quiet=True).passed for p in catalog.all_puzzles() if p.number <= 12)
wall = time.perf_counter() - t0
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(ok, wall, peak)
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = parser.parse_args()

    import puzzles
    from puzzles import catalog, test

    rows = []
    for p in catalog.all_puzzles():
        if p.number > 12:
            continue
        kernel = p.reference()
        test(kernel, p.spec, quiet=True)  # warm: first-call imports and AST rewriting
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = test(kernel, p.spec, quiet=True)
            times.append(time.perf_counter() - started)
            assert result.passed, str(result)
        rows.append((p, len(p.sizes), statistics.median(times), max(times)))

    cold = subprocess.run([sys.executable, "-c", COLD_RUN], capture_output=True, text=True, check=True)
    ok, wall, peak_kib = cold.stdout.split()
    lines = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"python {platform.python_version()}; puzzles on {'GPU' if puzzles.on_gpu() else 'CPU interpreter'}",
        f"Command: python benchmarks/grading_speed.py --repeat {args.repeat}",
        "",
        "| puzzle | sizes | median s | max s | target |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p, n, median, worst in rows:
        lines.append(f"| {p.number:2d} {p.title} | {n} | {median:.3f} | {worst:.3f} | "
                     f"{'ok' if median <= 1.0 else 'OVER 1 s'} |")
    lines += [
        "",
        f"Whole classic set, cold, one process, imports included: {float(wall):.2f} s "
        f"(target < 7.4 s; all passed: {ok})",
        f"Peak resident memory (process or child): {int(peak_kib) / 1024:.0f} MiB (target < 1024 MiB)",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
