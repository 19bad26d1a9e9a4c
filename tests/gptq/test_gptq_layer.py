"""GPTQ in a model: cached launch plans, the dequantize-then-cuBLAS path, the ``gptq::matmul`` custom
op, :class:`GPTQLinear` and :func:`quantize_linears`.

Without a GPU the kernels run under Triton's interpreter at small odd shapes, ``torch.compile`` uses
the ``aot_eager`` backend (no C++ compiler needed) and the model is a tiny Llama-shaped stack. With
a GPU the same checks run on it, plus inductor with CUDA graphs and a transformers Llama (when
transformers is installed).
"""

from __future__ import annotations

import copy
import dataclasses
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
from torch import nn  # noqa: E402

from solutions.gptq import dequantize, gptq_matmul, load_gptq_layer, quantize_rtn  # noqa: E402
from solutions.gptq.layer import GPTQLinear, dequantize_linears, op_args, quantize_linears  # noqa: E402
from solutions.gptq.loader import repack_for_mma, unrepack_for_mma  # noqa: E402

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
TOL = 1e-2


def gpu(test):
    return pytest.mark.gpu(test)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.double()
    assert torch.isfinite(out).all(), "non-finite output"
    return ((out - ref.double()).norm() / ref.double().norm()).item()


def layer(k: int, n: int, group_size: int, *, act_order: bool = False, reorder: bool = True, seed: int = 0,
          **load_options):
    w = torch.randn(k, n, generator=torch.Generator().manual_seed(seed)) * 0.02
    q = quantize_rtn(w, group_size, act_order=act_order)
    tensors = {key: t.to(DEVICE) for key, t in q.tensors.items()}
    return load_gptq_layer(tensors, q.quantize_config, reorder_act_order=reorder, **load_options)


def activations(m: int, k: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed)).half().to(DEVICE)


# --------------------------------------------------------------------------- memory: one packed copy


