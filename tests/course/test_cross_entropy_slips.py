"""Puzzle 27's slips as learners write them from the notebook (issue 48): each fails at every one of 20 seeds and
is named with its line and its fix (float32 kernels are never told about float16 or bfloat16 arithmetic), an
unmasked load of an ignored row's target logit reads out of bounds, and the verdict names the loss and the
gradient, not z. The slips the first tests name: tests/course/test_cross_entropy.py."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
from judging import SEEDS, grade, interpreted_only

from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

SIXTEEN_BITS = "float16 or bfloat16"


@triton.jit
def _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr,
                  SLIP: tl.constexpr):
    """The notebook's two passes in float32 with one slip, chosen by SLIP: "padding zero", "not rescaled",
    "lse without max", "count other 0", "own rows", "unmasked target", "ignored loss", "one-hot not divided"."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    kept = target != IGNORE_INDEX
    if SLIP == "own rows":
        n = tl.sum(kept.to(tl.float32), 0)
    else:
        counted = tl.zeros([B1], dtype=tl.float32)
        for r0 in range(0, N0, B1):
            r = r0 + tl.arange(0, B1)
            if SLIP == "count other 0":
                t = tl.load(targets_ptr + r, mask=r < N0, other=0)
            else:
                t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
            counted += (t != IGNORE_INDEX).to(tl.float32)
        n = tl.sum(counted, 0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    x_t = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        if SLIP == "padding zero":
            x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=0.0)
        else:
            x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, 1))
        if SLIP == "not rescaled":
            l += tl.sum(tl.exp(x - m_new[:, None]), 1)
        else:
            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)
        m = m_new
        x_t += tl.sum(tl.where(cols[None, :] == target[:, None], x, 0.0), 1)
    if SLIP == "unmasked target":
        x_t = tl.load(logits_ptr + rows * V + target, mask=rows_in)
    lse = m + tl.log(l)
    if SLIP == "lse without max":
        lse = tl.log(l)
    loss = (lse - x_t) / n
    if SLIP != "ignored loss":
        loss = tl.where(kept, loss, 0.0)
    tl.store(z_ptr + rows * (V + 1) + V, loss, mask=rows_in)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        if SLIP == "one-hot not divided":
            g = tl.exp(x - lse[:, None]) / n - (cols[None, :] == target[:, None]).to(tl.float32)
        else:
            g = (tl.exp(x - lse[:, None]) - (cols[None, :] == target[:, None]).to(tl.float32)) / n
        tl.store(z_ptr + rows[:, None] * (V + 1) + cols[None, :], tl.where(kept[:, None], g, 0.0), mask=inside)


@triton.jit
def padding_loaded_as_zero(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "padding zero")


@triton.jit
def sum_not_rescaled(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "not rescaled")


@triton.jit
def lse_without_max(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "lse without max")


@triton.jit
def count_padding_as_zero(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "count other 0")


@triton.jit
def count_own_rows(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "own rows")


@triton.jit
def target_loaded_unmasked(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "unmasked target")


@triton.jit
def ignored_rows_lose(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "ignored loss")


@triton.jit
def one_hot_not_divided(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "one-hot not divided")


NAMED = [
    (padding_loaded_as_zero, "other=-float(\"inf\")"),
    (sum_not_rescaled, "l = l * tl.exp(m - m_new)"),
    (lse_without_max, "lse = m + tl.log(l)"),
    (count_padding_as_zero, "other=IGNORE_INDEX"),
    (count_own_rows, "the program's own B0 rows"),
    (ignored_rows_lose, "the ignored rows get a loss"),
    (one_hot_not_divided, "(tl.exp(x - lse[:, None]) - onehot) / n"),
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
        result = grade(27, target_loaded_unmasked, seed)
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
    result = grade(27, ignored_rows_lose)
    failure = result.first_failure
    where = failure.reason().split(SLIP_NOTE)[0]  # the slip's own sentence may say where the loss lies in z
    assert "first loss[" in where and "dlogits is right" in where and "z[" not in where, str(result)
    result = grade(27, sum_not_rescaled)
    assert any("dlogits[" in o.reason() for o in result.outcomes if not o.passed), str(result)
