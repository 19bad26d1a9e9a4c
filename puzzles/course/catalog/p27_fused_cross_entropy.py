"""Puzzle 27: fused softmax cross-entropy, forward and backward in one kernel."""

import torch
from jaxtyping import Float32, Int32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_training as slips
from puzzles.course.bug_inputs import cross_entropy_inputs
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import (
    KSlice,
    Mistake,
    OutputPart,
    OutputParts,
    Puzzle,
    Reduction,
    ScalarWork,
    SpeedGoal,
    cdiv,
)


def cross_entropy_spec(logits: Float32[Tensor, "N0 V"], targets: Int32[Tensor, "N0"], *,
                       IGNORE_INDEX: int) -> Float32[Tensor, "N0 V+1"]:
    """z[i, :V] = (softmax(x_i) - onehot(t_i)) / n, z[i, V] = (lse(x_i) - x_i[t_i]) / n, n = #{t_i != IGNORE_INDEX}

    lse is the logsumexp; a row whose target is IGNORE_INDEX is 0."""
    kept = targets != IGNORE_INDEX
    count = kept.sum().to(logits.dtype)
    loss = torch.nn.functional.cross_entropy(logits, targets.long(), ignore_index=IGNORE_INDEX, reduction="none")
    hot = torch.arange(logits.shape[1], device=logits.device)[None, :] == targets[:, None]
    grad = torch.where(kept[:, None], logits.softmax(1) - hot.to(logits.dtype), 0.0)
    return torch.cat([grad, loss[:, None]], 1) / count


