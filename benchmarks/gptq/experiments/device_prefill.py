"""Per-device prefill choices (configs.DEVICE_TABLES): every fused config and ws tile worth trying at a few
(M, shape) rows, timed as benchmarks/gptq/prefill.py times them (one weight copy, CUDA-graph replays of 4
calls, the candidates taking turns in rounds, medians), then optionally prefill.py itself with this GPU's
table set to the winners (what configs.DEVICE_TABLES then gets, entry for entry).

    python3 benchmarks/gptq/experiments/device_prefill.py --rows 256,0 512,0 256,1 --rounds 5 \\
        [--json OUT.json] [--then-prefill --out DIR --shapes 0 1 --rounds 3]

``--rows``: M,SHAPE (an index into common.SHAPES); ``--ws-extra``: ws tiles beside the built-in ones.
Everything after ``--then-prefill`` goes to prefill.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings
from common import SHAPES, resident_layer, time_candidates  # noqa: E402

from solutions.gptq import GPTQConfig, configs, gptq_matmul, ws_prefill  # noqa: E402
from solutions.gptq.configs import WSTile  # noqa: E402

# Fused: the swapped kernel, 8 warps, 128 x 128 weight tiles (the prefill entries of TUNED and around them).
FUSED = [GPTQConfig(bm, 128, 128, 8, split, 8, stages, tma_a=tma)
         for bm, split, stages, tma in ((256, 4, 3, False), (256, 8, 3, False), (256, 2, 3, False), (256, 1, 3, False),
                                        (128, 2, 3, False), (128, 2, 4, False), (128, 4, 3, False), (128, 8, 3, False),
                                        (128, 1, 4, True), (128, 1, 3, True), (128, 2, 4, True),
                                        (128, 2, 3, True), (128, 4, 4, True), (64, 4, 4, True), (64, 2, 4, True))]
WS = [WSTile(128, 3), WSTile(128, 4), WSTile(256, 2), WSTile(256, 3), WSTile(128, 4, True), WSTile(256, 3, True)]


def label(choice: GPTQConfig | WSTile) -> str:
    if isinstance(choice, WSTile):
        return f"ws {choice.block_m}/{choice.stages}{'/sk' * choice.stream_k}"
    return (f"fused {choice.block_m}x{choice.block_n} s{choice.num_stages} split{choice.split_k}"
            + " tma" * choice.tma_a)


def measure(rows: list[tuple[int, int]], rounds: int) -> list[dict]:
    results = []
    for m, si in rows:
        k, n = SHAPES[si]
        (w,), w_ref, (w16,) = resident_layer(k, n)
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        ref = a.float() @ w_ref
        calls = {"cublas": lambda a=a, w16=w16: a @ w16}
        choices: dict[str, GPTQConfig | WSTile] = {}
        for cfg in FUSED:
            choices[label(cfg)] = cfg
            calls[label(cfg)] = lambda a=a, w=w, cfg=cfg: gptq_matmul(a, w, config=cfg)
        for tile in WS:
            choices[label(tile)] = tile
            calls[label(tile)] = lambda a=a, w=w, t=tile: ws_prefill.gptq_matmul_ws(a, w, *t)
        med = time_candidates(calls, ref, rounds, f"M={m} K={k} N={n}")
        ranked = sorted((us, name) for name, us in med.items() if name != "cublas")
        best = choices[ranked[0][1]]
        results.append({"m": m, "k": k, "n": n, "cublas_us": med["cublas"], "us": dict(med), "best": ranked[0][1],
                        "best_choice": best._asdict() if isinstance(best, WSTile) else best.__dict__})
        del w, w_ref, w16
        torch.cuda.empty_cache()
    return results


def table_of(results: list[dict]) -> configs.DeviceTables:
    """The overrides these winners give: a ws tile, or no ws tile and the fused config."""
    tables = configs.DeviceTables(tuned={}, ws_tiles={})
    for r in results:
        key = (configs.m_bucket(r["m"]), r["k"], r["n"])
        if "stream_k" in r["best_choice"]:
            tables.ws_tiles[key] = WSTile(**r["best_choice"])
        else:
            tables.ws_tiles[key] = None
            tables.tuned[key] = GPTQConfig(**r["best_choice"])
    return tables


def main() -> int:
    argv = sys.argv[1:]
    rest = argv[argv.index("--then-prefill") + 1:] if "--then-prefill" in argv else None
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--ws-extra", nargs="*", default=[],
                        help="more ws tiles to time: BLOCK_M,STAGES or BLOCK_M,STAGES,sk (stream-K), e.g. 64,4 64,4,sk")
    args = parser.parse_args(argv[: len(argv) - len(rest) - 1] if rest is not None else argv)
    if not torch.cuda.is_available():
        print("device_prefill.py needs a CUDA GPU; nothing to do.")
        return 0
    fragment = next((f for f in configs.DEVICE_TABLES if f in configs.device_name()), None)
    print(f"device {configs.device_name()}: DEVICE_TABLES entry {fragment!r}", flush=True)
    rows = [tuple(int(x) for x in row.split(",")) for row in args.rows]
    for spec in args.ws_extra:
        block_m, stages, *sk = spec.split(",")
        WS.append(WSTile(int(block_m), int(stages), sk == ["sk"]))
    try:  # compile the fused candidates in parallel first (tune.py's worker pool)
        from tune import precompile

        precompile([(cfg, m) for cfg in FUSED for m, _ in rows], 16)
    except Exception as error:  # noqa: BLE001 - they compile one by one below instead
        print(f"precompile failed ({error}); compiling serially", flush=True)
    results = measure(rows, args.rounds)
    tables = table_of(results)
    print("\nwinners as DEVICE_TABLES overrides:")
    print(f"  tuned = {tables.tuned}\n  ws_tiles = {tables.ws_tiles}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    if rest is None:
        return 0
    if fragment is None:
        print("no DEVICE_TABLES entry for this GPU: prefill.py not run with overrides")
        return 1
    current = configs.DEVICE_TABLES[fragment]
    configs.DEVICE_TABLES[fragment] = configs.DeviceTables({**current.tuned, **tables.tuned},
                                                           {**current.ws_tiles, **tables.ws_tiles})
    import prefill

    sys.argv = ["benchmarks/gptq/prefill.py", *rest]
    return prefill.main()


if __name__ == "__main__":
    sys.exit(main())
