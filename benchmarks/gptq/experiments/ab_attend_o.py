"""Attention fused with o_proj in the lean decode step: one kernel instead of rope_attend then the int4 matmul.

    python3 benchmarks/gptq/experiments/ab_attend_o.py --check            # correctness, any device (CPU: interpreter)
    python3 benchmarks/gptq/experiments/ab_attend_o.py --layers 16 --batch 1 8 --rounds 5 --tiles 256:4 512:8

o_proj is a split-K over heads in disguise: output n is the sum over heads h of head h's 128 attention
outputs times rows 128 h .. 128 h + 127 of W_o, and with GPTQ groups of 128 those rows are one group (one
scale and zero per column). So a program (sequence, head, block of N columns) asks L2 for its block of
W_o before it waits for the q/k/v matmul (no kernel writes the weights), computes its head's attention as
rope_attend does (the head's programs share its cache rows through L2), and adds its partial product into
an fp32 output with atomics. One kernel boundary fewer per layer, and attention's chain of round trips
overlaps o_proj's weight reads (NOTES.md, "Round 4"). The fp32 output is zeroed by the layer's first norm
(one buffer with the q/k/v output) and read by its second norm as the residual's delta, rounded to fp16
there as the model's linear output is.

A tile is BLOCK_N:WARPS. For each, a GraphDecoder subclass whose step calls the fused kernel; the shipped
decoder and the variants take turns in each round (64 replays timed together), medians.

Measured on the H100 (results/h100_attend_o/): correct, and slower than the two kernels it replaces (step
1.148 against 1.002 ms at batch 1, more than twice at batch 8): every (head, block) program recomputes its
head's attention, and the FMA product is a chain of L2 round trips. Not used by the decoder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/gptq: common.py and its siblings

from solutions.gptq import gptq_matmul  # noqa: E402
from solutions.gptq.decode import GraphDecoder, concat_gptq_weights  # noqa: E402
from solutions.gptq.decode_kernels import (  # noqa: E402
    add_rms_norm,
    attend_over_cache,
    rope_attend,
    rope_rotate,
    silu_mul,
)
from solutions.gptq.loader import GPTQWeight  # noqa: E402
from solutions.gptq.pdl import (  # noqa: E402
    STEP_EARLY,
    pdl_kwargs,
    prefetch_to_l2,
    start_next_kernel,
    wait_for_previous_kernel,
)


@triton.jit
def attend_o_proj_kernel(q_ptr, k_ptr, v_ptr, cos_ptr, sin_ptr, k_cache, v_cache, pos_ptr,
                         qweight_ptr, scales_ptr, qzeros_ptr, out_ptr,
                         q_stride, k_stride, v_stride, out_stride, cache_len, scale, N,
                         stride_qk, stride_sg, stride_zg,
                         ZERO_OFFSET: tl.constexpr, KV_HEADS: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr,
                         BLOCK_L: tl.constexpr, BLOCK_N: tl.constexpr, CHUNK_N: tl.constexpr, PDL: tl.constexpr):
    b = tl.program_id(0)
    head = tl.program_id(1)
    nb = tl.program_id(2)
    g = head // GROUP
    d = tl.arange(0, D)
    if PDL:
        # W_o's rows of this head (one GPTQ group: D == G) for this block of columns into L2 before the wait
        # (no kernel writes the weights): one pointer per 128-byte line of each of the D / 8 packed rows.
        lines = nb * BLOCK_N + tl.arange(0, BLOCK_N // 32) * 32
        packed = head * (D // 8) + tl.arange(0, D // 8)
        prefetch_to_l2(qweight_ptr + packed[:, None] * stride_qk + lines[None, :])
        if PDL & STEP_EARLY:
            start_next_kernel()
        wait_for_previous_kernel()
    # This head's attention over the cache, as rope_attend computes it.
    pos = tl.load(pos_ptr)
    cos = tl.load(cos_ptr + pos * D + d).to(tl.float32)
    sin = tl.load(sin_ptr + pos * D + d).to(tl.float32)
    k = rope_rotate(k_ptr + b * k_stride + g * D, d, cos, sin, D // 2)
    v = tl.load(v_ptr + b * v_stride + g * D + d)
    q = rope_rotate(q_ptr + b * q_stride + head * D, d, cos, sin, D // 2).to(tl.float32)
    base = (b * KV_HEADS + g).to(tl.int64) * cache_len * D
    attended = attend_over_cache(q, k.to(tl.float32), v.to(tl.float32), k_cache, v_cache, base, pos, d, scale,
                                 BLOCK_L).to(tl.float32)  # rounded to fp16 as rope_attend's output
    a_sum = tl.sum(attended, axis=0)
    # Its share of o_proj: sum_k a[k] (q[k, n] - zero[n]) scale[n]; row k is nibble k % 8 of packed row k // 8
    # (each word is read by the 8 rows it holds: the repeats come from L1).
    shift = ((d % 8) * 4)[:, None]
    word_rows = (head * D + d) // 8
    for c in tl.static_range(BLOCK_N // CHUNK_N):
        offs_n = nb * BLOCK_N + c * CHUNK_N + tl.arange(0, CHUNK_N)
        n_ok = offs_n < N
        words = tl.load(qweight_ptr + word_rows[:, None] * stride_qk + offs_n[None, :], mask=n_ok[None, :], other=0)
        dot = tl.sum(((words >> shift) & 15).to(tl.float32) * attended[:, None], axis=0)
        col_scale = tl.load(scales_ptr + head * stride_sg + offs_n, mask=n_ok, other=0.0).to(tl.float32)
        zero_words = tl.load(qzeros_ptr + head * stride_zg + offs_n // 8, mask=n_ok, other=0)
        col_zero = (((zero_words >> ((offs_n % 8) * 4)) & 15) + ZERO_OFFSET).to(tl.float32)
        tl.atomic_add(out_ptr + b * out_stride + offs_n, col_scale * (dot - col_zero * a_sum), mask=n_ok,
                      sem="relaxed")
    # One program per (sequence, kv head) writes the new k and v (after every read of the cache above).
    writer = (nb == 0) & (head % GROUP == 0)
    tl.store(k_cache + base + pos * D + d, k, mask=writer & (d < D))
    tl.store(v_cache + base + pos * D + d, v, mask=writer & (d < D))


def attend_o_proj(q, k, v, cos, sin, k_cache, v_cache, pos, weight: GPTQWeight, out, block_n: int = 256,
                  warps: int = 4, pdl: int = 0, block_l: int = 64, chunk_n: int = 64):
    """rope_attend then ``out += attention @ W_o`` in one kernel; ``out`` a zeroed fp32 (B, N) buffer. Returns
    the launched kernel (its registers and spills)."""
    batch, kv_heads, cache_len, d = k_cache.shape
    heads = q.shape[1] // d
    if weight.group_size != d or weight.g_idx is not None or weight.a_perm is not None:
        raise ValueError("the fused kernel needs GPTQ groups of one head (group size = head dim), no act-order")
    plain = weight.plain_qweight()
    return attend_o_proj_kernel[(batch, heads, triton.cdiv(weight.n, block_n))](
        q, k, v, cos, sin, k_cache, v_cache, pos, plain, weight.scales, weight.qzeros, out,
        q.stride(0), k.stride(0), v.stride(0), out.stride(0), cache_len, d**-0.5, weight.n,
        plain.stride(0), weight.scales.stride(0), weight.qzeros.stride(0),
        ZERO_OFFSET=weight.zero_offset, KV_HEADS=kv_heads, GROUP=heads // kv_heads, D=d, BLOCK_L=block_l,
        BLOCK_N=block_n, CHUNK_N=min(chunk_n, block_n), num_warps=warps, **pdl_kwargs(pdl))


class FusedAttendDecoder(GraphDecoder):
    """The lean decoder with rope_attend + o_proj replaced by :func:`attend_o_proj` (int4 models only)."""

    def __init__(self, model, batch: int, max_len: int, block_n: int, warps: int, **kwargs) -> None:
        self.block_n, self.warps = block_n, warps
        inner = model.model
        hidden = model.config.hidden_size
        qkv_n = (model.config.num_attention_heads + 2 * model.config.num_key_value_heads) * (
            hidden // model.config.num_attention_heads)
        self.qkv_weights = [concat_gptq_weights([a.q_proj.gptq_weight(), a.k_proj.gptq_weight(),
                                                 a.v_proj.gptq_weight()]) for a in (l.self_attn for l in inner.layers)]
        self.o_weights = []
        for layer in inner.layers:
            w = layer.self_attn.o_proj.gptq_weight()
            w = GPTQWeight(qweight=w.plain_qweight(), qzeros=w.qzeros, scales=w.scales, group_size=w.group_size,
                           zero_offset=w.zero_offset)
            self.o_weights.append(w)
        device = inner.embed_tokens.weight.device
        # Per layer: the q/k/v output (fp16) and o_proj's fp32 output side by side, zeroed by one norm.
        self.scratch = [torch.zeros(batch * (qkv_n + 2 * hidden), device=device, dtype=torch.float16)
                        for _ in inner.layers]
        self.qkv_out = [s[: batch * qkv_n].view(batch, qkv_n) for s in self.scratch]
        self.o_out = [s[batch * qkv_n:].view(torch.float32).view(batch, hidden) for s in self.scratch]
        super().__init__(model, batch, max_len, **kwargs)

    @torch.no_grad()
    def run(self) -> torch.Tensor:
        d, pdl = self.head_dim, self.pdl
        q_width, kv_width = self.heads * d, self.kv_heads * d
        resid = torch.nn.functional.embedding(self.ids, self.embed)
        delta = None
        for index, layer in enumerate(self.layers):
            h = add_rms_norm(resid, layer.input_norm, self.eps, delta, zero=self.scratch[index], pdl=pdl)
            qkv = gptq_matmul(h, self.qkv_weights[index], out=self.qkv_out[index], out_zeroed=True, pdl=pdl)
            q, k, v = qkv.split([q_width, kv_width, kv_width], dim=1)
            attend_o_proj(q, k, v, self.cos, self.sin, self.k_cache[index], self.v_cache[index], self.pos,
                          self.o_weights[index], self.o_out[index], self.block_n, self.warps, pdl)
            h = add_rms_norm(resid, layer.post_norm, self.eps, self.o_out[index], zero=layer.gate_up.zero, pdl=pdl)
            gate, up = layer.gate_up(h)[0].chunk(2, dim=1)
            delta = layer.down(silu_mul(gate, up, zero=layer.down.zero, pdl=pdl))[0]
        return self.finish(resid, delta)


def check(device: str) -> None:
    """The fused kernel against rope_attend then gptq_matmul, on random data (two batch sizes, GQA)."""
    from solutions.gptq.loader import load_gptq_layer
    from solutions.gptq.quantize import quantize_rtn

    for batch, heads, kv_heads, pos in ((1, 4, 4, 37), (3, 4, 2, 130)):
        d, length, n = 128, 160, 384
        gen = torch.Generator().manual_seed(batch)

        def rnd(*shape):
            return torch.randn(*shape, generator=gen).half().to(device)

        q, k, v = rnd(batch, heads * d), rnd(batch, kv_heads * d), rnd(batch, kv_heads * d)
        cos, sin = rnd(length, d), rnd(length, d)
        caches = [rnd(batch, kv_heads, length, d) for _ in range(2)]
        quant = quantize_rtn(torch.randn(heads * d, n, generator=gen) * 0.02, d)
        weight = load_gptq_layer({key: t.to(device) for key, t in quant.tensors.items()}, quant.quantize_config,
                                 repack=False)
        position = torch.tensor([pos], dtype=torch.int32, device=device)
        ref_caches = [c.clone() for c in caches]
        attn = rope_attend(q, k, v, cos, sin, *ref_caches, position)
        expected = gptq_matmul(attn, weight).float()
        out = torch.zeros(batch, n, device=device, dtype=torch.float32)
        attend_o_proj(q, k, v, cos, sin, *caches, position, weight, out, block_n=128, warps=4)
        assert torch.equal(caches[0], ref_caches[0]) and torch.equal(caches[1], ref_caches[1]), "cache differs"
        err = ((out - expected).abs().max() / expected.abs().max()).item()
        print(f"batch {batch}, heads {heads}/{kv_heads}, pos {pos}: max rel err {err:.2e}")
        assert err < 2e-3, err


def kernel_times(tiles: list[str], batch: int, pos: int = 64) -> None:
    """One layer's shapes (hidden 4096, 32 heads): the fused kernel per tile against rope_attend then
    gptq_matmul, each timed alone (us), with the fused kernel's registers and spills."""
    import triton.testing

    from solutions.gptq.loader import load_gptq_layer
    from solutions.gptq.quantize import quantize_rtn

    heads, d, length, hidden = 32, 128, 256, 4096
    q, k, v = (torch.randn(batch, heads * d, device="cuda").half() for _ in range(3))
    cos, sin = (torch.randn(length, d, device="cuda").half() for _ in range(2))
    caches = [torch.randn(batch, heads, length, d, device="cuda").half() for _ in range(2)]
    quant = quantize_rtn(torch.randn(hidden, hidden) * 0.02, d)
    tensors = {key: t.cuda() for key, t in quant.tensors.items()}
    shipped = load_gptq_layer(tensors, quant.quantize_config)
    plain = load_gptq_layer(tensors, quant.quantize_config, repack=False)
    position = torch.tensor([pos], dtype=torch.int32, device="cuda")
    attn = rope_attend(q, k, v, cos, sin, *caches, position)
    out16 = torch.zeros(batch, hidden, device="cuda").half()
    separate = triton.testing.do_bench(lambda: (rope_attend(q, k, v, cos, sin, *caches, position, out=attn),
                                                gptq_matmul(attn, shipped, out=out16, out_zeroed=True)), rep=200)
    alone = triton.testing.do_bench(lambda: rope_attend(q, k, v, cos, sin, *caches, position, out=attn), rep=200)
    print(f"batch {batch}, pos {pos}: rope_attend + gptq_matmul {separate * 1e3:.1f} us (attention {alone * 1e3:.1f})")
    out = torch.zeros(batch, hidden, device="cuda")
    for tile in tiles:
        block_n, warps = (int(x) for x in tile.split(":"))
        launched = attend_o_proj(q, k, v, cos, sin, *caches, position, plain, out, block_n, warps)
        ms = triton.testing.do_bench(lambda: attend_o_proj(q, k, v, cos, sin, *caches, position, plain, out, block_n,
                                                           warps), rep=200)
        print(f"  fused {tile}: {ms * 1e3:.1f} us, {launched.n_regs} registers, {launched.n_spills} spills")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="correctness only (on CPU: Triton's interpreter)")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    parser.add_argument("--tiles", nargs="*", default=["256:4", "512:8"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--kernels", action="store_true", help="time the fused kernel alone per tile, then stop")
    args = parser.parse_args()
    if args.check:
        check("cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu")
        return 0
    if not torch.cuda.is_available():
        print("needs a CUDA GPU (or --check)")
        return 0
    from common import copy_bandwidth
    from decode import benchmark_llama, step_ms_in_turns, weight_bytes

    check("cuda")
    if args.kernels:
        for batch in args.batch:
            kernel_times(args.tiles, batch)
        return 0
    config, fp16, int4 = benchmark_llama(args.layers)
    del fp16
    floor_ms = weight_bytes(int4) / copy_bandwidth() * 1e3
    rows = []
    for batch in args.batch:
        ids = torch.randint(1, config.vocab_size, (batch, 32), device="cuda")
        decoders = {"shipped": GraphDecoder(int4, batch, 32 + args.steps + 2)}
        for tile in args.tiles:
            block_n, warps = (int(x) for x in tile.split(":"))
            decoders[tile] = FusedAttendDecoder(int4, batch, 32 + args.steps + 2, block_n, warps)
        tokens = {name: dec.generate(ids, args.steps) for name, dec in decoders.items()}
        logits = {}
        for name, dec in decoders.items():  # one teacher-forced step from the same state: the logits' gap
            dec.prefill(ids)
            dec.step()
            logits[name] = dec.logits.float().clone()
        times = step_ms_in_turns(decoders, ids, args.steps, args.rounds)
        for name in decoders:
            step = statistics.median(times[name])
            gap = ((logits[name] - logits["shipped"]).abs().max() / logits["shipped"].std()).item()
            row = {"batch": batch, "variant": name, "step_ms": round(step, 4), "over_floor": round(step / floor_ms, 3),
                   "tokens_equal_shipped": bool(torch.equal(tokens[name], tokens["shipped"])),
                   "logits_max_gap_in_std": round(gap, 4), "steps_ms": [round(t, 4) for t in times[name]]}
            rows.append(row)
            print(json.dumps(row), flush=True)
        del decoders
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps({"floor_ms": floor_ms, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
