"""Every reference kernel at its GPU size, against torch (the puzzle's own spec on the GPU).

    python benchmarks/run_all.py [--out benchmarks/results] [--puzzle N ...]   (or: make bench)

Needs a CUDA GPU; without one it says so and exits 0. For each puzzle with a performance size:
checks the reference against the spec at that size, times both with triton.testing.do_bench
(median), and reports GB/s (fewest bytes: each input read once, the output written once),
TFLOP/s where the puzzle counts FLOPs, and the fraction of this device's roofline, whose
ceilings (read, write and copy bandwidth, fp16 matmul rate, launch floor) are measured in the
same run. Writes a markdown table, a CSV and a PNG under --out/<device>/, with the device and the command beside them.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import platform
import re
import sys
from pathlib import Path

# Runs from a checkout without an install (as on a GPU box with its own torch): the course's packages are here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--puzzle", type=int, action="append")
    args = parser.parse_args()

    from cuda_here import cuda_available

    if not cuda_available():
        print("make bench needs a CUDA GPU: none here, nothing measured. "
              "(On a CPU, `python benchmarks/grading_speed.py` times the grader.)")
        return 0
    import torch
    import triton

    from puzzles.course import catalog
    from puzzles.course.spec import call_spec
    from puzzles.grading import perf
    from puzzles.grading.inputs import draw_inputs

    limits = perf.device_limits(refresh=True)
    rows = []
    for p in catalog.all_puzzles():
        if p.perf_size is None or (args.puzzle and p.number not in args.puzzle):
            continue
        if p.tensor_lists is not None:  # its kernel takes tables of tensors: test(..., perf=True) times it
            continue
        sizes = p.perf_size
        inputs, out = draw_inputs(p.spec, sizes, seed=p.number, device="cuda")
        kernel = p.reference()
        params = list(inspect.signature(kernel.fn).parameters)[len(inputs) + 1 :]
        kwargs = {name: sizes[name] for name in params}
        grid = p.grid(sizes)
        if p.output_init == "zeros":
            out.zero_()
        kernel[grid](*inputs, out, **kwargs)
        expected = call_spec(p.spec, inputs, sizes)
        error = ((out.double() - expected.double()).norm() / expected.double().norm().clamp_min(1e-30)).item()
        def launch(out=out, kernel=kernel, grid=grid, kwargs=kwargs, inputs=inputs, zero=p.output_init == "zeros"):
            if zero:  # accumulating kernels start from zero on every launch
                out.zero_()
            kernel[grid](*inputs, out, **kwargs)

        report = perf.measure(launch, p.spec, inputs, sizes, p.flops(sizes) if p.flops else 0, p.baseline)
        rows.append((p, report, error))
        print(f"{p.number:2d} {p.title:32s} {report.text()}  rel.err {error:.1e}", flush=True)

    device_dir = args.out / re.sub(r"[^A-Za-z0-9]+", "-", limits.device).strip("-").lower()
    device_dir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/run_all.py" + "".join(f" --puzzle {n}" for n in args.puzzle or [])
    header = (f"Device: {limits.device}; torch {torch.__version__}, triton {triton.__version__}, "
              f"python {platform.python_version()}\n"
              f"Measured ceilings: copy {limits.copy_gbps:.0f} GB/s (read {limits.read_gbps:.0f}, write "
              f"{limits.written_gbps:.0f}), fp16 matmul {limits.matmul_tflops:.0f} TFLOP/s, launch floor "
              f"{limits.launch_us:.1f} us\n"
              f"Command: {command}\n")
    table = ["| puzzle | size | reference us | torch us | speed-up | GB/s | TFLOP/s | % roofline | rel. error |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with open(device_dir / "reference_kernels.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["puzzle", "size", "reference_us", "torch_us", "gbps", "tflops", "roofline_fraction",
                         "rel_error"])
        for p, r, err in rows:
            size = " ".join(f"{k}={v}" for k, v in r.sizes.items())
            torch_us = r.torch_ms * 1000 if r.torch_ms else float("nan")
            table.append(f"| {p.number} {p.title} | {size} | {r.ms * 1000:.1f} | {torch_us:.1f} | "
                         f"{torch_us / (r.ms * 1000):.2f}x | {r.gbps:.0f} | {r.tflops:.1f} | "
                         f"{r.roofline_fraction:.0%} | {err:.1e} |")
            writer.writerow([p.number, size, r.ms * 1000, torch_us, r.gbps, r.tflops, r.roofline_fraction, err])
    (device_dir / "reference_kernels.md").write_text(header + "\n" + "\n".join(table) + "\n")
    _plot(rows, limits.device, command, device_dir / "reference_kernels.png")
    print("\n" + header + "\n" + "\n".join(table))
    print(f"\nwrote {device_dir}/reference_kernels.{{md,csv,png}}")
    return 0 if all(err < 1e-2 for _, _, err in rows) else 1


def _plot(rows, device: str, command: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"{p.number}" for p, _, _ in rows]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar(names, [r.roofline_fraction * 100 for _, r, _ in rows], color="#1976d2", label="reference kernel")
    ax.set_xlabel("puzzle")
    ax.set_ylabel("% of measured roofline")
    ax.set_title(f"Reference kernels on {device}", fontsize=11)
    fig.text(0.01, 0.01, command, fontsize=7, color="#555")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
