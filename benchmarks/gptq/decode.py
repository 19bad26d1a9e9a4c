"""A transformers Llama with GPTQLinear layers: correctness against its dequantized twin, and decode tokens/s.

    python3 benchmarks/gptq/decode.py --out benchmarks/gptq/results/NAME [--layers 2] [--batch 1 8 32]
        [--modes lean compiled eager] [--configs BEST.json ...]

The model is ``LlamaForCausalLM`` built from a config (hidden 4096, intermediate 11008, 32 heads,
``--layers`` blocks, vocab 32000) with random weights, in fp16 on the GPU; no download. Its
``nn.Linear`` layers (not ``lm_head``) are quantized by ``quantize_linears`` (our round-to-nearest
quantizer, G = 128). Checks: logits of the int4 model against the same model with every GPTQLinear
replaced by an fp16 ``nn.Linear`` holding the dequantized weight.

Decode speed: ``generate`` with greedy decoding and a fixed number of new tokens; decode time =
time(1 + T new tokens) - time(1 new token) (the prompt's prefill cancels), tokens/s = batch x T /
decode time, the median of ``--rounds`` measurements. ``eager``: the default dynamic cache, no
compilation. ``compiled``: a static cache and transformers' compile of the decoding forward with
``CompileConfig(fullgraph=True, mode="reduce-overhead")`` (inductor + CUDA graphs), the custom op
``gptq::matmul`` inside the graph.
Eager steps are host-bound and the host's speed drifts, so in eager mode fp16 and int4 take turns in
every round; compiled models are measured one after the other (each compiles and records its graphs).
``lean``: :class:`solutions.gptq.decode.GraphDecoder`, the whole greedy step one CUDA graph (q/k/v and
gate/up fused, its Triton kernels launched with programmatic dependent launch on Hopper; ``lean-nopdl``:
without PDL; ``lean-unfused``: the model's own linears), prefill by the model's forward; a step's time
is T replays timed together (host clock, synchronized), the decoders of both models taking turns in each
round. Its tokens are compared with ``generate``'s on the same prompts: the eager static-cache
``generate`` always, the compiled one when ``compiled`` is measured in the same run (first differing
new token, if any). Each step is also set against its weight-read floor (the bytes of the weights over
the copy bandwidth). The report is written after each mode, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path

import torch
from common import copy_bandwidth, gpu_time_us, load_config_overrides, start_gpu_run, write_report

from solutions.gptq.layer import GPTQLinear, dequantize_linears, quantize_linears


def timed_generate(model, ids, new_tokens: int, **kwargs) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, **kwargs)
    torch.cuda.synchronize()
    assert out.shape[1] == ids.shape[1] + new_tokens
    return time.perf_counter() - t0


def generate_kwargs(compiled: bool) -> dict:
    if compiled:
        try:
            from transformers import CompileConfig
        except ImportError:
            from transformers.generation import CompileConfig
        return dict(cache_implementation="static", compile_config=CompileConfig(fullgraph=True,
                                                                                 mode="reduce-overhead"))
    return dict(disable_compile=True)


def step_seconds(model, ids, new_tokens: int, kwargs: dict) -> float:
    """One measurement of a decode step: (time of 1 + T new tokens - time of 1) / T."""
    full = timed_generate(model, ids, 1 + new_tokens, **kwargs)
    return (full - timed_generate(model, ids, 1, **kwargs)) / new_tokens


def generated(model, ids, new_tokens: int, **kwargs) -> torch.Tensor:
    """The ids (B, T + new_tokens) of a greedy ``generate``."""
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                          min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, **kwargs)


def decode_tps(models: dict, ids: torch.Tensor, new_tokens: int, compiled: bool, rounds: int,
               tokens: dict | None = None) -> dict:
    """Tokens/s of each model: the median step of ``rounds`` rounds, the models taking turns in each
    round (so that a slow stretch of the host hits all of them). Compiled models are measured one after
    the other instead (each with its own dynamo state, reset afterwards). ``tokens``: filled with each
    model's greedy ids for ``ids`` (1 + new_tokens new ones)."""
    kwargs = generate_kwargs(compiled)
    batch = ids.shape[0]
    steps: dict[str, list[float]] = {name: [] for name in models}
    errors: dict[str, str] = {}
    order = [[name] for name in models] if compiled else [list(models)]
    for names in order:
        try:
            for name in names:
                for _ in range(2):  # warm-up: compilation, CUDA-graph recording, plans
                    timed_generate(models[name], ids, 1 + new_tokens, **kwargs)
            for _ in range(rounds):
                for name in names:
                    steps[name].append(step_seconds(models[name], ids, new_tokens, kwargs))
            if tokens is not None:
                for name in names:
                    tokens[name] = generated(models[name], ids, 1 + new_tokens, **kwargs)
        except Exception as e:  # noqa: BLE001 - record and go on to the next model
            for name in names:
                errors[name] = f"{type(e).__name__}: {str(e)[:300]}"
        if compiled:
            torch._dynamo.reset()
    out = {f"{name}_tps": batch / statistics.median(v) for name, v in steps.items() if v and name not in errors}
    out.update({f"{name}_error": err for name, err in errors.items()})
    return out