PUZZLE = Puzzle(
    number=27,
    slug="fused_cross_entropy",
    title="Fused softmax cross-entropy",
    kernel_name="cross_entropy_kernel",
    spec=cross_entropy_spec,
    reduction=Reduction("V", KSlice("logits", 1)),  # a loop over V that stops early is named
    statement=r"""
The last layer of a language model gives, for each of `N0` tokens, a row of `V` logits `x_i`
(one per word of the vocabulary), and the training target `t_i` is the word that came next. The
loss is the cross-entropy, averaged over the tokens, as `torch.nn.functional.cross_entropy(x, t,
ignore_index=IGNORE_INDEX, reduction="mean")` computes it:

$$\ell_i = \log\sum_{j} e^{x_{i,j}} - x_{i,t_i}, \qquad
\mathcal{L} = \frac{1}{n} \sum_{i:\ t_i \ne \mathrm{IGNORE\_INDEX}} \ell_i, \qquad
n = \#\{i : t_i \ne \mathrm{IGNORE\_INDEX}\}$$

Rows whose target is `IGNORE_INDEX` (padding; `-100` in torch, but any integer here, a real class
at one size) add nothing and are not counted in `n`. The gradient of `𝓛` is the softmax minus the
one-hot of the target, over the same `n`:

$$\frac{\partial \mathcal{L}}{\partial x_{i,j}} = \frac{\mathrm{softmax}(x_i)_j - [j = t_i]}{n}
\quad\text{(0 on an ignored row)}$$

A training step needs both, and a fused kernel writes both without ever storing the softmax:
vocabularies are 32 K to 256 K words wide, so each row is walked in chunks of `B1`. **Pass 1**:
an online logsumexp as in puzzle 8 (a running maximum `m` and a running sum `l` of `exp(x - m)`,
rescaled when `m` grows; `logsumexp = m + log l`), picking up the target's logit on the way.
**Pass 2**: the gradient, `exp(x - logsumexp)` minus the one-hot, over `n`. At one size every
other row's logits reach ±100, where `exp(x)` is infinite in float32: subtract the maximum.

**The output.** One tensor `z` of shape `N0 × (V + 1)` holds both: row `i` of `z` is row `i`
of the gradient (`V` values) followed by `ℓ_i / n`, the row's share of the mean (0 on an ignored
row), so that `z[:, :V]` is `dlogits` and `z[:, V].sum()` is the loss torch gives. Mind the
row stride of `z`: `V + 1`, one more than the logits'.

**The count.** `n` depends on every row's target, and each program handles `B0` rows. Every
program counts it itself: `targets` is only `N0` integers, so load them `B1` at a time and sum
`targets != IGNORE_INDEX`. (A training loop often counts on the host and passes `n` in.)

The grid is `(cdiv(N0, B0),)`; `N0` need not be a multiple of `B0`, nor `V` of `B1`.
""",
    sizes=(
        {"N0": 5, "V": 300, "IGNORE_INDEX": -100, "B0": 1, "B1": 64},
        {"N0": 5, "V": 129, "IGNORE_INDEX": -100, "B0": 2, "B1": 32},  # a last chunk of one column
        # IGNORE_INDEX a real class, and V a multiple of B1: a kernel that hard-codes -100 fails.
        {"N0": 6, "V": 256, "IGNORE_INDEX": 3, "B0": 4, "B1": 64},
        {"N0": 6, "V": 200, "IGNORE_INDEX": -1, "B0": 2, "B1": 64},  # logits of ±100 (cross_entropy_inputs)
    ),
    hints=(
        "The idea: per row, two walks along the vocabulary in chunks of `B1`. The first is puzzle 8's online "
        "logsumexp (a running maximum and a running sum rescaled when the maximum grows), picking up the target's "
        "logit as it passes; the second writes the gradient, the softmax from that logsumexp minus the one-hot. "
        "Both are divided by `n`, the kept rows of the whole batch, which every program counts for itself.",
        "The shape: the count first, a loop over `targets` in blocks of `B1` (padding loaded as `IGNORE_INDEX`) "
        "adding up `t != IGNORE_INDEX`. Then, for the program's `B0` rows: their targets; pass 1 over the chunks "
        "(masked lanes loaded as `-inf`, so they add `exp(-inf) = 0`); the row's loss `lse − x_t` over `n` (0 on an "
        "ignored row) into column `V` of `z`, where `(m − x_t) + log l` keeps more precision than "
        "`(m + log l) − x_t`; pass 2 reloads each chunk and stores its gradient, 0 on an ignored row. `z`'s row "
        "stride is `V + 1`.",
        "One key line, pass 1's update: `l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)`, with "
        "`m_new` the larger of `m` and the chunk's row maxima.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]),),
    draw_inputs=cross_entropy_inputs,
    # z[:, :V] is the gradient, z[:, V] the loss: verdicts say dlogits[2, 5] and loss[2].
    output_parts=OutputParts(1, (OutputPart("dlogits", "V"), OutputPart("loss", 1, keeps_axis=False))),
    likely_mistakes=(
        Mistake("the logsumexp does not subtract the maximum: where a logit passes about 88, exp overflows float32 "
                "and the loss is infinite; keep a running maximum m and sum exp(x - m)",
                slips.cross_entropy_without_max),
        Mistake("the softmax is exp(x) / sum exp(x), without the maximum: where a logit passes about 88 both overflow "
                "(inf / inf is NaN); use exp(x - logsumexp) with logsumexp = m + log(l)",
                slips.cross_entropy_exp_over_sum),
        Mistake("the ignored rows are counted in the mean: n is the number of rows whose target is not "
                "IGNORE_INDEX, not N0", slips.cross_entropy_ignored_counted),
        Mistake("the gradient is not divided by n: the loss is a mean over n rows, so each row's gradient is "
                "(softmax - onehot) / n", slips.cross_entropy_grad_not_divided),
        Mistake("each row's loss is not divided by n: z[i, V] is the row's share of the mean, ℓ_i / n, so that "
                "the column sums to the loss", slips.cross_entropy_loss_not_divided),
        Mistake("the gradient is the softmax alone: subtract the one-hot of the target, 1 at column t_i",
                slips.cross_entropy_without_one_hot),
        Mistake("the ignored rows get a gradient: an ignored row adds nothing to the loss, so its gradient is 0",
                slips.cross_entropy_ignored_rows_graded),
        Mistake("the one-hot is not divided by n: (tl.exp(x - lse) / n) - onehot divides the softmax alone; "
                "divide the difference, (tl.exp(x - lse[:, None]) - onehot) / n",
                slips.cross_entropy_one_hot_not_divided),
        Mistake("the ignored rows get a loss: z[i, V] is 0 where t_i is IGNORE_INDEX; store "
                "tl.where(kept, loss, 0.0), with kept = target != IGNORE_INDEX", slips.cross_entropy_ignored_rows_lose),
        Mistake("the logits' masked lanes are loaded as 0: in pass 1, tl.load(logits_ptr + ..., mask=..., other=0.0) "
                "adds exp(0 - m) to the sum for every lane past V in the last chunk; load them with "
                "other=-float(\"inf\"), whose exp is 0", slips.cross_entropy_padding_as_zero),
        Mistake("the running sum is not rescaled when the maximum grows: l += tl.sum(tl.exp(x - m_new[:, None]), 1) "
                "keeps the earlier chunks' terms relative to the old maximum; write "
                "l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)",
                slips.cross_entropy_sum_not_rescaled),
        Mistake("the logsumexp leaves out the maximum: lse = tl.log(l) is the log of a sum of exp(x - m), so "
                "lse = m + tl.log(l)", slips.cross_entropy_lse_without_max),
        Mistake("the count's masked lanes are loaded as 0: tl.load(targets_ptr + r, mask=r < N0, other=0) gives the "
                "lanes past N0 class 0, which is not IGNORE_INDEX, so they are counted; load them with "
                "other=IGNORE_INDEX (or count (t != IGNORE_INDEX) & (r < N0))", slips.cross_entropy_count_padding_kept),
        Mistake("n counts only the program's own B0 rows: the mean is over the whole batch, so every program counts "
                "the kept rows of all N0 targets, in a loop over them (for r0 in range(0, N0, B1))",
                slips.cross_entropy_count_own_rows),
    ),
    perf_size={"N0": 4096, "V": 32768, "IGNORE_INDEX": -100, "B0": 1, "B1": 2048},
    # One exp per logit at the fewest (a row held in registers); two passes take two.
    scalar_work=lambda s: ScalarWork(fmas=3 * s["N0"] * s["V"], exps=s["N0"] * s["V"]),
    speed_goal=SpeedGoal(vs_compile=1.0, roofline=0.6,
                         levers="one program per row, wide chunks (B1 of 1024 to 4096), num_warps 8 to 16; the second "
                                "pass reads a row the first just read (128 KB at V = 32 K), mostly from L2"),
    # Gradient elements are about 1 / (V · n); float32 rounding leaves 1e-7 of them, and a large logit's loss
    # rounds to its ulp (8e-6 at 100).
    rtol=1e-4,
    atol=1e-5,
    library=LibraryBaseline(
        "F.cross_entropy forward + backward (autograd)", library_ops.cross_entropy_library,
        why="a training step's loss and its gradient as torch computes them: log-softmax and NLL forward, their "
            "backward by autograd (reduction=\"none\" then the mean over kept rows, so each row's loss is there "
            "to check; the mean's own kernels are a few microseconds)"),
)
