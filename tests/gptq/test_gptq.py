"""GPTQ int4 split-K kernel: packing, quantizer, loader, kernel vs a float64 reference, known-wrong variants.

Without a GPU the kernel runs under Triton's interpreter at small odd shapes (K not a multiple of
BLOCK_K * SPLIT_K, N not a multiple of BLOCK_N, M = 1, 3, 17). With a GPU the same checks also run
at the real odd shapes (K = 11008, N = 4096 + 8) through the tuned configs and the PTX dequant.
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402

from solutions.gptq import (  # noqa: E402
    GPTQConfig,
    GPTQWeight,
    dequantize,
    gptq_matmul,
    load_gptq_layer,
    pack_int4_along_k,
    pack_int4_along_n,
    plan_split_k,
    quantize_rtn,
    unpack_int4_along_k,
    unpack_int4_along_n,
)
from solutions.gptq.configs import (  # noqa: E402
    DECODE_TUNED,
    DEQUANT_FROM,
    DEQUANT_RULE_MIN_M,
    LARGE_M_BUCKETS,
    M_BUCKETS,
    PUBLISHED_SPLIT_K,
    TUNED,
    heuristic_config,
    m_bucket,
    select_config,
    select_method,
)

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def gpu(test):
    """The project's ``gpu`` marker plus a skip without CUDA."""
    return pytest.mark.gpu(test)


TOL = 1e-2  # fp16 operands, fp32 accumulation

# Small tiles keep the interpreter quick; BLOCK_K * SPLIT_K = 256 divides none of the K below.
SMALL = GPTQConfig(block_m=16, block_n=32, block_k=64, group_m=8, split_k=4, num_warps=4, num_stages=2)
# The unswapped kernel (C = A W, dequantized W staged in shared memory) that larger M uses.
UNSWAPPED = GPTQConfig(block_m=16, block_n=32, block_k=64, group_m=2, split_k=4, num_warps=4, num_stages=2,
                       swap_ab=False)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.double()
    assert torch.isfinite(out).all(), "non-finite output (unwritten or poisoned elements)"
    return ((out - ref).norm() / ref.norm()).item()


def odd_k(group_size: int) -> int:
    """K = 8G + G: 9 groups, not a multiple of BLOCK_K * SPLIT_K; 328 for per-channel."""
    return 9 * group_size if group_size != -1 else 328


def make_layer(k: int, n: int, group_size: int, *, fmt: str = "gptq", act_order: bool = False, seed: int = 0,
               reorder: bool = True, device: str = "cpu", keep_plain: bool | None = None,
               ) -> tuple[torch.Tensor, GPTQWeight, dict]:
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(k, n, generator=gen) * 0.02
    layer = quantize_rtn(w, group_size, act_order=act_order, checkpoint_format=fmt)
    tensors = {key: t.to(device) for key, t in layer.tensors.items()}
    weight = load_gptq_layer(tensors, layer.quantize_config, reorder_act_order=reorder, keep_plain=keep_plain)
    return w, weight, tensors


def activations(m: int, k: int, seed: int = 1, device: str = DEVICE) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=gen).half().to(device)


# --------------------------------------------------------------------------- packing


