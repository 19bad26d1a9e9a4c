"""Puzzle 22, torch.compile first: the reference passes, each likely slip fails for its own reason, the
capture of inductor's code made on a GPU ships with the course and parses, and the notebook puts the
compile step before the learner's kernel."""

from __future__ import annotations

import ast
import json

import p22_torch_compile_first as p22
import pytest

from puzzles import on_gpu, test
from puzzles.course import catalog
from puzzles.course.notebooks import puzzle_notebook
from puzzles.learner import inductor_code

P = catalog.get(22)


def grade(kernel):
    return test(kernel, P.spec, quiet=True, seed=2207)


@pytest.mark.parametrize("kernel, slip", [
    (p22.without_bias, "the bias is left out"),
    (p22.without_relu, "the relu is left out"),
    (p22.bias_after_relu, "the bias is added after the relu"),
], ids=lambda x: getattr(getattr(x, "fn", None), "__name__", ""))
def test_a_likely_slip_is_named_in_the_verdict(kernel, slip):
    result = grade(kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives" in result.reason() and slip in result.reason(), str(result)


def test_a_bias_read_by_row_is_named_or_out_of_bounds():
    result = grade(p22.bias_by_row)
    statuses = {o.status for o in result.outcomes}
    assert not result.passed and "out of bounds" in statuses, str(result)  # M > N: reads past b
    wrong = [o for o in result.outcomes if o.status == "wrong"]
    assert wrong and any("read by row" in o.reason() for o in wrong), str(result)  # M < N: the slip is named


def test_a_loop_over_k_that_stops_a_chunk_short_fails():
    result = grade(p22.k_loop_one_chunk_short)
    assert result.first_failure.status == "wrong", str(result)
    assert "K" in result.reason(), str(result)


def test_the_shipped_capture_is_inductors_code_for_this_spec():
    saved = inductor_code.shipped(22)
    assert saved["spec"] == P.spec_name and saved["sizes"] == P.perf_size
    assert saved["torch"] and saved["triton"] and "H100" in saved["device"]
    assert saved["command"] == "python -m puzzles.learner.inductor_code 22"
    ast.parse(saved["code"])  # the wrapper inductor wrote is Python
    kernels, calls = inductor_code.kernels_in(saved["code"])
    # the lesson's premise: cuBLAS for the matmul, and one Triton kernel for + b and relu, reading it back
    assert calls == ["extern_kernels.mm"] and len(kernels) == 1 and "relu" in kernels[0]
    # the generated kernel's own source is there to read, and it compiles as Python too
    source = saved["code"].split(f"def {kernels[0]}(", 1)[1]
    assert "tl.load" in source and "tl.store" in source
    json.dumps(saved)


@pytest.mark.interpreter("on a GPU the code is compiled live")
def test_without_a_gpu_the_notebook_reads_the_capture_and_says_so():
    code = inductor_code.compiled_code(22)
    assert code.startswith("# No GPU here") and "captured on a NVIDIA H100" in code
    assert "python -m puzzles.learner.inductor_code 22" in code.splitlines()[1]
    assert "Timing needs a CUDA GPU" in inductor_code.compare_with_compiled(22)


def test_the_notebook_compiles_the_spec_before_the_kernel():
    ids = [c["id"] for c in puzzle_notebook(P)["cells"]]
    assert ids.index("p22-spec") < ids.index("p22-lead-1") < ids.index("p22-lead-2") < ids.index("p22-kernel")
    assert "compiled_code(22)" in "".join(puzzle_notebook(P)["cells"][ids.index("p22-lead-2")]["source"])


def test_the_refresh_command_needs_a_gpu(capsys):
    if on_gpu():
        pytest.skip("refreshing on a GPU would rewrite the shipped capture")
    assert inductor_code.main(["22"]) == 1
    assert "on a machine with one" in capsys.readouterr().out
    assert inductor_code.main([]) == 2


@pytest.mark.gpu
def test_on_a_gpu_inductor_still_leaves_the_epilogue_to_a_second_kernel():
    kernels, calls = inductor_code.kernels_in(inductor_code.compiled_code(22))
    assert calls == ["extern_kernels.mm"] and len(kernels) == 1
    assert "torch.compile" in inductor_code.compare_with_compiled(22)
