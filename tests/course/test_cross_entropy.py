"""Puzzle 27, fused softmax cross-entropy: the spec is torch's loss and gradient, correct kernels in other styles
pass (three passes, exp instead of exp2, the loss written in the second pass), and each classic mistake fails
for its own reason, named in the verdict. The reference passing and the starter failing at every size:
tests/grading/test_harness.py; its compile check: tests/running/test_compile_check.py."""

from __future__ import annotations

import p27_fused_cross_entropy as p27
import pytest
import torch

from puzzles import test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")
LARGE_LOGITS = 3  # the size whose logits reach ±100 (bug_inputs.cross_entropy_inputs)


def grade(kernel, seed: int = 1234, **kwargs):
    return test(kernel, catalog.get(27).spec, quiet=True, seed=seed, compile_check=False, **kwargs)


def test_the_spec_is_torchs_mean_loss_and_its_gradient():
    from puzzles.course.bug_inputs import cross_entropy_inputs

    p = catalog.get(27)
    for index, sizes in enumerate(p.sizes):
        gen = torch.Generator().manual_seed(index)
        drawn = cross_entropy_inputs(sizes, index, gen)
        logits = drawn.get("logits", torch.randn(sizes["N0"], sizes["V"], generator=gen)).requires_grad_()
        targets = drawn["targets"]
        assert 0 < int((targets != sizes["IGNORE_INDEX"]).sum()) < sizes["N0"]  # some rows ignored, not all
        loss = torch.nn.functional.cross_entropy(logits, targets.long(), ignore_index=sizes["IGNORE_INDEX"])
        loss.backward()
        z = p.spec(logits.detach(), targets, IGNORE_INDEX=sizes["IGNORE_INDEX"])
        torch.testing.assert_close(z[:, -1].sum(), loss.detach())
        torch.testing.assert_close(z[:, :-1], logits.grad)


# -- correct kernels in other styles ------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [p27.cross_entropy_three_passes, p27.cross_entropy_row_loop],
                         ids=["three-passes", "row-loop"])
@pytest.mark.parametrize("seed", [1, 2])
def test_correct_kernels_in_other_styles_pass(kernel, seed):
    result = grade(kernel, seed)
    assert result.passed, str(result)


def test_a_correct_kernel_in_another_style_compiles_for_every_target():
    result = test(p27.cross_entropy_row_loop, catalog.get(27).spec, quiet=True, seed=3, compile_check=True)
    assert result.passed, str(result)


# -- wrong kernels, each failing for its reason --------------------------------------------------------------


@pytest.mark.parametrize(("kernel", "size", "slip"), [
    (p27.cross_entropy_no_max, LARGE_LOGITS, "does not subtract the maximum"),
    (p27.cross_entropy_counting_ignored_rows, 0, "ignored rows are counted in the mean"),
    (p27.cross_entropy_grad_not_divided, 0, "gradient is not divided by n"),
    (p27.cross_entropy_without_one_hot, 0, "subtract the one-hot"),
], ids=["no-max", "ignored-counted", "not-divided", "no-one-hot"])
def test_each_likely_slip_fails_and_is_named(kernel, size, slip):
    result = grade(kernel)
    failure = result.first_failure
    assert failure is not None and failure.status == "wrong", str(result)
    assert failure.sizes == catalog.get(27).sizes[size], str(result)
    assert SLIP_NOTE + "the" in failure.reason() and slip in failure.reason(), failure.reason()


def test_without_the_maximum_only_the_large_logits_fail():
    result = grade(p27.cross_entropy_no_max)
    assert [o.passed for o in result.outcomes] == [True, True, True, False], str(result)


def test_a_hard_coded_ignore_index_fails_where_it_is_a_real_class():
    result = grade(p27.cross_entropy_ignoring_minus_100)
    assert [o.sizes["IGNORE_INDEX"] for o in result.outcomes if not o.passed] == [3, -1], str(result)


def test_the_logits_row_stride_used_for_the_output_fails():
    result = grade(p27.cross_entropy_output_stride_v)
    assert result.first_failure is not None and result.first_failure.status in ("wrong", "unwritten"), str(result)


@interpreted_only
def test_the_last_chunk_without_its_column_mask_reads_out_of_bounds():
    result = grade(p27.cross_entropy_without_column_mask)
    failure = result.first_failure
    assert failure is not None and failure.status == "out of bounds", str(result)
    assert "logits" in failure.reason(), failure.reason()


def test_the_loss_column_never_stored_is_unwritten():
    result = grade(p27.cross_entropy_without_loss)
    failure = result.first_failure
    assert failure is not None and failure.status == "unwritten", str(result)
    width = failure.sizes["V"]
    assert all(index[1] == width for index in failure.unwritten), failure.unwritten  # column V holds the loss
