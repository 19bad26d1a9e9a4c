"""Puzzle 27's slips as learners write them from the notebook (issue 48): each fails at every one of 20 seeds and
is named with its line and its fix (float32 kernels are never told about float16 or bfloat16 arithmetic), an
unmasked load of an ignored row's target logit reads out of bounds, and the verdict names the loss and the
gradient, not z. The slips the first tests name: tests/course/test_cross_entropy.py."""

from __future__ import annotations

import p27_fused_cross_entropy as p27
import pytest
from judging import SEEDS, grade, interpreted_only

from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

SIXTEEN_BITS = "float16 or bfloat16"


NAMED = [
    (p27.padding_loaded_as_zero, "other=-float(\"inf\")"),
    (p27.sum_not_rescaled, "l = l * tl.exp(m - m_new)"),
    (p27.lse_without_max, "lse = m + tl.log(l)"),
    (p27.count_padding_as_zero, "other=IGNORE_INDEX"),
    (p27.count_own_rows, "the program's own B0 rows"),
    (p27.ignored_rows_lose, "the ignored rows get a loss"),
    (p27.one_hot_not_divided, "(tl.exp(x - lse[:, None]) - onehot) / n"),
]


@pytest.mark.parametrize(("kernel", "fix"), NAMED, ids=lambda k: getattr(k, "__name__", "")[:24])
def test_each_slip_fails_at_every_seed_and_is_named_with_its_fix(kernel, fix):
    for seed in SEEDS:
        result = grade(27, kernel, seed)
        assert not result.passed, f"seed {seed}: {result}"
        reasons = [o.reason() for o in result.outcomes if not o.passed]
        assert any(SLIP_NOTE in r and fix in r for r in reasons), f"seed {seed}: {result}"
        assert not any(SIXTEEN_BITS in r for r in reasons), f"seed {seed}: {result}"


@interpreted_only
def test_an_unmasked_target_load_on_an_ignored_row_reads_out_of_bounds_at_every_seed():
    for seed in SEEDS:
        result = grade(27, p27.target_loaded_unmasked, seed)
        out = [o for o in result.outcomes if o.status == "out of bounds"]
        assert out and "logits" in out[0].reason(), f"seed {seed}: {result}"


def test_ignored_rows_fall_first_last_and_between_across_sizes_and_seeds():
    import torch

    from puzzles.course.bug_inputs import cross_entropy_inputs

    p, first, last, middle = catalog.get(27), set(), set(), 0
    for seed in SEEDS:
        for index, sizes in enumerate(p.sizes):
            ignored = cross_entropy_inputs(sizes, index, torch.Generator().manual_seed(seed))["targets"] == \
                sizes["IGNORE_INDEX"]
            assert int((~ignored).sum()) >= 2, (seed, index)
            if bool(ignored[0]):
                first.add(index)
            if bool(ignored[-1]):
                last.add(index)
            middle += int(ignored[1:-1].any())
    assert first >= {0, 2, 3} and last >= {1, 2}, (first, last)  # 0 and 3: IGNORE_INDEX < 0 (-100, -1)
    assert middle > len(SEEDS), middle


def test_the_verdict_names_the_gradient_and_the_loss():
    result = grade(27, p27.ignored_rows_lose)
    failure = result.first_failure
    where = failure.reason().split(SLIP_NOTE)[0]  # the slip's own sentence may say where the loss lies in z
    assert "first loss[" in where and "dlogits is right" in where and "z[" not in where, str(result)
    result = grade(27, p27.sum_not_rescaled)
    assert any("dlogits[" in o.reason() for o in result.outcomes if not o.passed), str(result)