def test_unrepack_inverts_repack():
    q = torch.randint(-(2**31), 2**31 - 1, (32, 256), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    assert torch.equal(unrepack_for_mma(repack_for_mma(q)), q)


@pytest.mark.parametrize("group_size, repacked", [(128, True), (32, True), (-1, True), (64, True), (16, False)])
def test_plain_qweight_dropped_where_the_repacked_copy_serves(group_size, repacked):
    w = layer(256, 128, group_size)
    assert (w.qweight_mma is not None) == repacked  # G = 16: a repacked word would span two groups
    assert (w.qweight is None) == repacked
    kept = layer(256, 128, group_size, keep_plain=True)
    assert kept.qweight is not None and torch.equal(w.plain_qweight(), kept.qweight)
    assert torch.equal(dequantize(w), dequantize(kept))


# --------------------------------------------------------------------------- plans and the dequantize path


@pytest.mark.parametrize(
    "k, n, group_size, act_order, reorder",
    [(288, 72, 32, False, True), (256, 256, 64, False, True), (256, 136, 32, True, True),
     (288, 72, 32, True, False)],
    ids=["plain-odd", "repacked", "a_perm", "g_idx"],
)
def test_dequant_path_matches_reference(k, n, group_size, act_order, reorder):
    w = layer(k, n, group_size, act_order=act_order, reorder=reorder)
    a = activations(5, k)
    ref = a.double() @ dequantize(w)
    assert rel_err(gptq_matmul(a, w, method="dequant"), ref) < TOL
    assert rel_err(gptq_matmul(a, w, method="fused"), ref) < TOL


def test_dequant_path_in_chunks_of_columns(monkeypatch):
    from solutions.gptq import plans

    monkeypatch.setattr(plans, "DEQUANT_CHUNK_BYTES", 256 * 2 * 128)  # 128 columns of K = 256 per chunk
    w = layer(256, 384, 128)
    w.bias = torch.randn(384, generator=torch.Generator().manual_seed(2)).half().to(DEVICE)
    a = activations(3, 256)
    ref = a.double() @ dequantize(w) + w.bias.double()
    out = gptq_matmul(a, w, method="dequant")
    assert len(next(iter(w.plans.values())).chunks) == 3
    assert rel_err(out, ref) < TOL


def test_plans_are_cached_per_shape_and_alignment():
    w = layer(256, 128, 128)
    a = activations(4, 256 + 8)
    first = gptq_matmul(a[:, :256], w)
    assert len(w.plans) == 1
    again = gptq_matmul(a[:, :256], w)
    assert len(w.plans) == 1 and torch.equal(first, again)
    # A starting 8 bytes in: not 16-byte aligned, which Triton specialises on: a plan of its own.
    shifted = gptq_matmul(a[:, 4:260], w)
    assert len(w.plans) == 2
    assert rel_err(shifted, a[:, 4:260].double() @ dequantize(w)) < TOL
    gptq_matmul(a[:3, :256], w)
    assert len(w.plans) == 3
    w.clear_plans()
    assert not w.plans


def test_default_options_given_explicitly_share_the_default_plan():
    w = layer(256, 128, 128)
    a = activations(2, 256)
    gptq_matmul(a, w)
    gptq_matmul(a, w, method="auto", deterministic=False, split_k=None, config=None)
    assert len(w.plans) == 1
    gptq_matmul(a, w, split_k=2)
    assert len(w.plans) == 2


def test_launch_hook_check_sees_through_empty_hook_chains():
    from solutions.gptq.launch import hook_set

    class Chain:  # the shape of Triton 3.6's knobs.HookChain
        def __init__(self, calls):
            self.calls = calls

    assert not hook_set(None) and not hook_set(Chain([]))
    assert hook_set(Chain([print])) and hook_set(print)


@pytest.mark.parametrize("version", ["3.6.0", "3.7.1"])
@pytest.mark.parametrize("hooked", [False, True])
def test_fast_launch_hands_the_launcher_what_jit_run_would(monkeypatch, version, hooked):
    """The plan's launcher against a stand-in compiled kernel shaped like Triton 3.6's: with no hook
    set, the same C launch call as CudaLauncher.__call__ makes (called directly on 3.6, through
    run elsewhere) with addresses for pointers; with a hook set, metadata and hooks as JITFunction.run."""
    import triton
    from triton import knobs

    from solutions.gptq.kernels import splitk_reduce_kernel
    from solutions.gptq.launch import Launch

    class CLaunch:  # the generated C launcher
        def __init__(self):
            self.calls = []

        def __call__(self, *args):
            self.calls.append(args)

    class CudaLauncher:
        def __init__(self):
            self.launch, self.global_scratch_size, self.profile_scratch_size, self.num_ctas = CLaunch(), 0, 0, 1
            self.launch_cooperative_grid, self.launch_pdl = False, True

        def __call__(self, gridX, gridY, gridZ, stream, function, *args):
            self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl,
                        None, None, *args)

    class Compiled:
        function, packed_metadata = 1234, (4, 1, 0)

        def __init__(self):
            self.run = CudaLauncher()

        def launch_metadata(self, grid, stream, *args):
            return ("metadata", grid, stream, args)

    class Chain:
        def __init__(self, calls):
            self.calls = calls

    monkeypatch.setattr(triton, "__version__", version)
    enter, leave = Chain([print] if hooked else []), Chain([])
    monkeypatch.setattr(knobs.runtime, "launch_enter_hook", enter)
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", leave)
    weight_like = torch.zeros(4)
    launch = Launch(splitk_reduce_kernel, (3, 2), [None, weight_like, 640], dict(SPLIT_K=4, BLOCK=8), {})
    launch.compiled = Compiled()
    fast = launch._make_fast([0, 2])
    assert launch.direct == version.startswith("3.6.")
    fast(77, 111, 222)
    args = (111, weight_like.data_ptr(), 222, 4, 8)
    if hooked:
        expect = (3, 2, 1, 77, 1234, False, True, None, None, (4, 1, 0), ("metadata", (3, 2, 1), 77, args), enter,
                  leave, *args)
    else:
        expect = (3, 2, 1, 77, 1234, False, True, None, None, (4, 1, 0), None, None, None, *args)
    assert launch.compiled.run.launch.calls == [expect]


def _fresh_nan_memory(numel: int) -> None:
    """Leave a freed block full of NaN in the caching allocator, so that a missing zero-fill shows."""
    torch.full((numel,), float("nan"), dtype=torch.float16, device=DEVICE)


@gpu
@pytest.mark.parametrize("bias", [False, True])
def test_gpu_split_k_hot_path_matches_first_call_and_deterministic(bias):
    from solutions.gptq.plans import Plan

    w = layer(1024, 384, 128)
    if bias:
        w = dataclasses.replace(w, bias=torch.randn(384, device=DEVICE).half())
    a = activations(5, 1024)
    ref = a.double() @ dequantize(w) + (w.bias.double() if bias else 0)
    first = gptq_matmul(a, w, split_k=4)  # compiles; zero-fill by new_zeros
    plan = next(iter(w.plans.values()))
    assert isinstance(plan, Plan) and plan.atomic and plan.splits == 4 and plan.hot is not None
    assert plan.bias_init == bias
    for _ in range(3):
        _fresh_nan_memory(5 * 384 * 4)
        again = gptq_matmul(a, w, split_k=4)  # the hot closure: driver memset (or C from the bias)
        assert rel_err(again, ref) < TOL and rel_err(again, first.double()) < 1e-3
    exact = gptq_matmul(a, w, split_k=4, deterministic=True)
    assert rel_err(exact, again.double()) < 1e-3


