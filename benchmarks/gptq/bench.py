"""GPTQ int4 matmul benchmark on one CUDA GPU: our kernel against cuBLAS and the usual alternatives.

    python3 benchmarks/gptq/bench.py --out benchmarks/gptq/results/NAME [--m 1 16] [--shapes 0 3] [--configs F]

Shapes: M in {1, 2, 4, 8, 16, 32, 64, 128} x (K, N) in {(4096, 4096), (4096, 11008), (11008, 4096),
(8192, 28672), (28672, 8192)}, group size 128, gptq format. Methods, timed in one run:

* ``ours``      gptq_matmul with the tuned configs of solutions/gptq/configs.py
* ``cublas``    fp16 torch.matmul on the dequantized weight
* ``published`` the published split-K configuration (BLOCK 16 x 32 x 128, GROUP_M 8, SPLIT_K 4) run as
                a config of our kernel (unswapped, like the original: ``configs.PUBLISHED_SPLIT_K``) on
                the plain qweight, only where K % (128 * 4) == 0, the shapes the original kernel (no
                masks) computes correctly
* ``int4pack``  torch._weight_int4pack_mm (tinygemm, bf16 activations) where this torch has it
* ``deq_mm``    dequantize in torch (unpack, subtract, scale) then fp16 torch.matmul

The weight copies are loaded with ``keep_plain=True``: the published baseline and deq_mm read the plain
qweight as a checkpoint stores it (``ours`` reads the repacked copy either way).

Timing: each method is captured in a CUDA graph that cycles through enough weight copies to
exceed twice the 50 MB L2, and triton.testing.do_bench (which also flushes L2) times its replays;
we report the median per call. The graph removes Python launch costs, as a decoding loop would.
Bytes: K*N/2 (weights) + scales + zeros + A + C; the roofline is a large device-to-device copy
measured in the same run (bytes read + written). Every method's output is checked against an
fp32 reference. Without CUDA the script prints a message and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import sys
from pathlib import Path

import torch
from common import (
    GROUP,
    M_VALUES,
    SHAPES,
    copies_to_beat_l2,
    copy_bandwidth,
    environment,
    gptq_bytes,
    gpu_time_us,
    load_config_overrides,
    random_layer,
    rel_err,
)

from solutions.gptq import GPTQWeight, dequantize, gptq_matmul, unpack_int4_along_k, unpack_int4_along_n
from solutions.gptq import configs as gptq_configs

PUBLISHED = gptq_configs.PUBLISHED_SPLIT_K
METHODS = ("ours", "cublas", "published", "int4pack", "deq_mm")


def torch_dequantize_fp16(w: GPTQWeight) -> torch.Tensor:
    """The dequantize-then-matmul baseline's first half, in plain torch ops on the GPU."""
    shifts = torch.arange(0, 32, 4, device=w.scales.device, dtype=torch.int32).view(1, 8, 1)
    q = ((w.plain_qweight().unsqueeze(1) >> shifts) & 0xF).reshape(w.k, w.n)
    z = ((w.qzeros.unsqueeze(2) >> shifts.view(1, 1, 8)) & 0xF).reshape(-1, w.n) + w.zero_offset
    groups = torch.arange(w.k, device=q.device) // w.group_size
    return ((q - z[groups]).half() * w.scales[groups])


