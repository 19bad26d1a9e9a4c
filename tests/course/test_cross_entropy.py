"""Puzzle 27, fused softmax cross-entropy: the spec is torch's loss and gradient, correct kernels in other styles
pass (three passes, exp instead of exp2, the loss written in the second pass), and each classic mistake fails
for its own reason, named in the verdict. The reference passing and the starter failing at every size:
tests/grading/test_harness.py; its compile check: tests/running/test_compile_check.py."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

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


@triton.jit
def cross_entropy_three_passes(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr,
                               B1: tl.constexpr):
    """The maximum, then the sum, then the gradient with the loss written last; tl.exp; the count in a while loop.
    (Each loop's reduction is used once after its loop, `top` through a tl.where, `total` through its log:
    Triton 3.6's OptimizeThreadLocality pass asserts `loopResult.hasOneUse()` on a 2-D block's tl.max or tl.sum
    carried by a loop and used twice after it; seen on the H100, where a kernel using `top` in both later loops
    did not compile.)"""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    n = 0.0
    r0 = 0
    while r0 < N0:
        r = r0 + tl.arange(0, B1)
        t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
        n += tl.sum(tl.where(t != IGNORE_INDEX, 1.0, 0.0))
        r0 += B1
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    top = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :],
                    mask=rows_in[:, None] & (cols[None, :] < V), other=-float("inf"))
        top = tl.maximum(top, tl.max(x, 1))
    top = tl.where(rows_in, top, 0.0)  # rows past N0: a finite shift
    total = tl.zeros([B0], dtype=tl.float32)
    picked = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :],
                    mask=rows_in[:, None] & (cols[None, :] < V), other=-float("inf"))
        total += tl.sum(tl.exp(x - top[:, None]), 1)
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], x - top[:, None], 0.0), 1)
    log_total = tl.log(total)
    weight = tl.where(target != IGNORE_INDEX, 1.0 / n, 0.0)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=0.0)
        soft = tl.exp(x - top[:, None] - log_total[:, None])
        hot = tl.where(cols[None, :] == target[:, None], 1.0, 0.0)
        tl.store(z_ptr + rows[:, None] * (V + 1) + cols[None, :], (soft - hot) * weight[:, None], mask=inside)
    tl.store(z_ptr + rows * (V + 1) + V, (log_total - picked) * weight, mask=rows_in)


@triton.jit
def _row_lse(logits_ptr, row, V, B1: tl.constexpr):
    """One row's online logsumexp, as a helper: (maximum, sum of exp(x - maximum))."""
    m = -float("inf")
    s = 0.0
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + row * V + cols, mask=cols < V, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    return m, s


@triton.jit
def cross_entropy_row_loop(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr,
                           B1: tl.constexpr):
    """1-D blocks: the program's B0 rows one after another in a loop, the row's target logit loaded by address,
    an early skip of the rows past N0."""
    counted = tl.zeros([B1], dtype=tl.int32)
    for r0 in range(0, N0, B1):
        r = r0 + tl.arange(0, B1)
        counted += tl.where(r < N0, tl.load(targets_ptr + r, mask=r < N0) != IGNORE_INDEX, 0).to(tl.int32)
    n = tl.sum(counted, 0).to(tl.float32)
    for k in range(B0):
        row = tl.program_id(0) * B0 + k
        if row < N0:
            t = tl.load(targets_ptr + row)
            m, s = _row_lse(logits_ptr, row, V, B1)
            lse = m + tl.log(s)
            keep = t != IGNORE_INDEX
            x_t = tl.load(logits_ptr + row * V + t, mask=keep, other=0.0)
            tl.store(z_ptr + row * (V + 1) + V, tl.where(keep, (lse - x_t) / n, 0.0))
            for j0 in range(0, V, B1):
                cols = j0 + tl.arange(0, B1)
                x = tl.load(logits_ptr + row * V + cols, mask=cols < V, other=0.0)
                g = tl.where(keep, (tl.exp(x - lse) - (cols == t).to(tl.float32)) / n, 0.0)
                tl.store(z_ptr + row * (V + 1) + cols, g, mask=cols < V)


@pytest.mark.parametrize("kernel", [cross_entropy_three_passes, cross_entropy_row_loop],
                         ids=["three-passes", "row-loop"])
@pytest.mark.parametrize("seed", [1, 2])
def test_correct_kernels_in_other_styles_pass(kernel, seed):
    result = grade(kernel, seed)
    assert result.passed, str(result)


def test_a_correct_kernel_in_another_style_compiles_for_every_target():
    result = test(cross_entropy_row_loop, catalog.get(27).spec, quiet=True, seed=3, compile_check=True)
    assert result.passed, str(result)


# -- wrong kernels, each failing for its reason --------------------------------------------------------------