@gpu
def test_gpu_fast_launch_uses_the_direct_launcher_on_triton_3_6():
    import triton

    w = layer(512, 256, 128)
    a = activations(3, 512)
    gptq_matmul(a, w)
    gptq_matmul(a, w)
    launch = next(iter(w.plans.values())).launches[0]
    assert launch.fast is not None
    assert launch.direct == triton.__version__.startswith("3.6.")


@gpu
def test_gpu_split_k_falls_back_to_zero_when_the_driver_memset_fails(monkeypatch):
    from solutions.gptq import launch

    calls = []

    def failing(ptr, value, count, stream):
        calls.append(count)
        return 201  # CUDA_ERROR_INVALID_CONTEXT

    launch.driver_memset()
    monkeypatch.setattr(launch, "_DRIVER_MEMSET", [failing])
    w = layer(1024, 256, 128)
    a = activations(2, 1024)
    ref = a.double() @ dequantize(w)
    for _ in range(3):
        _fresh_nan_memory(2 * 256 * 4)
        assert rel_err(gptq_matmul(a, w, split_k=4), ref) < TOL
    assert calls  # the hot path tried the driver, then zeroed C itself


@gpu
def test_gpu_launch_hooks_still_run_on_the_fast_path():
    from triton import knobs

    chain = knobs.runtime.launch_enter_hook
    if not hasattr(chain, "add"):
        pytest.skip("this Triton has no launch hook chains")
    w = layer(512, 256, 128)
    a = activations(3, 512)
    gptq_matmul(a, w)
    gptq_matmul(a, w)  # fast and hot from here on
    seen = []
    hook = seen.append
    chain.add(hook)
    try:
        out = gptq_matmul(a, w)
    finally:
        chain.remove(hook)
    assert len(seen) == 1 and rel_err(out, a.double() @ dequantize(w)) < TOL
    gptq_matmul(a, w)
    assert len(seen) == 1


@gpu
@pytest.mark.parametrize("split_k", [1, 4])
def test_gpu_cuda_graph_replays_of_gptq_matmul(monkeypatch, split_k):
    from solutions.gptq import launch

    d32 = launch.driver_memset()
    memsets = []

    def counted(fn):
        def call(*args):
            memsets.append(args)
            return fn(*args)
        return call

    monkeypatch.setattr(launch, "_DRIVER_MEMSET", [counted(d32)])
    w = layer(2048, 512, 128)
    a = activations(4, 2048)
    static_a = a.clone()
    eager = gptq_matmul(a, w, split_k=split_k)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gptq_matmul(static_a, w, split_k=split_k)  # warm-up on the capture stream
    torch.cuda.current_stream().wait_stream(side)
    eager_memsets = len(memsets)
    assert eager_memsets == (1 if split_k > 1 else 0)  # the warm-up (the first call compiled, with new_zeros)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = gptq_matmul(static_a, w, split_k=split_k)
    assert len(memsets) == eager_memsets  # captured: torch's fill kernel, not a memset node
    for _ in range(3):  # each replay zeroes C again (a missing zero-fill would double the result)
        graph.replay()
        torch.cuda.synchronize()
        assert rel_err(out, eager.double()) < 1e-3
    b = activations(4, 2048, seed=7)
    static_a.copy_(b)
    graph.replay()
    torch.cuda.synchronize()
    assert rel_err(out, b.double() @ dequantize(w)) < TOL


def test_explicit_config_that_needs_the_dropped_qweight_is_refused():
    from solutions.gptq import GPTQConfig

    w = layer(256, 128, 128)
    with pytest.raises(ValueError, match="keep_plain"):
        gptq_matmul(activations(2, 256), w, config=GPTQConfig(block_k=64))


# --------------------------------------------------------------------------- the custom op


def test_custom_op_fake_tensor_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    w = layer(256, 136, 32, act_order=True)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        a = mode.from_tensor(activations(3, 256).reshape(1, 3, 256))
        out = torch.ops.gptq.matmul(a, *op_args(w))
    assert out.shape == (1, 3, 136) and out.dtype == torch.float16


def test_custom_op_opcheck():
    w = layer(256, 128, 64)
    torch.library.opcheck(torch.ops.gptq.matmul.default, (activations(2, 256), *op_args(w)),
                          test_utils=("test_schema", "test_faketensor"))


def test_compiled_fullgraph_matches_eager():
    lin = GPTQLinear(layer(256, 136, 32, act_order=True))
    x = activations(6, 256).reshape(2, 3, 256)
    backend = "inductor" if CUDA else "aot_eager"
    compiled = torch.compile(lin, fullgraph=True, backend=backend)
    out = compiled(x)  # compiled before any eager call
    assert len(lin.gptq_weight().plans) == 1  # the op used the module's registered weight
    assert rel_err(out, lin(x)) < 1e-3