def test_pack_along_k_puts_row_8i_plus_n_in_nibble_n():
    q = torch.randint(0, 16, (16, 3), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    words = pack_int4_along_k(q)
    assert words.shape == (2, 3) and words.dtype == torch.int32
    for i in range(2):
        for j in range(3):
            word = int(words[i, j]) & 0xFFFFFFFF
            assert [(word >> (4 * n)) & 0xF for n in range(8)] == q[8 * i: 8 * i + 8, j].tolist()
    assert torch.equal(unpack_int4_along_k(words), q)


def test_pack_along_n_puts_column_8j_plus_n_in_nibble_n():
    z = torch.randint(0, 16, (3, 16), generator=torch.Generator().manual_seed(1), dtype=torch.int32)
    words = pack_int4_along_n(z)
    assert words.shape == (3, 2)
    word = int(words[2, 1]) & 0xFFFFFFFF
    assert [(word >> (4 * n)) & 0xF for n in range(8)] == z[2, 8:16].tolist()
    assert torch.equal(unpack_int4_along_n(words), z)


def test_pack_handles_the_sign_bit():
    q = torch.full((8, 1), 15, dtype=torch.int32)  # nibble 7 = 15 sets bit 31: the word is negative
    assert int(pack_int4_along_k(q)) == -1
    assert torch.equal(unpack_int4_along_k(pack_int4_along_k(q)), q)


@pytest.mark.parametrize("bad", [torch.tensor([[16]] * 8), torch.tensor([[-1]] * 8)])
def test_pack_rejects_values_outside_4_bits(bad):
    with pytest.raises(ValueError):
        pack_int4_along_k(bad)


# --------------------------------------------------------------------------- quantizer + loader


@pytest.mark.parametrize("group_size", [32, 64, 128, -1])
@pytest.mark.parametrize("fmt", ["gptq", "gptq_v2"])
@pytest.mark.parametrize("act_order", [False, True])
def test_quantize_pack_load_dequantize_roundtrip(group_size, fmt, act_order):
    k, n = odd_k(group_size), 72
    w, weight, tensors = make_layer(k, n, group_size, fmt=fmt, act_order=act_order)
    layer = quantize_rtn(w, group_size, act_order=act_order, checkpoint_format=fmt)
    deq = dequantize(weight)
    # Exactly the quantizer's own (q - zero) * scale, in the original row order.
    g_idx = layer.tensors["g_idx"].long()
    exact = (layer.q - layer.zeros[g_idx]).double() * layer.tensors["scales"].double()[g_idx]
    assert torch.equal(deq, exact)
    # Within quantization error: half a step per element, plus the fp16 rounding of the scale
    # (up to 15 steps * 2**-11 where a group's extreme value is clamped to the range).
    step = layer.tensors["scales"].double()[g_idx]
    assert ((deq - w.double()).abs() <= 0.51 * step).all()
    assert ((deq - w.double()).norm() / w.double().norm()).item() < 0.15
    if act_order and group_size != -1:  # with one group, act-order changes nothing
        assert weight.a_perm is not None and weight.g_idx is None  # reordered at load time
        unordered = load_gptq_layer(tensors, layer.quantize_config, reorder_act_order=False)
        assert unordered.g_idx is not None and torch.equal(dequantize(unordered), deq)
    else:
        assert weight.a_perm is None and weight.g_idx is None  # the trivial g_idx is dropped


def _valid_layer():
    _, _, tensors = make_layer(64, 16, 32)
    return tensors, {"bits": 4, "group_size": 32, "desc_act": False}


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t, c: c.update(bits=8), "only 4-bit"),
        (lambda t, c: c.update(checkpoint_format="awq"), "checkpoint_format"),
        (lambda t, c: c.update(group_size=48), "group_size"),
        (lambda t, c: t.update(scales=t["scales"].float()), "scales must be torch.float16"),
        (lambda t, c: t.update(qweight=t["qweight"].long()), "qweight must be torch.int32"),
        (lambda t, c: t.update(qzeros=t["qzeros"][:, :1]), "qzeros must be"),
        (lambda t, c: t.update(scales=t["scales"][:1]), "scales must be"),
        (lambda t, c: t.update(g_idx=t["g_idx"] + 5), "g_idx values"),
        (lambda t, c: t.update(g_idx=t["g_idx"][:8]), "g_idx must have shape"),
        (lambda t, c: (t.pop("g_idx"), c.update(desc_act=True)), "desc_act=True needs"),
        (lambda t, c: t.update(extra=t["scales"]), "unexpected tensors"),
        (lambda t, c: t.pop("qzeros"), "missing tensor"),
    ],
)
def test_loader_rejects_bad_layers_with_clear_errors(edit, message):
    tensors, config = _valid_layer()
    edit(tensors, config)
    with pytest.raises(ValueError, match=message):
        load_gptq_layer(tensors, config)


def test_loader_defaults_to_the_gptq_zero_convention():
    tensors, config = _valid_layer()
    assert load_gptq_layer(tensors, config).zero_offset == 1
    assert load_gptq_layer(tensors, {**config, "checkpoint_format": "gptq_v2"}).zero_offset == 0


