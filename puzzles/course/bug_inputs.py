"""Inputs that make a puzzle's known bugs fail at every seed, not at some.

Uniform random inputs let some classic mistakes through at some seeds (a flash attention that
never rescales its accumulator is off by a few percent only where the running maximum happens
to grow), so a puzzle may shape some of its inputs at one of its sizes: its catalog record
names the function as `draw_inputs`, and the grader calls it with the size, the size's
index and the size's random generator; it returns the inputs it replaces, by name.
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes


def softmax_mixed_rows(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 8, at its last size, four kinds of row: rows reaching ±100 (exp without the
    maximum subtracted overflows), rows in ±1 (masked lanes of the ragged last chunk loaded as 0
    add 56 · exp(-max) to the sum), rows growing along the row (the maximum changes in every
    chunk, so a running sum that is not rescaled is wrong), and rows in ±1 whose last element is
    100 (a maximum taken over part of the row, the first chunk or all but the ragged last one,
    leaves exp(99) to overflow; any shift not below the maximum is right otherwise)."""
    if index != 3:
        return {}
    n, t = sizes["N0"], sizes["T"]
    x = torch.rand((n, t), generator=gen) * 2 - 1
    kind = torch.arange(n) % 4
    x = torch.where((kind == 0)[:, None], x * 100, x)
    x[kind == 3, -1] = 100.0
    return {"x": torch.where((kind == 2)[:, None], x + torch.linspace(0, 4, t), x)}


