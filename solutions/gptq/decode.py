"""Greedy decoding of a Llama-shaped model, each token one CUDA-graph replay (GPTQLinear or fp16 linears).

    from solutions.gptq.decode import GraphDecoder
    model = quantize_linears(LlamaForCausalLM(...).half().cuda().eval())    # or the fp16 model
    decoder = GraphDecoder(model, batch=1, max_len=256)
    tokens = decoder.generate(prompt_ids, new_tokens=64)    # (B, T + 64), as generate(do_sample=False)

Why: in transformers' ``generate`` every token costs milliseconds of Python (logits processors, stopping
criteria, cache bookkeeping, and with ``reduce-overhead`` the graph's input copies), which hides how
fast the weights are read. Here the whole step - embedding, every layer, the final norm, the head, the
greedy pick and the cache update - is one CUDA graph; per token the host only calls ``replay()``.

How: the prompt runs once through the model's own forward (eager), its keys and values are copied into
a static cache (layers, B, KV heads, max_len, D). The step reads its position from a one-element tensor
on the device and writes the next input id into the static input buffer
(:mod:`solutions.gptq.decode_kernels`), so the same graph serves every position. The q/k/v and
gate/up projections are fused into one matmul each (one launch, a wider N that the int4 kernel reads
closer to the bandwidth); ``fuse=False`` keeps the model's own linears. The int4 matmuls write into
preallocated buffers; where one adds split-K shares with atomics, the small kernel just before it
(the norm before q/k/v and gate/up, attention before o_proj, SiLU-gating before down_proj) zeroes its
buffer on the side, so the graph has no fill kernels. On Hopper GPUs the step's Triton kernels are
launched with programmatic dependent launch (``pdl``, :mod:`solutions.gptq.pdl`): each is launched while
the one before it runs and waits in place for it, so the launch latency between kernels is hidden. Batches of
equal-length prompts (no padding), one position for all rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from solutions.gptq import GPTQWeight, gptq_matmul
from solutions.gptq.decode_kernels import add_rms_norm, greedy_pick, rope_attend, silu_mul
from solutions.gptq.layer import GPTQLinear
from solutions.gptq.matmul import accumulates
from solutions.gptq.pdl import DECODE, pdl_available, pdl_flags

Linear = Callable[[Tensor], Tensor]
PROJECTIONS = ("qkv", "o", "gate_up", "down", "head")  # the matmuls of a step, as ``matmul_pdl`` names them


@dataclass
class _Dense:
    """An fp16 linear layer (weight N x K, optional bias), possibly several concatenated along N."""

    weight: Tensor
    bias: Tensor | None


def _parts(modules: list[nn.Module], fuse: bool) -> list[GPTQWeight | _Dense]:
    """The weights computing the modules' outputs: one of the modules' outputs side by side (``fuse``,
    when the modules allow it), or one per module."""
    if fuse and len(modules) > 1:
        fused = _fused_part(modules)
        if fused is not None:
            return [fused]
    return [_part(m) for m in modules]


def _part(module: nn.Module) -> GPTQWeight | _Dense:
    if isinstance(module, GPTQLinear):
        return module.gptq_weight()
    if type(module) is nn.Linear:
        return _Dense(module.weight, module.bias)
    raise TypeError(f"GraphDecoder handles nn.Linear and GPTQLinear layers, got {type(module).__name__}")


def _fused_part(modules: list[nn.Module]) -> GPTQWeight | _Dense | None:
    if all(type(m) is nn.Linear for m in modules):
        biases = [m.bias for m in modules]
        if any(b is None for b in biases) and not all(b is None for b in biases):
            return None
        weight = torch.cat([m.weight.detach() for m in modules])
        return _Dense(weight, None if biases[0] is None else torch.cat([b.detach() for b in biases]))
    if all(isinstance(m, GPTQLinear) for m in modules):
        return concat_gptq_weights([m.gptq_weight() for m in modules])
    return None


class Linears:
    """The linear layers of a step fed by one input (q/k/v, o, gate/up, down, the head), fused or not;
    called on the input, they return their outputs in order.

    The int4 outputs live in one preallocated buffer (each a contiguous (B, N) block of it, one after
    another), so that they keep their addresses from step to step. Where one of those matmuls adds
    split-K shares with atomics, ``zero`` is that buffer: the step's kernel before the matmul fills it
    with zeros, and the matmuls take it as zeroed (``gptq_matmul(..., out_zeroed=True)``), with no
    fill kernel of their own. ``zero`` is None where no output needs clearing.
    """

    def __init__(self, parts: list[GPTQWeight | _Dense], batch: int, device: torch.device, pdl: int = 0) -> None:
        int4 = [p for p in parts if isinstance(p, GPTQWeight)]
        self.buffer = torch.zeros(batch * sum(w.n for w in int4), device=device, dtype=torch.float16) \
            if int4 else None
        # The plans for these calls are made here (the input's key: a fresh contiguous (B, K) fp16 tensor).
        zeroed = any(accumulates(torch.empty(batch, w.k, device=device, dtype=torch.float16), w, pdl=pdl)
                     for w in int4)
        self.zero = self.buffer if zeroed else None
        self.calls: list[Linear] = []
        offset = 0
        for part in parts:
            if isinstance(part, _Dense):
                self.calls.append(lambda x, w=part.weight, b=part.bias: F.linear(x, w, b))
                continue
            out = self.buffer[offset: offset + batch * part.n].view(batch, part.n)
            offset += batch * part.n
            self.calls.append(lambda x, w=part, out=out: gptq_matmul(x, w, out=out, out_zeroed=zeroed, pdl=pdl))

    def __call__(self, x: Tensor) -> list[Tensor]:
        return [f(x) for f in self.calls]


def concat_gptq_weights(weights: list[GPTQWeight]) -> GPTQWeight | None:
    """One GPTQWeight of the given ones side by side along N (K x sum N), or None where their layouts
    cannot be joined: different K, group size or zero offset, act-order (g_idx / a_perm), bias on some
    only, or a repacked copy whose N is not a multiple of 128 (the repacked blocks are 128 columns)."""
    first = weights[0]
    if any(w.k != first.k or w.group_size != first.group_size or w.zero_offset != first.zero_offset
           or w.g_idx is not None or w.a_perm is not None for w in weights):
        return None
    if len({w.bias is None for w in weights}) > 1 or len({w.qweight_mma is None for w in weights}) > 1:
        return None
    if first.qweight_mma is not None and any(w.n % 128 for w in weights):
        return None
    plain = None
    if all(w.qweight is not None for w in weights):
        plain = torch.cat([w.qweight for w in weights], dim=1)
    elif first.qweight_mma is None:
        return None
    return GPTQWeight(
        qweight=plain,
        qzeros=torch.cat([w.qzeros for w in weights], dim=1),
        scales=torch.cat([w.scales for w in weights], dim=1),
        group_size=first.group_size,
        zero_offset=first.zero_offset,
        bias=None if first.bias is None else torch.cat([w.bias for w in weights]),
        qweight_mma=None if first.qweight_mma is None else torch.cat([w.qweight_mma for w in weights]),
    )


@dataclass
class _Layer:
    input_norm: Tensor
    post_norm: Tensor
    qkv: Linears  # one fused, or q, k, v
    o: Linears
    gate_up: Linears  # one fused, or gate, up
    down: Linears


def _llama_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder stack, lm_head) of a transformers ``LlamaForCausalLM``-shaped model, with a clear error otherwise."""
    inner, head = getattr(model, "model", None), getattr(model, "lm_head", None)
    needed = ("embed_tokens", "layers", "norm", "rotary_emb")
    if inner is None or head is None or not all(hasattr(inner, name) for name in needed):
        raise TypeError("GraphDecoder needs a LlamaForCausalLM-shaped model: model.model.{embed_tokens, layers, "
                        "norm, rotary_emb} and model.lm_head")
    act = getattr(model.config, "hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"GraphDecoder computes the SiLU-gated MLP of Llama; this model's hidden_act is {act!r}")
    return inner, head


class DecodeStep:
    """The static state of greedy decoding (cache, ids, position, tokens) and one decoding step, run eagerly.

    :class:`GraphDecoder` captures :meth:`run` as a CUDA graph; this class runs it as Python (any device,
    Triton's interpreter included), which is how the step is checked without a GPU.
    """

    def __init__(self, model: nn.Module, batch: int, max_len: int, *, fuse: bool = True,
                 pdl: bool | int | None = None, matmul_pdl: Mapping[str, int] | None = None) -> None:
        if batch < 1 or max_len < 2:
            raise ValueError(f"batch must be >= 1 and max_len >= 2, got batch={batch}, max_len={max_len}")
        inner, head = _llama_parts(model)
        device = inner.embed_tokens.weight.device
        if inner.embed_tokens.weight.dtype != torch.float16:
            raise ValueError(f"the decoder needs the model in fp16, got {inner.embed_tokens.weight.dtype}")
        config = model.config
        self.model, self.batch, self.max_len = model, batch, max_len
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = inner.norm.variance_epsilon
        self.pdl = (DECODE if pdl is None else pdl_flags(pdl)) if pdl_available(device) else 0
        unknown = set(matmul_pdl or {}) - set(PROJECTIONS)
        if unknown:
            raise ValueError(f"matmul_pdl names projections {sorted(unknown)}; they are {PROJECTIONS}")

        def linears(modules: list[nn.Module], projection: str) -> Linears:
            flags = (matmul_pdl or {}).get(projection, self.pdl) if self.pdl else 0
            return Linears(_parts(modules, fuse), batch, device, flags)

        self.embed, self.final_norm = inner.embed_tokens.weight, inner.norm.weight
        self.head = linears([head], "head")
        self.layers = [
            _Layer(layer.input_layernorm.weight, layer.post_attention_layernorm.weight,
                   linears([layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj], "qkv"),
                   linears([layer.self_attn.o_proj], "o"),
                   linears([layer.mlp.gate_proj, layer.mlp.up_proj], "gate_up"),
                   linears([layer.mlp.down_proj], "down"))
            for layer in inner.layers]
        with torch.no_grad():  # the model's own rotary tables, so that positions round as in its forward
            positions = torch.arange(max_len, device=device)[None]
            cos, sin = inner.rotary_emb(self.embed[:1][None], position_ids=positions)
        self.cos, self.sin = cos[0].contiguous(), sin[0].contiguous()
        shape = (len(self.layers), batch, self.kv_heads, max_len, self.head_dim)
        self.k_cache = torch.zeros(shape, device=device, dtype=torch.float16)
        self.v_cache = torch.zeros(shape, device=device, dtype=torch.float16)
        # The step's inputs and outputs: the current ids, their position, the whole token sequence.
        self.ids = torch.zeros(batch, device=device, dtype=torch.long)
        self.pos = torch.zeros(1, device=device, dtype=torch.int32)
        self.tokens = torch.zeros(batch, max_len, device=device, dtype=torch.long)
        self.length = 0  # tokens in the sequence so far (host side, for the bounds check only)
        self.logits: Tensor | None = None  # the last step's logits (B, V)

    @torch.no_grad()
    def run(self) -> Tensor:
        """One decoding step, eagerly: the next token of each sequence; returns the logits (B, V)."""
        d, pdl = self.head_dim, self.pdl
        q_width, kv_width = self.heads * d, self.kv_heads * d
        resid = F.embedding(self.ids, self.embed)
        delta = None
        # Each small kernel also zeroes the output of the matmul that runs next on its output (``Linears.zero``).
        for index, layer in enumerate(self.layers):
            h = add_rms_norm(resid, layer.input_norm, self.eps, delta, zero=layer.qkv.zero, pdl=pdl)
            qkv = layer.qkv(h)
            q, k, v = qkv if len(qkv) == 3 else qkv[0].split([q_width, kv_width, kv_width], dim=1)
            attn = rope_attend(q, k, v, self.cos, self.sin, self.k_cache[index], self.v_cache[index], self.pos,
                               zero=layer.o.zero, pdl=pdl)
            h = add_rms_norm(resid, layer.post_norm, self.eps, layer.o(attn)[0], zero=layer.gate_up.zero, pdl=pdl)
            gate_up = layer.gate_up(h)
            gate, up = gate_up if len(gate_up) == 2 else gate_up[0].chunk(2, dim=1)
            delta = layer.down(silu_mul(gate, up, zero=layer.down.zero, pdl=pdl))[0]
        return self.finish(resid, delta)

    def finish(self, resid: Tensor, delta: Tensor) -> Tensor:
        """The step's tail after the last layer: ``resid += delta``, the final norm, the head, the greedy pick
        into ``ids`` and ``tokens``, then pos += 1; returns the logits (B, V)."""
        h = add_rms_norm(resid, self.final_norm, self.eps, delta, zero=self.head.zero, pdl=self.pdl)
        logits = self.head(h)[0]
        greedy_pick(logits.view(self.batch, -1), self.ids, self.tokens, self.pos, pdl=self.pdl)
        self.pos.add_(1)
        return logits

    @torch.no_grad()
    def prefill(self, prompt: Tensor) -> None:
        """Run the prompt (B, T) through the model's forward, copy its keys and values into the static cache,
        and set the first new token (the argmax after the prompt) as the next input."""
        if prompt.dim() != 2 or prompt.shape[0] != self.batch:
            raise ValueError(f"prompt must be (batch={self.batch}, T) token ids, got shape {tuple(prompt.shape)}")
        length = prompt.shape[1]
        if not 1 <= length < self.max_len:
            raise ValueError(f"the prompt has {length} tokens; this decoder holds 1 to {self.max_len - 1}")
        prompt = prompt.to(self.ids.device)
        out = self.model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        for index, (keys, values) in enumerate(_cache_layers(out.past_key_values)):
            self.k_cache[index, :, :, :length].copy_(keys)
            self.v_cache[index, :, :, :length].copy_(values)
        first = out.logits[:, -1].argmax(-1)
        self.tokens[:, :length].copy_(prompt)
        self.tokens[:, length].copy_(first)
        self.ids.copy_(first)
        self.pos.fill_(length)
        self.length = length + 1

    def step(self) -> None:
        """One new token per sequence: ``tokens[:, pos + 1]``, then pos += 1 (``logits``: this step's)."""
        if self.length >= self.max_len:
            raise RuntimeError(f"the sequence is full (max_len={self.max_len}); call prefill with a new prompt")
        self._advance()
        self.length += 1

    def _advance(self) -> None:
        self.logits = self.run()

    def generate(self, prompt: Tensor, new_tokens: int) -> Tensor:
        """Greedy continuation of ``prompt`` (B, T): the ids (B, T + new_tokens), as transformers'
        ``generate(do_sample=False, max_new_tokens=new_tokens)`` (no end-of-sequence stop)."""
        if new_tokens < 1 or prompt.shape[-1] + new_tokens > self.max_len:
            raise ValueError(f"new_tokens must be >= 1 and prompt + new_tokens <= max_len={self.max_len}, got "
                             f"{prompt.shape[-1]} + {new_tokens}")
        self.prefill(prompt)
        for _ in range(new_tokens - 1):
            self._advance()
        return self.tokens[:, :prompt.shape[1] + new_tokens].clone()


class GraphDecoder(DecodeStep):
    """Greedy decoding of ``model`` at a fixed batch size, each new token one replay of a CUDA graph.

    ``max_len`` bounds prompt + new tokens (the static cache's length). The graph is captured here;
    ``generate`` may be called again with other prompts of this batch size. Holds the model's weights
    (and, with ``fuse``, fused copies of the q/k/v and gate/up weights). ``pdl``: launch the step's
    Triton kernels with programmatic dependent launch (default, or True: ``pdl.DECODE`` where the GPU has
    it, Hopper on; False: not; an int: those flags of :mod:`solutions.gptq.pdl`, for experiments).
    ``matmul_pdl``: other flags for some of the matmuls, by name (:data:`PROJECTIONS`), where PDL is on.
    """

    def __init__(self, model: nn.Module, batch: int, max_len: int, *, fuse: bool = True,
                 pdl: bool | int | None = None, matmul_pdl: Mapping[str, int] | None = None) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("GraphDecoder replays CUDA graphs: it needs a CUDA GPU (none found); "
                               "DecodeStep runs the same step eagerly")
        device = getattr(getattr(getattr(model, "model", None), "embed_tokens", None), "weight", None)
        if device is not None and device.device.type != "cuda":
            raise ValueError(f"GraphDecoder needs the model on the GPU, got {device.device}")
        super().__init__(model, batch, max_len, fuse=fuse, pdl=pdl, matmul_pdl=matmul_pdl)
        self.graph = self._capture()

    def _capture(self) -> torch.cuda.CUDAGraph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compile the kernels, plan the matmuls, set up cuBLAS workspaces
            for _ in range(2):
                self.run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.logits = self.run()
        return graph

    def _advance(self) -> None:
        self.graph.replay()


def _cache_layers(cache) -> list[tuple[Tensor, Tensor]]:
    """(keys, values) per layer, each (B, KV heads, T, D), from a transformers cache of version 4 or 5."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache, strict=True))
    return [(keys, values) for keys, values, *_ in cache]
