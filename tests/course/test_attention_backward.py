"""Puzzle 28, attention backward: the spec is torch's gradient of softmax attention, correct kernels in other styles
pass (dq in a second pass without atomics, exp2 with the scale folded in), and each classic mistake fails for its
own reason, named in the verdict (the dq summed by a plain load, add and store is a race). The reference passing
and the starter failing at every size: tests/grading/test_harness.py; its compile check:
tests/running/test_compile_check.py."""

from __future__ import annotations

import p28_attention_backward as p28
import pytest
import torch

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


def grade(kernel, seed: int = 1234, **kwargs):
    return test(kernel, catalog.get(28).spec, quiet=True, seed=seed, compile_check=False, **kwargs)


def test_the_spec_is_torchs_gradient_of_attention_from_the_saved_logsumexp():
    from puzzles.course.bug_inputs import attention_backward_inputs

    p = catalog.get(28)
    for index, sizes in enumerate(p.sizes):
        i = attention_backward_inputs(sizes, index, torch.Generator().manual_seed(index))
        q, k, v = (i[name].double().requires_grad_() for name in ("q", "k", "v"))
        o = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
        torch.testing.assert_close(o.detach().float(), i["o"])
        o.backward(i["do"].double())
        z = p.spec(*(i[name].double() for name in ("q", "k", "v", "o", "do", "lse")))
        torch.testing.assert_close(z, torch.stack([q.grad, k.grad, v.grad]), rtol=1e-5, atol=1e-6)


# -- correct kernels in other styles ------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [p28.attention_backward_two_passes, p28.attention_backward_scaled_q],
                         ids=["two-passes", "scaled-q"])
@pytest.mark.parametrize("seed", [1, 2])
def test_correct_kernels_in_other_styles_pass(kernel, seed):
    result = grade(kernel, seed)
    assert result.passed, str(result)


def test_a_correct_kernel_without_atomics_compiles_for_every_target():
    result = test(p28.attention_backward_two_passes, catalog.get(28).spec, quiet=True, seed=3, compile_check=True)
    assert result.passed, str(result)


# -- wrong kernels, each failing for its reason --------------------------------------------------------------


@pytest.mark.parametrize(("kernel", "slip"), [
    (p28.attention_backward_without_scale, "the scale 1/sqrt(D) is missing"),
    (p28.attention_backward_scale_in_scores_only, "dq and dk miss the factor 1/sqrt(D)"),
    (p28.attention_backward_without_lse, "not exp(s - lse)"),
    (p28.attention_backward_without_delta, "lacks the term rowsum(dO * O)"),
], ids=["no-scale", "scale-in-scores-only", "no-lse", "no-delta"])
def test_each_likely_slip_fails_at_every_size_and_is_named(kernel, slip):
    result = grade(kernel)
    assert not any(o.passed for o in result.outcomes), str(result)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    if not on_gpu():  # on a GPU tl.dot's TF32 rounding leaves the slip's output a few percent away: the verdict counts
        assert SLIP_NOTE in failure.reason() and slip in failure.reason(), str(result)


@interpreted_only
def test_dq_summed_by_a_plain_load_add_and_store_is_a_race():
    result = grade(p28.attention_backward_dq_by_load_and_store)
    failure = result.first_failure
    assert failure is not None and failure.status == "race", str(result)
    assert "tl.atomic_add" in failure.error.message, failure.error.message


@interpreted_only
def test_query_rows_past_t_read_out_of_bounds():
    result = grade(p28.attention_backward_without_row_mask)
    failure = result.first_failure
    assert failure is not None and failure.status == "out of bounds", str(result)


@interpreted_only
def test_dv_never_stored_is_unwritten_though_the_output_starts_at_zero():
    result = grade(p28.attention_backward_without_dv)
    failure = result.first_failure
    assert failure is not None and failure.status == "unwritten", str(result)
    assert all(index[0] == 2 for index in failure.unwritten), failure.unwritten  # z[2] is dv
