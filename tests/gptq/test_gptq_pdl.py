"""Programmatic dependent launch in the lean decode step (solutions/gptq/pdl.py): every kernel of the step,
compiled for sm_90 offline, waits for the previous kernel before it touches global memory; a kernel that
reads before waiting is caught; on a Hopper GPU the step uses PDL and decodes the same tokens as without.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

CUDA = torch.cuda.is_available()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repository root (Triton compiling, not interpreting)."""
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=env)


def test_every_step_kernel_waits_before_it_touches_memory():
    run = subprocess.run([sys.executable, "-m", "solutions.gptq.pdl_check"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT, env={**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": ROOT})
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    lines = run.stdout.splitlines()
    names = {line.split(":")[0] for line in lines}
    assert names == {"_add_rms_norm_kernel", "_rope_attend_kernel", "_silu_mul_kernel", "_greedy_pick_kernel",
                     "gptq_small_m_kernel"}, run.stdout
    assert all(line.endswith(": ok") for line in lines), run.stdout
    # add_rms_norm with and without delta; the matmul with one share, split-K, and the experiments' two flag sets
    assert len(lines) == 9


def test_the_check_catches_a_read_or_write_before_the_wait_and_a_kernel_without_pdl(tmp_path):
    run = run_python("""
        import triton, triton.language as tl
        from solutions.gptq.pdl import start_next_kernel, wait_for_previous_kernel
        from solutions.gptq.pdl_check import compile_ptx, rule_breaks
        import torch

        @triton.jit
        def reads_first(x_ptr, y_ptr, PDL: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, 128))
            if PDL:
                start_next_kernel()
                wait_for_previous_kernel()
            tl.store(y_ptr + tl.arange(0, 128), x + 1)

        @triton.jit
        def writes_first(x_ptr, y_ptr, PDL: tl.constexpr):
            tl.store(y_ptr + tl.arange(0, 128), tl.zeros((128,), tl.float32))
            if PDL:
                start_next_kernel()
                wait_for_previous_kernel()
            tl.store(y_ptr + tl.arange(0, 128), tl.load(x_ptr + tl.arange(0, 128)) + 1)

        x = torch.zeros(128)
        print(rule_breaks(*compile_ptx(reads_first, (x, x), dict(PDL=True, launch_pdl=True))))
        print(rule_breaks(*compile_ptx(reads_first, (x, x), dict(PDL=False))))
        print(rule_breaks(*compile_ptx(writes_first, (x, x), dict(PDL=True, launch_pdl=True))))
        """, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    early, plain, written = run.stdout.splitlines()
    assert "global access before the wait: ld.global" in early, early
    assert "not launched with launch_pdl" in plain and "no griddepcontrol.wait" in plain, plain
    assert "global access before the wait: st.global" in written, written


def test_pdl_is_asked_for_only_where_it_exists():
    """``pdl=True`` plans a PDL launch only on a GPU that has it, and computes the same product either way."""
    from solutions.gptq import GPTQConfig, gptq_matmul, load_gptq_layer, quantize_rtn
    from solutions.gptq.pdl import pdl_available

    assert not pdl_available("cpu")
    device = "cuda" if CUDA else "cpu"
    layer = quantize_rtn(torch.randn(256, 384, generator=torch.Generator().manual_seed(0)) * 0.02, 128)
    weight = load_gptq_layer({key: t.to(device) for key, t in layer.tensors.items()}, layer.quantize_config)
    x = torch.randn(1, 256, generator=torch.Generator().manual_seed(1)).half().to(device)
    one_share = GPTQConfig(16, 128, 128, 1, 1, 4, 3)  # no atomics: the same bits with and without PDL
    with_pdl = gptq_matmul(x, weight, config=one_share, pdl=True)
    assert [bool(plan.pdl) for plan in weight.plans.values()] == [pdl_available(device)]
    torch.testing.assert_close(with_pdl, gptq_matmul(x, weight, config=one_share), rtol=0, atol=0)


@pytest.mark.gpu
def test_graph_decoder_uses_pdl_on_hopper_and_decodes_the_same_tokens():
    pytest.importorskip("transformers")
    from test_gptq_decode import tiny_llama

    from solutions.gptq.decode import GraphDecoder
    from solutions.gptq.layer import quantize_linears
    from solutions.gptq.pdl import DECODE, pdl_available

    model = quantize_linears(tiny_llama(), group_size=128)
    prompt = torch.randint(1, 512, (2, 9), generator=torch.Generator().manual_seed(1)).cuda()
    with_pdl = GraphDecoder(model, batch=2, max_len=32)
    assert with_pdl.pdl == (DECODE if pdl_available() else 0)
    without = GraphDecoder(model, batch=2, max_len=32, pdl=False)
    tokens = with_pdl.generate(prompt, 20)
    assert torch.equal(tokens, without.generate(prompt, 20))
    assert torch.equal(tokens, with_pdl.generate(prompt, 20))  # replayed again, after another prefill
