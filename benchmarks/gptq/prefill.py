"""Prefill-sized GPTQ matmuls (M = 256..4096): each method of gptq_matmul against cuBLAS fp16.

    python3 benchmarks/gptq/prefill.py --out benchmarks/gptq/results/NAME [--m 256 512] [--shapes 0 3]

Methods, GPU time per call from CUDA-graph replays (``common.gpu_time_us``):

* ``cublas``  fp16 torch.matmul on the dequantized weight
* ``fused``   gptq_matmul(method="fused"): the dequantize-and-multiply kernel with its default config
              (``configs.select_config``: the tuned prefill buckets M = 256..4096 where there are any)
* ``dequant`` gptq_matmul(method="dequant"): W dequantized into an fp16 temporary in column chunks
              of at most ``plans.DEQUANT_CHUNK_BYTES``, each chunk multiplied with cuBLAS
* ``ws``      gptq_matmul(method="ws"): the warp-specialised Gluon kernel (solutions/gptq/ws_prefill.py,
              Hopper only; tile from ``configs.ws_tile``, or the default tile where that says None)
* ``auto``    gptq_matmul() as shipped: the method it picks (column ``chosen``: ws where ``configs.ws_tile``
              gives a tile and the GPU is a Hopper, else ``configs.select_method``)

Each output is checked against an fp32 reference. The methods take turns in ``--rounds`` rounds and each
time is the median (identical work measured minutes apart differs by up to 8% on the H100).

By default one copy of the weights serves every call, so they stay in L2 where they fit (the fp16 W of
4096 x 4096 is 32 MiB: cuBLAS then reads it from L2). ``--rotate`` cycles through copies totalling at least
twice the L2, as bench.py does and as a model's forward sees them (each layer's weights read once).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from common import (
    SHAPES,
    gpu_time_us,
    interleaved_medians,
    rel_err,
    resident_layer,
    rotated_layers,
    start_gpu_run,
    write_report,
)

from solutions.gptq import configs as gptq_configs
from solutions.gptq import gptq_matmul
from solutions.gptq import plans as gptq_plans

M_VALUES = (256, 512, 1024, 2048, 4096)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--m", type=int, nargs="*", default=list(M_VALUES))
    parser.add_argument("--shapes", type=int, nargs="*", default=list(range(len(SHAPES))))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rotate", action="store_true", help="weights rotated past the L2 (as bench.py), not resident")
    args = parser.parse_args()
    env = start_gpu_run("prefill.py", args.out)
    if env is None:
        return 0
    env["DEQUANT_CHUNK_BYTES"] = gptq_plans.DEQUANT_CHUNK_BYTES
    env["weights"] = "rotated past the L2" if args.rotate else "one copy (L2-resident where it fits)"
    rows = []
    for si in args.shapes:
        k, n = SHAPES[si]
        copies, w_ref, w16s = (rotated_layers if args.rotate else resident_layer)(k, n)
        w = copies[0]
        for m in args.m:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = a.float() @ w_ref
            methods = {  # a call per weight copy
                "cublas": [lambda a=a, w16=w16: a @ w16 for w16 in w16s],
                "fused": [lambda a=a, w=c: gptq_matmul(a, w, method="fused") for c in copies],
                "dequant": [lambda a=a, w=c: gptq_matmul(a, w, method="dequant") for c in copies],
                "auto": [lambda a=a, w=c: gptq_matmul(a, w) for c in copies],
            }
            if gptq_plans.ws_choice(a, w, explicit=True):
                methods["ws"] = [lambda a=a, w=c: gptq_matmul(a, w, method="ws") for c in copies]
            cfg = gptq_configs.select_config(m, k, n)
            tile = gptq_plans.ws_choice(a, w, explicit=False)
            chosen = (f"ws {tile.block_m}/{tile.stages}{'/sk' * tile.stream_k}" if tile
                      else gptq_configs.select_method(m, k, n))
            row = {"M": m, "K": k, "N": n, "chosen": chosen,
                   "fused_cfg": f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k} w{cfg.num_warps} s{cfg.num_stages}"
                                f" split{cfg.split_k}"}
            for name, calls in methods.items():
                row[f"{name}_err"] = rel_err(calls[0](), ref)
            medians = interleaved_medians({name: lambda c=calls: gpu_time_us(c, min_calls=4, warmup=10, rep=60)
                                           for name, calls in methods.items()}, args.rounds)
            for name, value in medians.items():
                row[f"{name}_us"] = value
            for name in methods:
                row[f"{name}_x_cublas"] = row["cublas_us"] / row[f"{name}_us"]
            rows.append(row)
            print(f"M={m:5d} K={k:6d} N={n:6d} cublas {row['cublas_us']:8.1f}  "
                  + "  ".join(f"{name} {row[name + '_us']:8.1f} ({row[name + '_x_cublas']:.2f}x)"
                              for name in ("fused", "dequant", "ws", "auto") if name in methods)
                  + f"  [{row['chosen']}]  {row['fused_cfg']}", flush=True)
        del w, copies, w_ref, w16s
        torch.cuda.empty_cache()
    lines = [
        f"# GPTQ prefill (M = 256..4096) on {env['device']}",
        "",
        f"- command: `{env['command']}`; torch {env['torch']}, triton {env['triton']}",
        f"- GPU us per call from CUDA-graph replays, median of {args.rounds} rounds in which the methods take turns;"
        f" weights: {env['weights']};"
        f" dequant chunk <= {env['DEQUANT_CHUNK_BYTES'] >> 20} MiB of fp16 W;"
        " ws = the warp-specialised kernel (method='ws'; - where it cannot run);"
        " auto = gptq_matmul() as shipped, using the method in column `chosen`;"
        " fused config: BLOCK_M x BLOCK_N x BLOCK_K, warps, stages, split-K",
        "- x cuBLAS = cuBLAS time / method time (>= 1: as fast or faster)",
        "",
        "| M | K | N | cuBLAS us | fused us | x cuBLAS | dequant+cuBLAS us | x cuBLAS | ws us | x cuBLAS | chosen "
        "| auto us | x cuBLAS | auto err | fused config |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        ws = f"{r['ws_us']:.1f} | {r['ws_x_cublas']:.2f}" if "ws_us" in r else "- | -"
        lines.append(f"| {r['M']} | {r['K']} | {r['N']} | {r['cublas_us']:.1f} | {r['fused_us']:.1f} | "
                     f"{r['fused_x_cublas']:.2f} | {r['dequant_us']:.1f} | {r['dequant_x_cublas']:.2f} | {ws} | "
                     f"{r['chosen']} | {r['auto_us']:.1f} | {r['auto_x_cublas']:.2f} | {r['auto_err']:.1e} | "
                     f"{r['fused_cfg']} |")
    write_report(args.out, "prefill", {"env": env, "rows": rows}, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