def first_difference(out: torch.Tensor, ref: torch.Tensor, prompt: int) -> int | None:
    """The index (among the new tokens) of the first column where the two id tensors differ, None if equal."""
    differs = (out[:, prompt:] != ref[:, prompt:]).any(0).nonzero()
    return None if differs.numel() == 0 else int(differs[0])


def step_ms_in_turns(decoders: dict, ids: torch.Tensor, steps: int, rounds: int) -> dict[str, list[float]]:
    """Milliseconds per step of each decoder (GraphDecoder-like: prefill, step), ``steps`` replays after a
    prefill of ``ids`` timed together, in ``rounds`` rounds in which the decoders take turns."""
    times: dict[str, list[float]] = {name: [] for name in decoders}
    for _ in range(rounds):
        for name, dec in decoders.items():
            dec.prefill(ids)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                dec.step()
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - t0) / steps * 1e3)
    return times


def lean_rows(models: dict, ids: torch.Tensor, new_tokens: int, rounds: int, fuse: bool, pdl: bool | None,
              ref_tokens: dict | None = None, ref_logits: dict | None = None) -> tuple[dict, dict]:
    """Tokens/s of GraphDecoder for each model (median of ``rounds``, the models taking turns), and its
    ids for ``ids`` (1 + new_tokens new ones) per model. With generate's ids and logits: the step's
    logits teacher-forced on generate's tokens (:func:`teacher_forced`)."""
    from solutions.gptq.decode import GraphDecoder

    batch, prompt = ids.shape
    decoders = {name: GraphDecoder(model, batch, prompt + new_tokens + 1, fuse=fuse, pdl=pdl)
                for name, model in models.items()}
    for dec in decoders.values():  # warm-up
        dec.generate(ids, 1 + new_tokens)
    steps = step_ms_in_turns(decoders, ids, new_tokens, rounds)
    out = {f"{name}_tps": batch / statistics.median(v) * 1e3 for name, v in steps.items()}
    out.update({f"{name}_linears_ms": round(linears_ms(dec), 3) for name, dec in decoders.items()})
    tokens = {name: dec.generate(ids, 1 + new_tokens) for name, dec in decoders.items()}
    if ref_tokens is not None and ref_logits is not None:
        for name, dec in decoders.items():
            out[f"{name}_teacher_forced"] = teacher_forced(dec, ref_tokens[name], ref_logits[name], prompt)
    del decoders
    torch.cuda.empty_cache()
    return out, tokens


def linears_ms(dec) -> float:
    """GPU time of a step's matmuls alone: the decoder's own linear calls at the step's shapes, one CUDA
    graph (L2 flushed before each replay). The rest of a step is its other kernels and the gaps. Split-K
    outputs that the step's small kernels zero (``Linears.zero``) are not zeroed here: the matmuls only."""
    b, hidden = dec.batch, dec.embed.shape[1]
    x = torch.randn(b, hidden, device="cuda", dtype=torch.float16)
    attn = torch.randn(b, dec.heads * dec.head_dim, device="cuda", dtype=torch.float16)
    act = torch.randn(b, dec.model.config.intermediate_size, device="cuda", dtype=torch.float16)

    def call():
        for layer in dec.layers:
            layer.qkv(x)
            layer.o(attn)
            layer.gate_up(x)
            layer.down(act)
        dec.head(x)

    return gpu_time_us([call], min_calls=1, warmup=5, rep=50) / 1e3