def attention_all_scores_low(sizes: Sizes, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 9, at its fifth size: positive keys and every other query below -120, so that every score of
    those rows is under -105, where exp(s) underflows to 0 in float32. A running maximum started at 0
    instead of -inf then never moves, every exp(s - m) is 0 and z = 0 / 0; started at -inf (or any
    softmax that subtracts the row's own maximum) the row is as well-defined as any other."""
    keys = torch.rand(sizes["T"], generator=gen) + 1.0
    values = torch.rand(sizes["T"], generator=gen) * 2 - 1
    queries = torch.rand(sizes["N0"], generator=gen) * 2 - 1
    queries = torch.where(torch.arange(sizes["N0"]) % 2 == 0, -120 - 30 * torch.rand(sizes["N0"], generator=gen),
                          queries)
    return {"q": queries, "k": keys, "v": values}


def attention_inputs(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 9's shaped inputs: growing scores at its fourth size, rows of low scores at its fifth."""
    if index == 3:
        return attention_growing_scores(sizes, gen)
    if index == 4:
        return attention_all_scores_low(sizes, gen)
    return {}


def attention_growing_scores(sizes: Sizes, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 9, at its fourth size: keys growing along the row (so, for q > 0, do the scores, and
    the running maximum changes in every chunk), positive values (so the errors of a kernel
    that does not rescale its accumulator add up instead of cancelling), and every third query
    60 times larger, so that its scores reach ±120, where exp without the maximum subtracted
    overflows (small scores let a kernel that never subtracts it pass)."""
    t = sizes["T"]
    keys = torch.sort((torch.rand(t, generator=gen) * 2 - 1) * 2).values
    values = torch.rand(t, generator=gen) + 0.5
    queries = torch.rand(sizes["N0"], generator=gen) * 2 - 1
    queries = torch.where(torch.arange(sizes["N0"]) % 3 == 0, queries * 60, queries)
    return {"q": queries, "k": keys, "v": values}


def linear_cancelling_sum(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 22, at its fourth size: a running sum over K that climbs to 512 and comes back. x and w are
    multiples of 1/8 in [-1, 1] (their products, multiples of 1/64, add up exactly in float32), except
    x[:, BK - 1] · w[BK - 1, :] = 16 · 32 = +512, the last product of the first chunk, and x[:, K - 1] ·
    w[K - 1, :] = 16 · (-32) = -512, alone in the last chunk (K = 3 · BK + 1). A float32 accumulator ends
    exact; a float16 one holds the sum near 512 to a step of 0.5, so each chunk added there loses up to 0.25,
    far beyond the tolerance, and every way of keeping it in float16 (a float16 tl.zeros, out_dtype, a dot
    rounded before the add) rounds the same sums to the same values (puzzle 22's likely slip computes them)."""
    if index != 3:
        return {}
    m, n, k, block = sizes["M"], sizes["N"], sizes["K"], sizes["BK"]
    x = torch.randint(-8, 9, (m, k), generator=gen).to(torch.float16) / 8
    w = torch.randint(-8, 9, (k, n), generator=gen).to(torch.float16) / 8
    x[:, block - 1], w[block - 1, :] = 16.0, 32.0
    x[:, k - 1], w[k - 1, :] = 16.0, -32.0
    return {"x": x, "w": w}


def layernorm_rows(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 25, at its last size, three kinds of row: rows in ±1; rows whose spread is a thousandth (their
    variance, about 3e-7, is far below eps = 1e-5, so eps added after the square root instead of under it is
    off by a factor of 5); and rows around 30 whose spread is a tenth (padding lanes counted as (0 - mean)²
    add 900 each, and E[x²] - mean² cancels: its float32 sums of squares near 900 round by more than a
    hundredth of the variance, so the row is off by far more than the tolerance, at every seed). Those rows
    lie on a grid of 2^-10 and sum to exactly 30 · N: every float32 sum of them is exact and their mean is
    30 to the last bit, so a right kernel (two passes, shifted, or Welford's) meets the spec there."""
    if index != 3:
        return {}
    rows, width = sizes["M"], sizes["N"]
    x = torch.rand((rows, width), generator=gen) * 2 - 1
    kind = torch.arange(rows) % 3
    # Near zero, not around a centre: float32 holds such a row's deviations exactly enough for the spec.
    x = torch.where((kind == 1)[:, None], x * 1e-3, x)
    return {"x": torch.where((kind == 2)[:, None], 30.0 + _centred_on_grid(x * CANCELLING_SPREAD), x)}


# The half-width of puzzle 25's rows around 30 (a standard deviation of 0.115, a 260th of the mean): there
# E[x²] - mean² is off by 0.2-2% (20-200 times the tolerance), while a lane-wise Welford kernel, whose mean
# rounds at every update, stays inside it (at half this width it did not).
CANCELLING_SPREAD = 0.2


def _centred_on_grid(d: Tensor, step: float = 2.0 ** -10) -> Tensor:
    """Each row of `d` rounded to multiples of `step` and shifted (one step at a time, on as many elements as
    it takes) so that it sums to exactly 0."""
    units = torch.round((d - d.mean(1, keepdim=True)) / step).to(torch.int64)  # off 0 by half a step each at most
    excess = units.sum(1, keepdim=True)  # the row's sum, in steps
    order = torch.arange(d.shape[1])[None, :]
    units = units - torch.sign(excess) * (order < excess.abs()).to(torch.int64)
    return units.to(torch.float32) * step


def layernorm_saved_statistics(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 26, at every size (and at the speed size): the mean and the rstd that the forward pass saved for
    these rows of x (eps = 1e-5), not random numbers beside them, so that x̂ = (x - mean) · rstd is the
    normalised row and dx sums to zero along it, as a real backward pass sees it."""
    x = torch.rand((sizes["M"], sizes["N"]), generator=gen) * 2 - 1
    mean = x.mean(1)
    variance = ((x - mean[:, None]) ** 2).mean(1)
    return {"x": x, "mean": mean, "rstd": 1 / torch.sqrt(variance + 1e-5)}


def cross_entropy_inputs(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 27, at every size (and at the speed size, index -1): targets that are classes in [0, V), with
    IGNORE_INDEX at the first row (first sizes), the last row (second sizes) or both (third), and at about one
    other row in four, drawn; at least two rows are kept (so the mean's count is neither N0, 0 nor one block's).
    The first row ignored with a negative IGNORE_INDEX puts an unmasked load of its target's logit,
    `logits_ptr + row * V + target`, before the logits: out of bounds. At its fourth size every other row's
    logits reach ±100, where exp(x) alone is infinite in float32: a logsumexp that does not subtract the maximum
    gives an infinite loss there."""
    rows, width = sizes["N0"], sizes["V"]
    targets = torch.randint(0, width, (rows,), generator=gen, dtype=torch.int32)
    targets = torch.where(targets == sizes["IGNORE_INDEX"], (targets + 1) % width, targets)  # kept means kept
    ignored = torch.rand(rows, generator=gen) < 0.25
    ends = torch.tensor([[True, False], [False, True], [True, True]])[index % 3]
    ignored[0], ignored[-1] = ignored[0] | ends[0], ignored[-1] | ends[1]
    middle = torch.randperm(max(rows - 2, 0), generator=gen) + 1
    for row in middle.tolist():  # too few kept: keep some middle rows
        if int((~ignored).sum()) >= 2:
            break
        ignored[row] = False
    found = {"targets": torch.where(ignored, sizes["IGNORE_INDEX"], targets).to(torch.int32)}
    if index == 3:
        logits = torch.rand((rows, width), generator=gen) * 2 - 1
        found["logits"] = torch.where((torch.arange(rows) % 2 == 0)[:, None], logits * 100, logits)
    return found


def attention_backward_inputs(sizes: Sizes, index: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Puzzle 28, at every size (and the speed size): q, k, v and dO drawn, and o and the logsumexp lse that
    the forward pass saved for them (computed here in float64), so that recomputing p = exp(s - lse) gives a
    softmax. The values are centred on 1 (o then is too), so that rowsum(dO · O) is far from 0 and a dS
    without it is wrong; q and k span ±2, so that the softmax is far from uniform."""
    t, d = sizes["T"], sizes["D"]
    q, k = ((torch.rand((t, d), generator=gen) * 2 - 1) * 2 for _ in range(2))
    v = torch.rand((t, d), generator=gen) + 0.5
    do = torch.rand((t, d), generator=gen) * 2 - 1
    scores = q.double() @ k.double().T * d ** -0.5
    lse = scores.logsumexp(1)
    o = (scores - lse[:, None]).exp() @ v.double()
    return {"q": q, "k": k, "v": v, "o": o.float(), "do": do, "lse": lse.float()}