@gpu
def test_compiled_reduce_overhead_matches_eager():
    lin = GPTQLinear(layer(4096, 4096 + 128, 128))
    compiled = torch.compile(lin, fullgraph=True, mode="reduce-overhead")
    for m in (1, 16, 1024):
        x = activations(m, 4096, seed=m)
        ref = x.double() @ dequantize(lin.gptq_weight())
        for _ in range(3):  # warm-up, recording, replay
            out = compiled(x)
        assert rel_err(out, ref) < TOL


# --------------------------------------------------------------------------- GPTQLinear and models


@pytest.mark.parametrize("bias", [False, True])
def test_gptq_linear_matches_dequantized_linear_at_odd_shapes(bias):
    torch.manual_seed(0)
    lin = nn.Linear(288, 72, bias=bias).half().to(DEVICE)
    g = GPTQLinear.from_linear(lin, 32)
    g(activations(2, 288))  # a plan (compiled kernel on GPU) that a deep copy must not carry over
    twin = copy.deepcopy(g)
    assert not twin.gptq_weight().plans and twin.gptq_weight().scales is twin.scales
    ref_lin = dequantize_linears(nn.Sequential(twin))[0]
    assert type(ref_lin) is nn.Linear
    x = activations(7, 288).reshape(7, 1, 288)
    out = g(x)
    assert out.shape == (7, 1, 72)
    assert rel_err(out, ref_lin(x.float().half())) < TOL
    assert rel_err(out, x.double() @ g.dequantized_weight(torch.float64).t()
                   + (lin.bias.double() if bias else 0)) < TOL


def test_gptq_linear_from_autogptq_tensors_and_state_dict():
    w = torch.randn(256, 128, generator=torch.Generator().manual_seed(4)) * 0.02
    q = quantize_rtn(w, 64, act_order=True, checkpoint_format="gptq_v2")
    g = GPTQLinear.from_gptq(q.tensors, q.quantize_config).to(DEVICE)
    assert {"qzeros", "scales", "qweight_mma", "a_perm"} <= set(g.state_dict())
    x = activations(3, 256)
    assert rel_err(g(x), x.double() @ dequantize(g.gptq_weight())) < TOL


class TinyLlamaBlock(nn.Module):
    """The linear layers of a Llama decoder block (attention projections and gated MLP), no attention math."""

    def __init__(self, hidden: int, inter: int) -> None:
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.gate_proj, self.up_proj = nn.Linear(hidden, inter, bias=False), nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.o_proj(self.q_proj(x) * torch.sigmoid(self.k_proj(x)) + self.v_proj(x))
        return h + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


def test_quantize_linears_on_a_tiny_model_matches_the_dequantized_model():
    torch.manual_seed(0)
    model = nn.Sequential(TinyLlamaBlock(128, 352), TinyLlamaBlock(128, 352), nn.Linear(128, 60))
    model = model.half().to(DEVICE)
    for p in model.parameters():
        p.data.mul_(0.5)
    quantize_linears(model, group_size=32, skip=("2",))
    assert isinstance(model[0].down_proj, GPTQLinear) and type(model[2]) is nn.Linear
    ref = dequantize_linears(copy.deepcopy(model))
    x = activations(5, 128).reshape(1, 5, 128)
    assert rel_err(model(x), ref(x)) < TOL


@pytest.mark.gpu
def test_transformers_llama_matches_dequantized_model():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=512, intermediate_size=1408, num_hidden_layers=2,
                                      num_attention_heads=8, num_key_value_heads=8, vocab_size=1000)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).half().cuda().eval()
    quantize_linears(model, group_size=128)
    assert isinstance(model.model.layers[0].mlp.down_proj, GPTQLinear)
    ref = dequantize_linears(copy.deepcopy(model))
    ids = torch.randint(0, 1000, (2, 9), device="cuda")
    with torch.no_grad():
        out, expect = model(ids).logits, ref(ids).logits
    assert rel_err(out, expect) < TOL


def test_dataclass_replace_starts_with_no_plans():
    w = layer(256, 128, 128)
    gptq_matmul(activations(2, 256), w)
    assert w.plans and not dataclasses.replace(w, qweight_mma=w.qweight_mma).plans


def test_custom_op_reuses_registered_weights_only_while_they_live():
    import gc

    from solutions.gptq import layer as layer_mod

    w = layer(256, 128, 128)
    a = activations(2, 256)
    torch.ops.gptq.matmul(a, *op_args(w))
    assert not w.plans  # not registered: the op planned on a weight of its own
    layer_mod.register_weight(w)
    out = torch.ops.gptq.matmul(a, *op_args(w))
    assert len(w.plans) == 1 and rel_err(out, a.double() @ dequantize(w)) < TOL
    n = len(layer_mod._WEIGHTS)
    del w
    gc.collect()
    assert len(layer_mod._WEIGHTS) == n - 1  # the registry does not keep a weight (or its tensors) alive