@triton.jit
def _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr,
                        SLIP: tl.constexpr):
    """The reference's two passes with one slip, chosen by SLIP: "no max", "count all rows", "grad not divided",
    "no one-hot", "ignore -100", "stride V", "no column mask", "no loss"."""
    kept_lanes = tl.zeros([B1], dtype=tl.int32)
    for r0 in range(0, N0, B1):
        r = r0 + tl.arange(0, B1)
        t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
        if SLIP == "ignore -100":
            kept_lanes += ((t != -100) & (r < N0)).to(tl.int32)
        else:
            kept_lanes += (t != IGNORE_INDEX).to(tl.int32)
    n = tl.sum(kept_lanes, 0).to(tl.float32)
    if SLIP == "count all rows":
        n = N0 * 1.0
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    kept = target != IGNORE_INDEX
    if SLIP == "ignore -100":
        kept = target != -100
    out_stride = V + 1
    if SLIP == "stride V":
        out_stride = V
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    if SLIP == "no max":
        m = tl.zeros([B0], dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    x_t = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        if SLIP == "no column mask":
            inside = rows_in[:, None] & (cols[None, :] >= 0)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        if SLIP == "no max":
            l += tl.sum(tl.exp(x), 1)
        else:
            m_new = tl.maximum(m, tl.max(x, 1))
            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)
            m = m_new
        x_t += tl.sum(tl.where(cols[None, :] == target[:, None], x, 0.0), 1)
    lse = m + tl.log(l)
    if SLIP != "no loss":
        tl.store(z_ptr + rows * out_stride + V, tl.where(kept, (lse - x_t) / n, 0.0), mask=rows_in)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        g = tl.exp(x - lse[:, None])
        if SLIP != "no one-hot":
            g -= (cols[None, :] == target[:, None]).to(tl.float32)
        if SLIP != "grad not divided":
            g = g / n
        tl.store(z_ptr + rows[:, None] * out_stride + cols[None, :], tl.where(kept[:, None], g, 0.0), mask=inside)


@triton.jit
def cross_entropy_no_max(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no max")


@triton.jit
def cross_entropy_counting_ignored_rows(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "count all rows")


@triton.jit
def cross_entropy_grad_not_divided(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "grad not divided")


@triton.jit
def cross_entropy_without_one_hot(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no one-hot")


@triton.jit
def cross_entropy_ignoring_minus_100(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "ignore -100")


@triton.jit
def cross_entropy_output_stride_v(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "stride V")


@triton.jit
def cross_entropy_without_column_mask(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no column mask")


@triton.jit
def cross_entropy_without_loss(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no loss")


@pytest.mark.parametrize(("kernel", "size", "slip"), [
    (cross_entropy_no_max, LARGE_LOGITS, "does not subtract the maximum"),
    (cross_entropy_counting_ignored_rows, 0, "ignored rows are counted in the mean"),
    (cross_entropy_grad_not_divided, 0, "gradient is not divided by n"),
    (cross_entropy_without_one_hot, 0, "subtract the one-hot"),
], ids=["no-max", "ignored-counted", "not-divided", "no-one-hot"])
def test_each_likely_slip_fails_and_is_named(kernel, size, slip):
    result = grade(kernel)
    failure = result.first_failure
    assert failure is not None and failure.status == "wrong", str(result)
    assert failure.sizes == catalog.get(27).sizes[size], str(result)
    assert SLIP_NOTE + "the" in failure.reason() and slip in failure.reason(), failure.reason()


def test_without_the_maximum_only_the_large_logits_fail():
    result = grade(cross_entropy_no_max)
    assert [o.passed for o in result.outcomes] == [True, True, True, False], str(result)


def test_a_hard_coded_ignore_index_fails_where_it_is_a_real_class():
    result = grade(cross_entropy_ignoring_minus_100)
    assert [o.sizes["IGNORE_INDEX"] for o in result.outcomes if not o.passed] == [3, -1], str(result)


def test_the_logits_row_stride_used_for_the_output_fails():
    result = grade(cross_entropy_output_stride_v)
    assert result.first_failure is not None and result.first_failure.status in ("wrong", "unwritten"), str(result)


@interpreted_only
def test_the_last_chunk_without_its_column_mask_reads_out_of_bounds():
    result = grade(cross_entropy_without_column_mask)
    failure = result.first_failure
    assert failure is not None and failure.status == "out of bounds", str(result)
    assert "logits" in failure.reason(), failure.reason()


def test_the_loss_column_never_stored_is_unwritten():
    result = grade(cross_entropy_without_loss)
    failure = result.first_failure
    assert failure is not None and failure.status == "unwritten", str(result)
    width = failure.sizes["V"]
    assert all(index[1] == width for index in failure.unwritten), failure.unwritten  # column V holds the loss