# --------------------------------------------------------------------------- kernel (interpreter or GPU)


@pytest.mark.parametrize(
    "m, group_size, fmt",
    [(1, 32, "gptq"), (3, 64, "gptq_v2"), (17, 128, "gptq"), (3, -1, "gptq_v2"), (17, 32, "gptq_v2"),
     (1, 128, "gptq_v2"), (3, 128, "gptq")],
)
def test_kernel_matches_float64_reference(m, group_size, fmt):
    k, n = odd_k(group_size), 64 + 8
    assert k % (SMALL.block_k * SMALL.split_k) and n % SMALL.block_n
    _, weight, _ = make_layer(k, n, group_size, fmt=fmt, device=DEVICE)
    a = activations(m, k)
    ref = a.double() @ dequantize(weight)
    assert rel_err(gptq_matmul(a, weight, config=SMALL), ref) < TOL
    assert rel_err(gptq_matmul(a, weight, config=SMALL, deterministic=True), ref) < TOL


@pytest.mark.parametrize("swap_ab", [False, True], ids=["unswapped", "swapped"])
@pytest.mark.parametrize(
    "m, group_size, fmt, act_order",
    [(17, 32, "gptq", False), (3, 64, "gptq_v2", False), (40, -1, "gptq", False), (17, 64, "gptq_v2", True)],
)
def test_kernel_variants_match_float64_reference(m, group_size, fmt, act_order, swap_ab):
    """Both kernels, with the scale applied to the MMA result (one group per K step, 2 BLOCK_M <=
    BLOCK_K), to each weight (2 BLOCK_M > BLOCK_K) and per word (G < BLOCK_K)."""
    k, n = odd_k(group_size), 64 + 8
    _, weight, _ = make_layer(k, n, group_size, fmt=fmt, act_order=act_order, device=DEVICE)
    a = activations(m, k)
    ref = a.double() @ dequantize(weight)
    base = GPTQConfig(**{**UNSWAPPED.__dict__, "swap_ab": swap_ab})
    assert rel_err(gptq_matmul(a, weight, config=base), ref) < TOL
    per_weight_scale = GPTQConfig(**{**base.__dict__, "block_m": 32, "block_k": 32, "split_k": 3})
    assert rel_err(gptq_matmul(a, weight, config=per_weight_scale, deterministic=True), ref) < TOL


def test_published_split_k_baseline_runs_on_weights_kept_plain():
    """bench.py's "published" column: the published split-K config (16 x 32 x 128, split 4) on the
    unswapped kernel, which reads the plain qweight: a weight loaded with keep_plain=True runs it, the
    default load (repacked copy only) is refused with the fix in the message."""
    from solutions.gptq.kernels import gptq_large_m_kernel

    k, n = 4 * PUBLISHED_SPLIT_K.block_k, 128  # K % (BLOCK_K * SPLIT_K) == 0, as bench.py requires
    _, repacked_only, _ = make_layer(k, n, 128, device=DEVICE)
    _, kept, _ = make_layer(k, n, 128, device=DEVICE, keep_plain=True)
    assert kept.qweight is not None and kept.qweight_mma is not None and repacked_only.qweight is None
    for m in (3, 17):
        a = activations(m, k)
        out = gptq_matmul(a, kept, config=PUBLISHED_SPLIT_K)
        assert rel_err(out, a.double() @ dequantize(kept)) < TOL
    assert [launch.fn for plan in kept.plans.values() for launch in plan.launches] == [gptq_large_m_kernel] * 2
    with pytest.raises(ValueError, match="keep_plain"):
        gptq_matmul(activations(3, k), repacked_only, config=PUBLISHED_SPLIT_K)