def teacher_forced(dec, ref_tokens: torch.Tensor, ref_logits: torch.Tensor, prompt: int) -> str:
    """The lean step's logits against generate's at every new token j >= 1, each step fed generate's own
    previous tokens (prefill of the first prompt + j - 1 ids, then one replay on id prompt + j - 1):
    median relative error, and argmax agreement over all rows and steps; where the argmax differs,
    the gap between generate's two candidates in generate's logits, against its logits' spread."""
    errors, agree, total, gaps = [], 0, 0, []
    for j in range(1, ref_logits.shape[0]):
        dec.prefill(ref_tokens[:, : prompt + j - 1])
        dec.ids.copy_(ref_tokens[:, prompt + j - 1])
        dec.step()
        ours, ref = dec.logits.float(), ref_logits[j].float()
        errors.append(((ours - ref).norm() / ref.norm()).item())
        same = ours.argmax(-1) == ref.argmax(-1)
        agree += int(same.sum())
        total += same.numel()
        for row in (~same).nonzero().flatten().tolist():
            gaps.append((ref[row].max() - ref[row, ours[row].argmax()]).item() / ref[row].std().item())
    text = f"logits rel err median {statistics.median(errors):.1e} (max {max(errors):.1e}), argmax {agree}/{total}"
    if gaps:
        text += f"; where it differs, generate's gap is {max(gaps):.3f} std of its logits or less"
    return text


def compare_tokens(rows: list[dict], lean_tokens: dict, references: dict, reference_logits: dict,
                   prompt: int) -> None:
    """Add to each lean row, per model and reference, whether its ids equal generate's, else the first
    differing new token (and, against the eager reference, the gap there between generate's pick and
    ours in generate's logits, in std of those logits); and whether generate's two paths agree."""
    for row in rows:
        batch = row["batch"]
        for name, tokens in lean_tokens.get((row["mode"], batch), {}).items():
            for label, by_batch in references.items():
                ref = by_batch.get(batch, {}).get(name)
                if ref is None:
                    continue
                diff = first_difference(tokens, ref, prompt)
                text = "equal" if diff is None else f"differs from new token {diff}"
                logits = reference_logits.get(batch, {}).get(name) if label == "generate_eager_static" else None
                if diff is not None and logits is not None:
                    r = int((tokens[:, prompt + diff] != ref[:, prompt + diff]).nonzero()[0])
                    step = logits[diff, r]
                    gap = (step[ref[r, prompt + diff]] - step[tokens[r, prompt + diff]]).item() / step.std().item()
                    text += f" (row {r}: gap {gap:.3f} std of generate's logits)"
                row[f"{name}_vs_{label}"] = text
        for name in ("fp16", "int4"):
            eager = references["generate_eager_static"].get(batch, {}).get(name)
            compiled = references["generate_compiled"].get(batch, {}).get(name)
            if row["mode"] == "compiled" and eager is not None and compiled is not None:
                diff = first_difference(compiled, eager, prompt)
                row[f"{name}_compiled_vs_eager_static"] = "equal" if diff is None else f"differs from new token {diff}"


def benchmark_llama(layers: int) -> tuple:
    """(config, fp16 model, int4 copy): this benchmark's Llama (hidden 4096, intermediate 11008, 32 heads,
    ``layers`` blocks, vocab 32000), random weights from seed 0, on the GPU; its nn.Linear layers quantized."""
    import transformers

    config = transformers.LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=layers,
                                      num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                                      max_position_embeddings=4096)
    torch.manual_seed(0)
    with torch.device("cuda"):
        fp16 = transformers.LlamaForCausalLM(config).half().eval()
    return config, fp16, quantize_linears(copy.deepcopy(fp16), group_size=128)