def int4pack_operands(w: GPTQWeight, inner_k_tiles: int = 8):
    """torch's tinygemm layout for the same weights: w = (q - 8) * scale + zero, bf16 scale/zero."""
    q = unpack_int4_along_k(w.plain_qweight())  # (K, N)
    z = unpack_int4_along_n(w.qzeros) + w.zero_offset  # (K / G, N)
    s = w.scales.float()
    q_nk = q.t().contiguous()
    packed_u8 = ((q_nk[:, ::2] << 4) | q_nk[:, 1::2]).to(torch.uint8)
    packed = torch._convert_weight_to_int4pack(packed_u8, inner_k_tiles)
    scale_zero = torch.stack([s, (8 - z).float() * s], dim=2).to(torch.bfloat16).contiguous()
    return packed, scale_zero


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="results folder (created)")
    parser.add_argument("--m", type=int, nargs="*", default=list(M_VALUES))
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))),
                        help="indices into " + str(SHAPES))
    parser.add_argument("--configs", type=Path, help="tune.py best.json to use instead of configs.TUNED")
    parser.add_argument("--replot", action="store_true",
                        help="measure nothing: rewrite results.md and plot.png from --out's results.csv and env.json")
    args = parser.parse_args()
    if args.replot:
        replot(args.out)
        return 0
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU (none found); nothing was measured.")
        return 0
    if args.configs:
        load_config_overrides(args.configs)
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment()
    env["date_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    bw = copy_bandwidth()
    env["copy_bandwidth_GBps"] = f"{bw / 1e9:.0f}"
    print(f"{env['device']}: torch {env['torch']}, triton {env['triton']}; copy bandwidth {bw / 1e9:.0f} GB/s",
          flush=True)
    has_int4pack = hasattr(torch, "_weight_int4pack_mm") and hasattr(torch, "_convert_weight_to_int4pack")

    rows = []
    for si in args.shapes:
        k, n = SHAPES[si]
        # Each method reads one of a copy's two packed forms (repacked or plain): the rotation still beats the L2.
        copies = [random_layer(k, n, seed=s, keep_plain=True) for s in range(copies_to_beat_l2(k * n // 2))]
        ref_w = dequantize(copies[0], torch.float32)
        w16 = [dequantize(c, torch.float16) for c in copies[: copies_to_beat_l2(k * n * 2)]]
        packs = []
        if has_int4pack:
            try:
                packs = [int4pack_operands(c) for c in copies]
            except Exception as e:  # noqa: BLE001 - this torch's tinygemm may not take this layout
                print(f"int4pack unavailable for K={k} N={n}: {type(e).__name__}: {e}", file=sys.stderr)
        for m in args.m:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = a.float() @ ref_w
            cfg = gptq_configs.select_config(m, k, n)
            methods = {
                "ours": [lambda a=a, w=w: gptq_matmul(a, w) for w in copies],
                "cublas": [lambda a=a, w=w: a @ w for w in w16],
                "deq_mm": [lambda a=a, w=w: a @ torch_dequantize_fp16(w) for w in copies],
            }
            if k % (PUBLISHED.block_k * PUBLISHED.split_k) == 0:
                methods["published"] = [lambda a=a, w=w: gptq_matmul(a, w, config=PUBLISHED) for w in copies]
            if packs:
                a_bf16 = a.bfloat16()
                methods["int4pack"] = [lambda a=a_bf16, p=p: torch._weight_int4pack_mm(a, p[0], GROUP, p[1])
                                       for p in packs]
            row = {"M": m, "K": k, "N": n, "bytes": gptq_bytes(m, k, n), "config": json.dumps(cfg.__dict__)}
            for name, calls in methods.items():
                try:
                    row[f"{name}_err"] = rel_err(calls[0](), ref)
                    row[f"{name}_us"] = gpu_time_us(calls)
                except Exception as e:  # noqa: BLE001 - record and go on: one baseline must not stop the run
                    print(f"{name} failed at M={m} K={k} N={n}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
            us = row["ours_us"]
            row["ours_GBps"] = row["bytes"] / (us * 1e-6) / 1e9
            row["ours_roofline"] = row["bytes"] / (us * 1e-6) / bw
            row["speedup_vs_cublas"] = row.get("cublas_us", float("nan")) / us
            rows.append(row)
            print(f"M={m:4d} K={k:6d} N={n:6d}  ours {us:7.1f} us {row['ours_roofline'] * 100:5.1f}% roofline  "
                  + "  ".join(f"{x} {row[x + '_us']:7.1f}" for x in METHODS[1:] if x + "_us" in row), flush=True)
        del copies, w16, packs, ref_w
        torch.cuda.empty_cache()

    write_results(args.out, rows, env)
    return 0


def write_results(out: Path, rows: list[dict], env: dict[str, str]) -> None:
    fields = ["M", "K", "N", "bytes"] + [f"{x}_{s}" for x in METHODS for s in ("us", "err")]
    fields += ["ours_GBps", "ours_roofline", "speedup_vs_cublas", "config"]
    with (out / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    (out / "env.json").write_text(json.dumps(env, indent=1))

    def cell(row: dict, key: str, fmt: str = "{:.1f}") -> str:
        return fmt.format(row[key]) if key in row else "n/a"

    lines = [
        "# GPTQ int4 matmul on " + env["device"],
        "",
        f"- command: `{env['command']}`",
        f"- torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}, {env['sms']} SMs, {env['date_utc']}",
        f"- roofline: device-to-device copy measured in this run, {env['copy_bandwidth_GBps']} GB/s (read + write)",
        "- bytes = K*N/2 + scales + zeros + A + C (G = 128); times are medians per call over CUDA-graph replays",
        "  cycling through weight copies larger than twice the L2 (triton.testing.do_bench, L2 flushed per replay)",
        "- published = the published split-K config (16x32x128, group 8, split 4) run as a config of our kernel,",
        "  only where K % 512 == 0 (the original has no masks); int4pack = torch._weight_int4pack_mm (bf16 A)",
        "",
        "| M | K | N | ours us | GB/s | % roofline | cuBLAS fp16 us | x cuBLAS | published us | int4pack us "
        "| deq+mm us | ours rel err |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['M']} | {r['K']} | {r['N']} | {r['ours_us']:.1f} | {r['ours_GBps']:.0f} | "
            f"{r['ours_roofline'] * 100:.1f} | {cell(r, 'cublas_us')} | {r['speedup_vs_cublas']:.2f} | "
            f"{cell(r, 'published_us')} | {cell(r, 'int4pack_us')} | {cell(r, 'deq_mm_us')} | "
            f"{cell(r, 'ours_err', '{:.1e}')} |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    plot(out, rows, env)
    print("\n".join(lines))


def replot(out: Path) -> None:
    """Rebuild the table and the figure of an earlier run from its CSV (the numbers are not touched)."""
    with (out / "results.csv").open() as f:
        rows = [{key: (value if key == "config" else float(value)) for key, value in row.items() if value != ""}
                for row in csv.DictReader(f)]
    for row in rows:
        for key in ("M", "K", "N", "bytes"):
            row[key] = int(row[key])
    write_results(out, rows, json.loads((out / "env.json").read_text()))


def plot(out: Path, rows: list[dict], env: dict[str, str]) -> None:
    try:
        import matplotlib
    except ImportError:  # the numbers are written already; --replot draws the figure where matplotlib is
        print("matplotlib not installed: no plot.png (bench.py --replot draws it from results.csv)")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = sorted({(r["K"], r["N"]) for r in rows}, key=lambda s: s[0] * s[1])
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.2 * len(shapes), 4), squeeze=False)
    for ax, (k, n) in zip(axes[0], shapes, strict=True):
        sub = sorted((r for r in rows if (r["K"], r["N"]) == (k, n)), key=lambda r: r["M"])
        for i, name in enumerate(METHODS):
            pts = [(r["M"], r[name + "_us"]) for r in sub if name + "_us" in r]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", color=f"C{i}", label=name)
        floor = [(r["M"], r["bytes"] / float(env["copy_bandwidth_GBps"]) / 1e3) for r in sub]
        ax.plot(*zip(*floor, strict=True), "k--", label="copy-bandwidth floor")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"K={k} N={n}")
        ax.set_xlabel("M")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("us per call (median)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle(f"GPTQ int4 (G=128) on {env['device']}; torch {env['torch']}, triton {env['triton']}")
    fig.tight_layout()
    fig.savefig(out / "plot.png", dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