@pytest.mark.parametrize("reorder", [True, False], ids=["a_perm", "g_idx"])
@pytest.mark.parametrize("m, group_size", [(3, 32), (17, 64)])
def test_kernel_act_order(m, group_size, reorder):
    k, n = odd_k(group_size), 72
    _, weight, _ = make_layer(k, n, group_size, fmt="gptq", act_order=True, reorder=reorder, device=DEVICE)
    assert (weight.a_perm is not None) == reorder and (weight.g_idx is not None) != reorder
    a = activations(m, k)
    # The general g_idx path gathers per element: smaller tiles keep the interpreter quick.
    cfg = GPTQConfig(block_m=16, block_n=64 if reorder else 32, block_k=64, split_k=3, num_stages=2)
    assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ dequantize(weight)) < TOL


@pytest.mark.parametrize("group_size", [32, 128])
def test_kernel_several_groups_per_k_step_and_tiles_past_n(group_size):
    # BLOCK_K = 128 > G = 32: one group per word instead of per step; BLOCK_N = 64 > N - 64.
    k, n = odd_k(group_size), 72
    _, weight, _ = make_layer(k, n, group_size, fmt="gptq_v2", device=DEVICE)
    a = activations(17, k)
    cfg = GPTQConfig(block_m=32, block_n=64, block_k=128, split_k=2, num_stages=2)
    assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ dequantize(weight)) < TOL


def test_kernel_default_config_batch_dims_and_bias():
    k, n = odd_k(64), 72
    _, weight, tensors = make_layer(k, n, 64, device=DEVICE)
    weight.bias = torch.randn(n, generator=torch.Generator().manual_seed(3)).half().to(DEVICE)
    a = activations(6, k).reshape(2, 3, k)
    out = gptq_matmul(a, weight)
    assert out.shape == (2, 3, n) and out.dtype == torch.float16
    ref = a.reshape(6, k).double() @ dequantize(weight) + weight.bias.double()
    assert rel_err(out.reshape(6, n), ref) < TOL


def test_deterministic_mode_is_bitwise_reproducible():
    k, n = odd_k(32), 72
    _, weight, _ = make_layer(k, n, 32, device=DEVICE)
    a = activations(17, k)
    first = gptq_matmul(a, weight, config=SMALL, deterministic=True)
    for _ in range(2):
        assert torch.equal(gptq_matmul(a, weight, config=SMALL, deterministic=True), first)


def test_split_k_plan_covers_k_in_whole_steps():
    for k in (288, 1152, 11008, 4096):
        for block_k in (32, 64, 128, 256):
            for split in (1, 3, 4, 16, 1000):
                per, splits = plan_split_k(k, block_k, split)
                assert per % block_k == 0 and 1 <= splits <= max(1, split)
                assert (splits - 1) * per < k <= splits * per  # no empty share, all of K covered


def test_kernel_rejects_bad_inputs():
    _, weight, _ = make_layer(64, 16, 32, device=DEVICE)
    with pytest.raises(ValueError, match="columns"):
        gptq_matmul(activations(2, 32), weight)
    with pytest.raises(TypeError, match="fp16"):
        gptq_matmul(activations(2, 64).float(), weight)
    with pytest.raises(ValueError, match="block_k"):
        gptq_matmul(activations(2, 64), weight, config=GPTQConfig(block_k=48))


def test_configs_cover_every_m_bucket():
    assert [m_bucket(m) for m in (1, 2, 3, 16, 17, 100, 128, 129, 300, 4096, 9000)] == \
        [1, 2, 4, 16, 32, 128, 128, 256, 512, 4096, 4096]
    for (bucket, k, n), cfg in TUNED.items():
        assert bucket in M_BUCKETS and k % 8 == 0 and n % 8 == 0
        assert cfg.block_k % 32 == 0 and cfg.block_m >= 16 and cfg.block_n >= 16
    shapes = {(k, n) for _, k, n in TUNED}
    assert {(b, k, n) for b in M_BUCKETS for k, n in shapes} == set(TUNED)  # every shape, every bucket
    for m in (1, 16, 64, 512, 4096):
        assert select_config(m, 4096 + 32, 1000 * 8) == heuristic_config(m, 4096 + 32, 8000)
        assert select_config(m, 4096, 4096) == TUNED[(m_bucket(m), 4096, 4096)]
        # The table was tuned at G = 128: other group sizes keep each K step inside one group.
        for g in (32, 64, 128, 4096):
            assert g % select_config(m, 4096, 4096, g).block_k == 0 or g == 4096