def weight_bytes(model: torch.nn.Module) -> int:
    """Bytes a decode step reads in full: every parameter and buffer except the embedding table
    (of which a step reads one row per sequence)."""
    skip = {id(t) for mod in model.modules() if isinstance(mod, torch.nn.Embedding) for t in mod.parameters()}
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers()) if id(t) not in skip}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--modes", nargs="*", default=["lean", "compiled", "eager"],
                        choices=["lean", "lean-nopdl", "lean-unfused", "compiled", "eager"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--configs", type=Path, nargs="*", default=[],
                        help="tune.py best.json files whose entries replace or join configs.TUNED")
    args = parser.parse_args()
    for path in args.configs:
        print(f"{path}: {load_config_overrides(path)} TUNED entries set", flush=True)
    env = start_gpu_run("decode.py", args.out)
    if env is None:
        return 0
    import transformers

    env["transformers"] = transformers.__version__
    config, fp16, int4 = benchmark_llama(args.layers)
    n_gptq = sum(isinstance(m, GPTQLinear) for m in int4.modules())
    ref = dequantize_linears(copy.deepcopy(int4))
    ids = torch.randint(1, config.vocab_size, (4, 48), device="cuda")
    with torch.no_grad():
        logits, ref_logits, fp16_logits = int4(ids).logits.float(), ref(ids).logits.float(), fp16(ids).logits.float()
    check = {
        "gptq_layers": n_gptq,
        "rel_err_vs_dequantized": ((logits - ref_logits).norm() / ref_logits.norm()).item(),
        "rel_err_vs_fp16_original": ((logits - fp16_logits).norm() / fp16_logits.norm()).item(),
        "argmax_agreement_vs_dequantized": (logits.argmax(-1) == ref_logits.argmax(-1)).float().mean().item(),
    }
    del ref
    torch.cuda.empty_cache()
    # The floor of a batch-1 decode step: its weights read once at the device's copy bandwidth.
    bandwidth = copy_bandwidth()
    check.update({f"{name}_weight_gb": weight_bytes(model) / 1e9 for name, model in (("fp16", fp16), ("int4", int4))})
    check["copy_bandwidth_gb_s"] = bandwidth / 1e9
    floor_ms = {name: check[f"{name}_weight_gb"] * 1e9 / bandwidth * 1e3 for name in ("fp16", "int4")}
    print(json.dumps(check), flush=True)

    rows = []
    prompts = {batch: torch.randint(1, config.vocab_size, (batch, args.prompt), device="cuda") for batch in args.batch}
    models = {"fp16": fp16, "int4": int4}
    # generate's tokens for the same prompts: eager static cache always, compiled when measured below
    references: dict[str, dict[int, dict]] = {"generate_eager_static": {}, "generate_compiled": {}}
    reference_logits: dict[int, dict] = {}
    if any(mode.startswith("lean") for mode in args.modes):
        for batch, ids in prompts.items():
            for name, model in models.items():
                out = generated(model, ids, 1 + args.new_tokens, cache_implementation="static", disable_compile=True,
                                output_logits=True, return_dict_in_generate=True)
                references["generate_eager_static"].setdefault(batch, {})[name] = out.sequences
                reference_logits.setdefault(batch, {})[name] = torch.stack(out.logits)  # (new, B, V) fp32
    lean_tokens: dict[tuple[str, int], dict] = {}
    for mode in args.modes:
        for batch, ids in prompts.items():
            row = {"mode": mode, "batch": batch}
            if mode.startswith("lean"):
                try:
                    measured, lean_tokens[(mode, batch)] = lean_rows(
                        models, ids, args.new_tokens, args.rounds, mode != "lean-unfused",
                        False if mode == "lean-nopdl" else None,
                        references["generate_eager_static"].get(batch), reference_logits.get(batch))
                    row.update(measured)
                except Exception as e:  # noqa: BLE001 - record and go on
                    row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            else:
                tokens = references["generate_compiled"].setdefault(batch, {}) if mode == "compiled" else None
                row.update(decode_tps(models, ids, args.new_tokens, mode == "compiled", args.rounds, tokens))
            rows.append(row)
            print(json.dumps(row), flush=True)
        compare_tokens(rows, lean_tokens, references, reference_logits, args.prompt)
        report(args, env, check, floor_ms, n_gptq, rows)
    return 0


