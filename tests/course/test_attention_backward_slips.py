"""Puzzle 28's slips as learners write them from the notebook (issue 48): each fails at every one of 20 seeds and
is named with its line and its fix, in the words of the result it breaks (dQ, dK, dV, not "matrices 0 of z"),
and a race on dQ is told by its coordinates. The slips the first tests name: tests/course/test_attention_backward.py."""

from __future__ import annotations

import p28_attention_backward as p28
import pytest
from judging import SEEDS, grade, interpreted_only

from puzzles import on_gpu
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py


# (kernel, words of its named slip, the results it leaves right)
NAMED = [
    (p28.dq_without_scale, "dQ misses the factor 1/sqrt(D)", "dK and dV are right"),
    (p28.dk_without_scale, "dK misses the factor 1/sqrt(D)", "dQ and dV are right"),
    (p28.scores_unscaled, "s = tl.dot(q, tl.trans(k)) * scale", ""),
    (p28.dk_from_p, "dK is built from P", "dQ and dV are right"),
    (p28.dv_from_ds, "dV is built from dS", "dQ and dK are right"),
    (p28.softmax_per_key_block, "softmax over each block of B1 keys", ""),
    (p28.exp2_with_natural_lse, "tl.exp2((s - lse[:, None]) * LOG2E)", ""),
    (p28.exp2_without_log2e, "LOG2E = 1.4426950408889634", ""),
    (p28.delta_over_one_key_block, "delta = tl.sum(do * o, 1)", "dV is right"),
]


@pytest.mark.parametrize(("kernel", "slip", "which"), NAMED, ids=lambda k: getattr(k, "__name__", None))
def test_each_slip_fails_at_every_seed_and_is_named_with_its_fix(kernel, slip, which):
    for seed in SEEDS:
        result = grade(28, kernel, seed)
        assert not result.passed, f"seed {seed}: {result}"
        if on_gpu():  # TF32 leaves a slip's output a few percent away from the slip's float64 one
            continue
        failure = result.first_failure
        assert SLIP_NOTE in failure.reason() and slip in failure.reason(), f"seed {seed}: {result}"
        assert which in failure.reason() and "matrices" not in failure.reason(), f"seed {seed}: {result}"
        assert not any("float16 or bfloat16" in o.reason() for o in result.outcomes), f"seed {seed}: {result}"


def test_a_wrong_element_is_named_in_its_result():
    failure = grade(28, p28.dk_without_scale).first_failure
    assert "first dK[" in failure.reason() and "z[" not in failure.reason(), failure.reason()
    assert "dK[" in str(grade(28, p28.dk_without_scale)), "the detail lines name dK too"


@interpreted_only
def test_dq_stored_by_every_key_block_is_a_race_told_by_its_coordinates():
    failure = grade(28, p28.dq_stored_not_added).first_failure
    assert failure is not None and failure.status == "race", str(failure)
    assert "dQ[" in failure.error.message and "element" not in failure.error.message, failure.error.message


@interpreted_only
def test_a_race_on_an_output_that_packs_nothing_is_told_by_its_coordinates():
    import p17_splitk_matmul as p17

    failure = grade(17, p17.splitk_store_then_add, 1).first_failure
    assert failure is not None and failure.status == "race", str(failure)
    message = failure.error.message
    assert "both write z[" in message and "element" not in message, message