def test_decode_only_entries_serve_m_up_to_8_and_leave_larger_m_to_the_heuristic():
    shapes = {(k, n) for _, k, n in DECODE_TUNED}
    assert {(b, k, n) for b in (1, 2, 4, 8) for k, n in shapes} == set(DECODE_TUNED)
    assert not shapes & {(k, n) for _, k, n in TUNED}  # TUNED's shapes keep their full rows
    for m, (k, n) in itertools.product((1, 3, 8, 9, 300), shapes):
        expected = DECODE_TUNED[(m_bucket(m), k, n)] if m <= 8 else heuristic_config(m, k, n)
        assert select_config(m, k, n) == expected


def _smem_bytes(cfg: GPTQConfig) -> int:
    """Shared memory of the swapped kernel's pipeline: per stage an fp16 A tile and a packed W tile."""
    return cfg.num_stages * (cfg.block_k * cfg.block_m * 2 + cfg.block_n * cfg.block_k // 2)


@pytest.mark.parametrize("bucket", LARGE_M_BUCKETS)
def test_prefill_configs_fit_the_kernel(bucket):
    """Every prefill entry (tuned or heuristic) runs the swapped kernel on the repacked weights: BLOCK_K =
    128 and whole 128-column blocks, 8 warps loading the words in wgmma's row order (BLOCK_N a multiple of
    16 rows x 8 warps), one wgmma N (BLOCK_M <= 256), and a pipeline that fits the H100's 227 KB."""
    entries = [cfg for (b, _, _), cfg in TUNED.items() if b == bucket]
    entries += [heuristic_config(bucket, k, n) for k, n in ((5120, 13824), (4096, 4096), (13824, 5120))]
    for cfg in entries:
        assert cfg.swap_ab and cfg.block_k == 128 and cfg.block_n % 128 == 0 and cfg.num_warps == 8
        assert cfg.block_m in (128, 256) and _smem_bytes(cfg) <= 227 * 1024
        assert cfg.scale_after_dot is None and 2 * cfg.block_m > cfg.block_k  # weights scaled: async MMA


def test_prefill_heuristic_fills_the_sms_with_split_k_only_when_the_tiles_do_not():
    # 256 x 128 tiles: M = 256 on N = 4096 is 32 tiles (split 4 -> 128 programs), N = 13824 is 108 (no split).
    assert heuristic_config(256, 4096, 4096).split_k == 4 and heuristic_config(256, 4096, 13824).split_k == 1
    assert heuristic_config(2048, 5120, 5120).split_k == 1
    assert heuristic_config(256, 1024, 4096).split_k == 1  # K too short to share: 8 steps of 128


def test_method_choice_follows_the_measurements():
    for (k, n), first in DEQUANT_FROM.items():
        for m in (1, 128, 256, 1000, 2048, 3000, 4096, 10000):
            expected = "dequant" if first is not None and m_bucket(m) >= first else "fused"
            assert select_method(m, k, n) == expected
    # The measured choice, checked by name: fused up to 1024 everywhere, dequant at 4096 everywhere.
    assert select_method(2048, 4096, 4096) == "fused" and select_method(2048, 8192, 28672) == "dequant"
    assert all(select_method(4096, k, n) == "dequant" and select_method(1024, k, n) == "fused"
               for k, n in DEQUANT_FROM)
    # Untuned shapes follow the rule; small M never dequantizes.
    assert select_method(DEQUANT_RULE_MIN_M, 5120, 13824) == "dequant"
    assert select_method(DEQUANT_RULE_MIN_M // 2, 5120, 13824) == "fused" and select_method(128, 5120, 13824) == "fused"


# --------------------------------------------------------------------------- known-wrong variants must fail


def _broken_dequantize(weight: GPTQWeight, bug: str) -> torch.Tensor:
    """The reference with one classic GPTQ bug planted."""
    q = unpack_int4_along_k(weight.qweight)
    if bug == "nibble_order_reversed":
        q = q.reshape(-1, 8, weight.n).flip(1).reshape(-1, weight.n)
    offset = 1 - weight.zero_offset if bug == "zero_convention_off_by_one" else weight.zero_offset
    z = unpack_int4_along_n(weight.qzeros) + offset
    groups = torch.arange(weight.k) // weight.group_size
    if bug == "group_index_off_by_one":
        groups = (groups + 1) % (weight.k // weight.group_size)
    return (q - z[groups]).double() * weight.scales.double().cpu()[groups]


@pytest.mark.parametrize("bug", ["zero_convention_off_by_one", "nibble_order_reversed", "group_index_off_by_one"])
def test_known_wrong_references_are_caught(bug):
    k, n = odd_k(64), 72
    _, weight, _ = make_layer(k, n, 64, fmt="gptq", seed=5)
    a = activations(3, k, device="cpu")
    good = a.double() @ dequantize(weight)
    assert rel_err(a.double() @ _broken_dequantize(weight, "none"), good) < 1e-12  # the harness itself
    out = gptq_matmul(a.to(DEVICE), weight.to(DEVICE), config=SMALL).cpu()
    assert rel_err(out, good) < TOL
    assert rel_err(out, a.double() @ _broken_dequantize(weight, bug)) > 5 * TOL


@pytest.mark.parametrize("bug", ["zero_convention_off_by_one", "nibble_order_reversed", "group_index_off_by_one"])
def test_known_wrong_kernel_inputs_are_caught(bug):
    """The same bugs planted in what the kernel is given: the reference comparison must fail."""
    k, n = odd_k(64), 72
    _, weight, _ = make_layer(k, n, 64, fmt="gptq", seed=6, device=DEVICE)
    a = activations(3, k)
    ref = a.double() @ dequantize(weight)
    if bug == "zero_convention_off_by_one":
        weight.zero_offset = 1 - weight.zero_offset
    elif bug == "nibble_order_reversed":
        q = unpack_int4_along_k(weight.qweight).reshape(-1, 8, n).flip(1).reshape(k, n)
        weight.qweight = pack_int4_along_k(q)
    else:
        groups = torch.arange(k, device=DEVICE) // weight.group_size
        weight.g_idx = ((groups + 1) % (k // weight.group_size)).to(torch.int32)
    assert rel_err(gptq_matmul(a, weight, config=SMALL), ref) > 5 * TOL


# --------------------------------------------------------------------------- GPU: the real odd shapes


@gpu
@pytest.mark.parametrize("m", [1, 3, 17])
@pytest.mark.parametrize("fmt, act_order", [("gptq", False), ("gptq_v2", False), ("gptq", True)])
def test_gpu_real_odd_shapes(m, fmt, act_order):
    k, n = 11008, 4096 + 8
    _, weight, _ = make_layer(k, n, 128, fmt=fmt, act_order=act_order, device="cuda")
    a = activations(m, k)
    ref = a.double() @ dequantize(weight)
    assert rel_err(gptq_matmul(a, weight), ref) < TOL
    for split in (1, 3, 8):
        assert rel_err(gptq_matmul(a, weight, split_k=split), ref) < TOL
    det = gptq_matmul(a, weight, split_k=8, deterministic=True)
    assert rel_err(det, ref) < TOL
    assert torch.equal(gptq_matmul(a, weight, split_k=8, deterministic=True), det)


@gpu
@pytest.mark.parametrize("m", [1, 16, 64, 128])
def test_gpu_ptx_and_portable_dequant_agree(m):
    k, n = 4096, 4096
    _, weight, _ = make_layer(k, n, 128, device="cuda")
    a = activations(m, k)
    ref = a.double() @ dequantize(weight)
    cfg = select_config(m, k, n)
    portable = GPTQConfig(**{**cfg.__dict__, "ptx_dequant": False})
    assert rel_err(gptq_matmul(a, weight, config=cfg), ref) < TOL
    assert rel_err(gptq_matmul(a, weight, config=portable), ref) < TOL


@gpu
def test_gpu_general_g_idx_at_real_shape():
    k, n = 11008, 4096 + 8
    _, weight, _ = make_layer(k, n, 128, act_order=True, reorder=False, device="cuda")
    a = activations(17, k)
    assert rel_err(gptq_matmul(a, weight), a.double() @ dequantize(weight)) < TOL


@gpu
def test_gpu_prefill_configs_and_methods_match_reference():
    """Every distinct prefill config of the table, at an M that leaves a ragged last tile, and the
    method that gptq_matmul picks by itself at M = 2048 and 4096 (dequant on this shape)."""
    k, n = 1024, 1024 + 128
    _, weight, _ = make_layer(k, n, 128, device="cuda")
    assert weight.qweight is None and weight.qweight_mma is not None  # the default load: repacked only
    w = dequantize(weight)
    for cfg in dict.fromkeys(cfg for (b, _, _), cfg in TUNED.items() if b in LARGE_M_BUCKETS):
        a = activations(cfg.block_m + 37, k)
        assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ w) < TOL, cfg
    for m in (300, 2048, 4096):
        a = activations(m, k)
        for method in ("auto", "fused", "dequant"):
            assert rel_err(gptq_matmul(a, weight, method=method), a.double() @ w) < TOL, (m, method)


# --------------------------------------------------------------------------- repacked weights (small-M kernel)


def test_repack_for_mma_gives_each_thread_its_fragment_rows_side_by_side():
    from solutions.gptq.loader import repack_for_mma

    k, n = 256, 256
    q = torch.randint(0, 16, (k, n), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    packed = repack_for_mma(pack_int4_along_k(q))
    assert packed.shape == (n // 128, k // 128, 128, 16) and packed.is_contiguous()
    for col in (0, 5, 127, 128, 200, 255):
        for block in range(k // 128):
            # Position 4l + c: the word of quad lane l for rows 32c..32c+31; nibble 4h + 2b2 + b1.
            nibbles = unpack_int4_along_k(packed[col // 128, block, col % 128].reshape(16, 1)).reshape(4, 4, 2, 2, 2)
            for lane, c, h, b2, b1 in itertools.product(range(4), range(4), range(2), range(2), range(2)):
                row = 128 * block + 32 * c + 16 * b2 + 8 * b1 + 2 * lane + h
                assert nibbles[lane, c, h, b2, b1] == q[row, col]


@pytest.mark.parametrize("m, fmt, act_order", [(3, "gptq", False), (17, "gptq_v2", True)])
def test_kernel_repacked_and_plain_weights_agree(m, fmt, act_order):
    # K = 1152 (9 steps of 128, split 4 -> 3 shares of 3 steps), N = 256 (two tiles of 128).
    k, n = odd_k(128), 256
    _, weight, tensors = make_layer(k, n, 128, fmt=fmt, act_order=act_order, device=DEVICE)
    assert weight.qweight_mma is not None
    plain = dataclasses.replace(weight, qweight=weight.plain_qweight(), qweight_mma=None)
    a = activations(m, k)
    ref = a.double() @ dequantize(weight)
    cfg = GPTQConfig(block_m=16, block_n=128, block_k=128, split_k=4, num_stages=2)
    out = gptq_matmul(a, weight, config=cfg, deterministic=True)
    assert rel_err(out, ref) < TOL
    # Same products, summed in another K order (natural order against the plain path's fragment order).
    assert rel_err(gptq_matmul(a, plain, config=cfg, deterministic=True), ref) < TOL


@pytest.mark.parametrize("block_m, block_n, num_warps", [(128, 64, 4), (16, 256, 8), (32, 128, 8)])
def test_kernel_reads_part_or_several_of_the_repacked_blocks(block_m, block_n, num_warps):
    # BLOCK_N = 64 reads half of a 128-column block, 256 two of them; N = 384 leaves a ragged 256 tile.
    # 8 warps load the columns of a tile in wgmma's row order (kernels._mma_row_order) and put them back.
    k, n = 384, 384
    _, weight, _ = make_layer(k, n, 128, device=DEVICE)
    a = activations(block_m + 3, k)
    cfg = GPTQConfig(block_m=block_m, block_n=block_n, block_k=128, split_k=2, num_warps=num_warps, num_stages=2)
    assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ dequantize(weight)) < TOL


def _hopper() -> bool:
    return torch.cuda.get_device_capability()[0] >= 9


def _launch_flags(weight: GPTQWeight) -> list[dict]:
    """The constexpr flags of every planned fused launch of ``weight``."""
    return [launch.kwargs for plan in weight.plans.values() for launch in plan.launches]


@pytest.mark.parametrize("block_m, split_k", [(32, 1), (16, 2)])
def test_a_through_a_tma_descriptor_matches_pointer_loads(block_m, split_k):
    # tma_a: A's tiles come from a TMA descriptor (on a GPU of compute capability 9.0+; the interpreter
    # runs descriptors too), which fills the ragged last rows (M = block_m + 5) and K past 320 with zeros.
    k, n = 320, 256
    _, weight, _ = make_layer(k, n, 64, device=DEVICE)
    a = activations(block_m + 5, k)
    ref = a.double() @ dequantize(weight)
    cfg = GPTQConfig(block_m=block_m, block_n=128, block_k=128, split_k=split_k, num_warps=4, num_stages=2)
    pointers = gptq_matmul(a, weight, config=cfg, deterministic=True)
    tma = gptq_matmul(a, weight, config=dataclasses.replace(cfg, tma_a=True), deterministic=True)
    assert [f["A_DESC"] for f in _launch_flags(weight)] == [False, not CUDA or _hopper()]
    assert rel_err(tma, ref) < TOL and torch.equal(tma, pointers)  # the same products in the same order


def test_tma_descriptor_only_where_the_copy_engine_can_serve():
    k, n = 256, 128
    _, weight, _ = make_layer(k, n, 128, device=DEVICE)
    w = dequantize(weight)
    cfg = GPTQConfig(block_m=16, block_n=128, block_k=128, split_k=1, num_warps=4, num_stages=2, tma_a=True)
    # A whose base is not 16-byte aligned, and one with a row stride of 260 elements (520 bytes: aligned,
    # but the copy engine reads rows of whole 16-byte units only where the stride is a multiple of 8).
    storage = activations(1, 8 * 260 + 1).reshape(-1)
    for a in (storage[1: 1 + 8 * k].view(8, k), storage[: 8 * 260].view(8, 260)[:, :k]):
        weight.clear_plans()
        out = gptq_matmul(a, weight, config=cfg)
        aligned = a.data_ptr() % 16 == 0 and a.stride(0) % 8 == 0
        assert [f["A_DESC"] for f in _launch_flags(weight)] == [aligned and (not CUDA or _hopper())]
        assert rel_err(out, a.double() @ w) < TOL
    # BLOCK_M = 256 with 3 stages gave wrong results with descriptors on Triton 3.6: pointer loads instead.
    from solutions.gptq.plans import use_tma_a

    a = activations(300, k)
    assert not use_tma_a(dataclasses.replace(cfg, block_m=256, num_stages=3), a, has_a_perm=False)
    assert not use_tma_a(cfg, a, has_a_perm=True)  # A's columns gathered through a_perm
    assert use_tma_a(dataclasses.replace(cfg, block_m=256, num_stages=2), a, has_a_perm=False) == (
        not CUDA or _hopper())
    assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ w) < TOL


@pytest.mark.parametrize("group_size", [16, 32, 64])
def test_repacked_weights_with_several_groups_per_step(group_size):
    # BLOCK_K = 128 spans several groups: each word of the repacked copy holds rows from 32 consecutive
    # rows of K, so it lies in one group only when G is a multiple of 32 (G = 16 must read qweight).
    k, n = 384, 256
    _, weight, _ = make_layer(k, n, group_size, device=DEVICE)
    assert (weight.qweight_mma is not None) == (group_size % 32 == 0)  # else no repacked copy at all
    a = activations(5, k)
    cfg = GPTQConfig(block_m=16, block_n=128, block_k=128, split_k=1, num_stages=2)
    assert rel_err(gptq_matmul(a, weight, config=cfg), a.double() @ dequantize(weight)) < TOL