def report(args, env: dict, check: dict, floor_ms: dict, n_gptq: int, rows: list[dict]) -> None:
    lines = [
        f"# transformers Llama decode, GPTQ int4 vs fp16, on {env['device']}",
        "",
        f"- command: `{env['command']}`; torch {env['torch']}, triton {env['triton']},"
        f" transformers {env['transformers']}",
        f"- LlamaForCausalLM(hidden 4096, intermediate 11008, 32 heads, {args.layers} layers, vocab 32000), random"
        f" weights, fp16; {n_gptq} nn.Linear layers quantized (G = 128, lm_head kept fp16)",
        f"- logits vs the dequantized model: rel err {check['rel_err_vs_dequantized']:.1e}, argmax agreement"
        f" {check['argmax_agreement_vs_dequantized'] * 100:.1f}%; vs the original fp16 model (quantization error):"
        f" {check['rel_err_vs_fp16_original']:.1e}",
        f"- greedy, prompt {args.prompt}, {args.new_tokens} decode tokens, median of {args.rounds} rounds. generate"
        " (time of 1 + T new tokens minus time of 1): eager: dynamic cache, no compile, fp16 and int4 taking turns;"
        " compiled: static cache, CompileConfig(fullgraph=True, mode='reduce-overhead'), one model after the other."
        " lean: GraphDecoder (solutions/gptq/decode.py), the whole step one CUDA graph, T replays timed together,"
        " q/k/v and gate/up fused, programmatic dependent launch on Hopper (lean-nopdl: without it; lean-unfused:"
        " the model's own linears), fp16 and int4 taking turns",
        f"- weights read per decode step (all but the embedding table): fp16 {check['fp16_weight_gb']:.2f} GB, int4"
        f" {check['int4_weight_gb']:.2f} GB; at the copy bandwidth ({check['copy_bandwidth_gb_s']:.0f} GB/s) a step"
        f" cannot take less than {floor_ms['fp16']:.2f} ms (fp16) / {floor_ms['int4']:.2f} ms (int4): the floor",
        "",
        "| mode | batch | fp16 tokens/s | int4 tokens/s | int4 / fp16 | fp16 ms/step | int4 ms/step |"
        " fp16 step / floor | int4 step / floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(r, key):
        return f"{r[key]:.0f}" if key in r else "error"

    def step_ms(r, name):
        return r["batch"] / r[name + "_tps"] * 1e3 if name + "_tps" in r else None

    def fmt(value, spec):
        return "error" if value is None else format(value, spec)

    for r in rows:
        ratio = f"{r['int4_tps'] / r['fp16_tps']:.2f}" if "int4_tps" in r and "fp16_tps" in r else "n/a"
        ms = {name: step_ms(r, name) for name in ("fp16", "int4")}
        lines.append(f"| {r['mode']} | {r['batch']} | {cell(r, 'fp16_tps')} | {cell(r, 'int4_tps')} | {ratio} |"
                     f" {fmt(ms['fp16'], '.2f')} | {fmt(ms['int4'], '.2f')} |"
                     f" {fmt(ms['fp16'] and ms['fp16'] / floor_ms['fp16'], '.2f')} |"
                     f" {fmt(ms['int4'] and ms['int4'] / floor_ms['int4'], '.2f')} |")
    def noted(key):
        return "_vs_" in key or key.endswith(("error", "_linears_ms", "_teacher_forced"))

    checks = [f"- {r['mode']}, batch {r['batch']}: " + "; ".join(f"{key} {value}" for key, value in r.items()
                                                                  if noted(key))
              for r in rows if any(noted(key) for key in r)]
    if checks:
        lines += ["", "Tokens of the lean path against generate's (same model, same prompts), the GPU time of a lean"
                  " step's matmuls alone (`*_linears_ms`), and errors:", "", *checks]
    write_report(args.out, "decode", {"env": env, "check": check, "rows": rows}, lines)


if __name__ == "__main__":
    raise SystemExit(main())
