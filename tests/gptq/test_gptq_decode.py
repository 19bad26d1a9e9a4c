"""The lean GPTQ decode path (solutions/gptq/decode.py): its step kernels against torch, its tokens against
transformers' ``generate``, and a replayed CUDA-graph step that allocates nothing.

Without a GPU the kernels run under Triton's interpreter; the decoder's step runs eagerly (DecodeStep)
where transformers is installed. With a GPU the same step is captured (GraphDecoder).
"""

from __future__ import annotations

import copy
import importlib.util
import os
from dataclasses import replace

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
from torch import nn  # noqa: E402

import solutions.gptq.plans as plans  # noqa: E402
from solutions.gptq import dequantize, gptq_matmul, load_gptq_layer, quantize_rtn  # noqa: E402
from solutions.gptq.decode import DecodeStep, GraphDecoder, concat_gptq_weights  # noqa: E402
from solutions.gptq.decode_kernels import add_rms_norm, greedy_pick, rope_attend, silu_mul  # noqa: E402
from solutions.gptq.layer import quantize_linears  # noqa: E402
from solutions.gptq.matmul import accumulates  # noqa: E402

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def gpu(test):
    return pytest.mark.gpu(test)


def randn(*shape, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale).half().to(DEVICE)


# --------------------------------------------------------------------------- step kernels vs torch


def reference_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' LlamaRMSNorm in fp16."""
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).half()


@pytest.mark.parametrize("with_delta", [False, True])
def test_add_rms_norm_matches_llama_rms_norm(with_delta):
    resid, delta, weight = randn(3, 200, seed=1), randn(3, 200, seed=2), randn(200, seed=3)
    expected_resid = resid + delta if with_delta else resid.clone()
    out = add_rms_norm(resid, weight, 1e-6, delta if with_delta else None)
    assert torch.equal(resid, expected_resid)  # updated in place with the delta, untouched without
    torch.testing.assert_close(out, reference_rms_norm(expected_resid, weight, 1e-6), atol=2e-3, rtol=2e-3)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin


@pytest.mark.parametrize("length,pos", [(40, 37), (300, 290), (8, 0)],
                         ids=["one-ragged-block", "three-blocks", "empty-cache"])  # blocks of ATTEND_BLOCK_L = 128
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_rope_attend_writes_the_cache_and_attends_over_every_position(kv_heads, length, pos):
    batch, heads, d = 2, 4, 16
    q, k, v = randn(batch, heads * d, seed=1), randn(batch, kv_heads * d, seed=2), randn(batch, kv_heads * d, seed=3)
    angles = torch.arange(length)[:, None] * torch.rand(d // 2, generator=torch.Generator().manual_seed(4))
    cos, sin = (torch.cat([f(angles)] * 2, -1).half().to(DEVICE) for f in (torch.cos, torch.sin))
    k_cache, v_cache = randn(batch, kv_heads, length, d, seed=5), randn(batch, kv_heads, length, d, seed=6)
    before = k_cache.clone(), v_cache.clone()
    out = rope_attend(q, k, v, cos, sin, k_cache, v_cache, torch.tensor([pos], dtype=torch.int32, device=DEVICE))

    new_k = rotate(k.view(batch, kv_heads, d), cos[pos], sin[pos])
    torch.testing.assert_close(k_cache[:, :, pos], new_k, atol=2e-3, rtol=0)
    assert torch.equal(v_cache[:, :, pos], v.view(batch, kv_heads, d))
    others = [i for i in range(length) if i != pos]
    assert torch.equal(k_cache[:, :, others], before[0][:, :, others])  # nothing else written
    assert torch.equal(v_cache[:, :, others], before[1][:, :, others])
    qr = rotate(q.view(batch, heads, d), cos[pos], sin[pos]).float()
    keys = k_cache[:, :, : pos + 1].float().repeat_interleave(heads // kv_heads, 1)
    values = v_cache[:, :, : pos + 1].float().repeat_interleave(heads // kv_heads, 1)
    weights = torch.softmax(torch.einsum("bhd,bhld->bhl", qr, keys) * d**-0.5, -1)
    expected = torch.einsum("bhl,bhld->bhd", weights, values).reshape(batch, heads * d)
    torch.testing.assert_close(out.float(), expected, atol=3e-3, rtol=3e-3)


def test_rope_attend_ignores_what_the_cache_holds_from_the_position_on():
    """The first block of the cache is read before the position is known: rows from the position on (stale
    tokens of an earlier sequence, anything) must count for nothing, NaN included. Three query heads per
    kv head (a group that is not a power of two)."""
    batch, heads, kv_heads, d, length, pos = 2, 6, 2, 16, 40, 23
    q, k, v = randn(batch, heads * d, seed=1), randn(batch, kv_heads * d, seed=2), randn(batch, kv_heads * d, seed=3)
    cos, sin = randn(length, d, seed=4), randn(length, d, seed=5)
    clean = [randn(batch, kv_heads, length, d, seed=6 + i) for i in range(2)]
    dirty = [cache.clone() for cache in clean]
    for cache in dirty:
        cache[:, :, pos:] = float("nan")
    position = torch.tensor([pos], dtype=torch.int32, device=DEVICE)
    expected = rope_attend(q, k, v, cos, sin, *clean, position)
    out = rope_attend(q, k, v, cos, sin, *dirty, position)
    assert torch.equal(out, expected)
    assert all(torch.equal(new[:, :, pos], old[:, :, pos]) for new, old in zip(dirty, clean, strict=True))
    qr = rotate(q.view(batch, heads, d), cos[pos], sin[pos]).float()
    keys = clean[0][:, :, : pos + 1].float().repeat_interleave(heads // kv_heads, 1)
    values = clean[1][:, :, : pos + 1].float().repeat_interleave(heads // kv_heads, 1)
    weights = torch.softmax(torch.einsum("bhd,bhld->bhl", qr, keys) * d**-0.5, -1)
    reference = torch.einsum("bhl,bhld->bhd", weights, values).reshape(batch, heads * d)
    torch.testing.assert_close(out.float(), reference, atol=3e-3, rtol=3e-3)


def test_silu_mul_on_strided_halves_of_one_output():
    gate_up = randn(3, 2 * 1100, seed=1, scale=3.0)
    gate, up = gate_up.chunk(2, dim=1)
    expected = torch.nn.functional.silu(gate.float()).half() * up
    torch.testing.assert_close(silu_mul(gate, up), expected, atol=2e-3, rtol=2e-3)


def poisoned(numel: int) -> torch.Tensor:
    return torch.full((numel,), float("nan"), dtype=torch.float16, device=DEVICE)


def test_step_kernels_zero_a_side_buffer_and_compute_the_same():
    """``zero=``: every element of the buffer becomes 0 (sizes that leave each program several pieces and a
    ragged last one), and the kernel's own result is unchanged."""
    resid, delta, weight = randn(3, 200, seed=1), randn(3, 200, seed=2), randn(200, seed=3)
    expected = add_rms_norm(resid.clone(), weight, 1e-6, delta)
    side = poisoned(7001)
    after = resid.clone()
    assert torch.equal(add_rms_norm(after, weight, 1e-6, delta, zero=side), expected)
    assert torch.equal(side, torch.zeros_like(side))

    gate, up = randn(2, 1100, seed=4, scale=3.0), randn(2, 1100, seed=5)
    side = poisoned(5000)  # 4 programs of silu_mul
    assert torch.equal(silu_mul(gate, up, zero=side), silu_mul(gate, up))
    assert torch.equal(side, torch.zeros_like(side))

    batch, kv_heads, d, length = 2, 2, 16, 8
    q, k, v = randn(batch, 4 * d, seed=6), randn(batch, kv_heads * d, seed=7), randn(batch, kv_heads * d, seed=8)
    cos, sin = randn(length, d, seed=9), randn(length, d, seed=10)
    pos = torch.tensor([5], dtype=torch.int32, device=DEVICE)
    caches = [randn(batch, kv_heads, length, d, seed=11) for _ in range(2)]
    expected = rope_attend(q, k, v, cos, sin, *(c.clone() for c in caches), pos)
    side = poisoned(3 * 1024 + 5)
    assert torch.equal(rope_attend(q, k, v, cos, sin, *caches, pos, zero=side), expected)
    assert torch.equal(side, torch.zeros_like(side))


@pytest.mark.parametrize("vocab", [5000, 40000], ids=["one-block", "two-blocks"])  # blocks of GREEDY_BLOCK
def test_greedy_pick_takes_the_first_maximum_and_writes_after_the_position(vocab):
    logits = randn(3, vocab, seed=1)
    far, late = vocab - 300, vocab - 100  # in the last block
    logits[0, far] = logits[0, late] = 50.0  # a tie inside one block: the first wins
    logits[1, 10] = logits[1, late] = 50.0  # a tie across blocks (with two): the earlier block wins
    logits[2, vocab - 1] = 60.0
    ids = torch.zeros(3, dtype=torch.long, device=DEVICE)
    tokens = torch.full((3, 8), -1, dtype=torch.long, device=DEVICE)
    greedy_pick(logits, ids, tokens, torch.tensor([5], dtype=torch.int32, device=DEVICE))
    assert ids.tolist() == [far, 10, vocab - 1] == logits.float().argmax(-1).tolist()
    assert tokens[:, 6].tolist() == [far, 10, vocab - 1]
    assert (tokens[:, :6] == -1).all() and (tokens[:, 7] == -1).all()


def gptq_weight(k: int, n: int, seed: int):
    q = quantize_rtn(torch.randn(k, n, generator=torch.Generator().manual_seed(seed)) * 0.02, 128)
    return load_gptq_layer({key: t.to(DEVICE) for key, t in q.tensors.items()}, q.quantize_config)


def test_concatenated_gptq_weights_multiply_as_the_parts_side_by_side():
    parts = [gptq_weight(128, n, seed) for seed, n in enumerate((256, 128, 128))]
    fused = concat_gptq_weights(parts)
    assert fused is not None and fused.n == 512
    a = randn(2, 128, seed=9)
    expected = torch.cat([gptq_matmul(a, w, split_k=1) for w in parts], dim=1)
    torch.testing.assert_close(gptq_matmul(a, fused, split_k=1), expected, atol=1e-3, rtol=1e-3)
    assert concat_gptq_weights([parts[0], gptq_weight(256, 128, 5)]) is None  # different K: not joined


def test_gptq_matmul_writes_into_a_given_output():
    """``out=``: the result lands in the caller's tensor. A split-K call with atomics zeroes it first
    (poisoned with NaN: still right), unless ``out_zeroed=True`` says it holds zeros: then the shares are
    added to what it holds (ones here: the promise is taken, no fill). One share overwrites it."""
    weight = gptq_weight(512, 256, seed=3)
    a = randn(3, 512, seed=4)
    expected = a.double() @ dequantize(weight).double()
    assert accumulates(a, weight, split_k=4) and not accumulates(a, weight, split_k=1)
    for split_k, zeroed in ((4, False), (1, True), (1, False)):
        out = torch.full((3, 256), float("nan"), dtype=torch.float16, device=DEVICE)
        assert gptq_matmul(a, weight, split_k=split_k, out=out, out_zeroed=zeroed) is out
        torch.testing.assert_close(out.double(), expected, atol=2e-2, rtol=2e-2)
    out = torch.zeros(3, 256, dtype=torch.float16, device=DEVICE)
    gptq_matmul(a, weight, split_k=4, out=out, out_zeroed=True)
    torch.testing.assert_close(out.double(), expected, atol=2e-2, rtol=2e-2)
    out.fill_(1.0)
    gptq_matmul(a, weight, split_k=4, out=out, out_zeroed=True)
    torch.testing.assert_close(out.double(), expected + 1.0, atol=2e-2, rtol=2e-2)
    weight.bias = randn(256, seed=5)  # with a bias: added after the shares, zeroed or not
    weight.clear_plans()
    for zeroed in (True, False):
        out = torch.zeros(3, 256, dtype=torch.float16, device=DEVICE)
        gptq_matmul(a, weight, split_k=4, out=out, out_zeroed=zeroed)
        torch.testing.assert_close(out.double(), expected + weight.bias.double(), atol=2e-2, rtol=2e-2)


def test_gptq_matmul_refuses_an_output_it_cannot_write():
    weight = gptq_weight(128, 128, seed=1)
    a = randn(2, 128, seed=2)
    buffer = torch.zeros(2 * 128 + 8, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match="out has shape \\(2, 64\\), the result is \\(2, 128\\)"):
        gptq_matmul(a, weight, out=buffer[:128].view(2, 64))
    with pytest.raises(ValueError, match="out must be fp16"):
        gptq_matmul(a, weight, out=torch.zeros(2, 128, device=DEVICE))
    with pytest.raises(ValueError, match="16-byte aligned"):
        gptq_matmul(a, weight, out=buffer[1:257].view(2, 128))
    with pytest.raises(ValueError, match="contiguous"):
        gptq_matmul(a, weight, out=torch.zeros(128, 2, dtype=torch.float16, device=DEVICE).t())


# --------------------------------------------------------------------------- errors


def test_graph_decoder_without_cuda_says_so():
    if CUDA:
        pytest.skip("has a GPU")
    with pytest.raises(RuntimeError, match="needs a CUDA GPU.*DecodeStep"):
        GraphDecoder(nn.Linear(4, 4), batch=1, max_len=8)


def test_decode_step_checks_its_arguments():
    with pytest.raises(ValueError, match="batch must be >= 1"):
        DecodeStep(nn.Linear(4, 4), batch=0, max_len=8)
    with pytest.raises(TypeError, match="LlamaForCausalLM-shaped"):
        DecodeStep(nn.Linear(4, 4), batch=1, max_len=8)


# --------------------------------------------------------------------------- a transformers Llama


def tiny_llama():
    import transformers

    config = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                                      max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).half().to(DEVICE).eval()
    with torch.no_grad():  # wider weights than the default init: logits far apart, no near-ties in greedy picks
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.1)
    return model


def assert_greedy_equal(tokens: torch.Tensor, reference, prompt: int) -> None:
    """``tokens`` equal generate's, or first differ where generate's own logits nearly tie (split-K
    atomics and another summation order may flip a pick whose two best logits are within rounding)."""
    expected = reference.sequences
    assert tokens.shape == expected.shape
    differs = (tokens != expected).nonzero()
    if differs.numel():
        row, col = differs[0].tolist()
        logits = reference.logits[col - prompt][row].float()
        gap = (logits[expected[row, col]] - logits[tokens[row, col]]).item()
        assert gap < 1e-2 * logits.abs().max().item(), f"new token {col - prompt} of row {row} differs (gap {gap})"


@pytest.mark.skipif(not HAS_TRANSFORMERS, reason="needs transformers")
@pytest.mark.parametrize("quantized", [False, True], ids=["fp16", "int4"])
@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_tokens_equal_generate(quantized, fuse):
    model = tiny_llama()
    if quantized:
        model = quantize_linears(copy.deepcopy(model), group_size=128)
    prompt = torch.randint(1, 512, (2, 9), generator=torch.Generator().manual_seed(1)).to(DEVICE)
    new = 12
    reference = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new,
                               min_new_tokens=new, do_sample=False, pad_token_id=0, output_logits=True,
                               return_dict_in_generate=True, disable_compile=True)
    decoder = (GraphDecoder if CUDA else DecodeStep)(model, batch=2, max_len=24, fuse=fuse)
    assert_greedy_equal(decoder.generate(prompt, new), reference, prompt.shape[1])
    assert_greedy_equal(decoder.generate(prompt, new), reference, prompt.shape[1])  # again: state reset by prefill
    with pytest.raises(ValueError, match="prompt \\+ new_tokens <= max_len=24"):
        decoder.generate(prompt, 16)


@pytest.mark.skipif(not HAS_TRANSFORMERS, reason="needs transformers")
def test_split_k_outputs_are_zeroed_by_the_kernel_before(monkeypatch):
    """Every int4 matmul of the step forced to split-K with atomics: each output buffer is zeroed by the
    step's small kernel before (its ``zero``), not by a fill of its own, so poisoning every buffer with NaN
    before each step changes no token."""
    monkeypatch.setattr(plans, "default_config", lambda m, weight: replace(
        plans.select_config(m, weight.k, weight.n, weight.group_size), block_k=128, block_n=128, split_k=2))
    model = quantize_linears(tiny_llama(), group_size=128)
    prompt = torch.randint(1, 512, (2, 9), generator=torch.Generator().manual_seed(1)).to(DEVICE)
    new = 5
    reference = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new,
                               min_new_tokens=new, do_sample=False, pad_token_id=0, output_logits=True,
                               return_dict_in_generate=True, disable_compile=True)
    decoder = (GraphDecoder if CUDA else DecodeStep)(model, batch=2, max_len=16)
    groups = [g for layer in decoder.layers for g in (layer.qkv, layer.o, layer.gate_up, layer.down)]
    assert all(g.zero is not None and g.zero.data_ptr() == g.buffer.data_ptr() for g in groups)
    assert decoder.head.zero is None  # lm_head stays fp16: nothing to zero
    decoder.prefill(prompt)
    for _ in range(new - 1):
        for g in groups:
            g.buffer.fill_(float("nan"))
        decoder.step()
        assert torch.isfinite(decoder.logits).all()
    assert_greedy_equal(decoder.tokens[:, : prompt.shape[1] + new], reference, prompt.shape[1])


@gpu
@pytest.mark.skipif(not HAS_TRANSFORMERS, reason="needs transformers")
def test_replayed_step_allocates_nothing():
    model = quantize_linears(tiny_llama(), group_size=128)
    decoder = GraphDecoder(model, batch=2, max_len=32)
    decoder.prefill(torch.randint(1, 512, (2, 5), device="cuda"))
    torch.cuda.synchronize()
    allocated, stats = torch.cuda.memory_allocated(), torch.cuda.memory_stats()
    for _ in range(8):
        decoder.step()
    torch.cuda.synchronize()
    after = torch.cuda.memory_stats()
    assert torch.cuda.memory_allocated() == allocated
    for key in ("allocation.all.allocated", "segment.all.allocated", "reserved_bytes.all.current"):
        assert after[key] == stats[key], key
    assert decoder.pos.item() == 5 + 8
    with pytest.raises(RuntimeError, match="sequence is full"):
        for _ in range(32):
            decoder.step()
