"""Puzzle 25: layer norm, forward, over rows wider than one block."""

import torch
from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_dropout_norm as slips
from puzzles.course.bug_inputs import layernorm_rows
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, SpeedGoal


def layernorm_spec(x: Float32[Tensor, "M N"], w: Float32[Tensor, "N"], b: Float32[Tensor, "N"], *,
                   eps: float) -> Float32[Tensor, "M N"]:
    """z[m, n] = (x[m, n] - mean_m) / sqrt(var_m + eps) * w[n] + b[n], mean and (biased) var over row m"""
    mean = x.mean(1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(1, keepdim=True)  # divided by N, not N - 1
    return centred / torch.sqrt(var + eps) * w + b


PUZZLE = Puzzle(
    number=25,
    slug="layernorm_forward",
    title="Layer norm, forward",
    kernel_name="layernorm_kernel",
    spec=layernorm_spec,
    reduction=Reduction("N", KSlice("x", 1)),  # a loop over the row that stops early is named
    statement=r"""
Layer normalisation, as `torch.nn.functional.layer_norm(x, (N,), w, b, eps)` computes it: each row of
the `M × N` matrix `x` is centred on its mean, divided by its standard deviation, then scaled and
shifted per column by the weight `w` and the bias `b`:

$$\mu_m = \frac{1}{N}\sum_{n} x_{m,n}, \qquad
\sigma^2_m = \frac{1}{N}\sum_{n} (x_{m,n} - \mu_m)^2, \qquad
z_{m,n} = \frac{x_{m,n} - \mu_m}{\sqrt{\sigma^2_m + \varepsilon}}\; w_n + b_n$$

Three details decide whether the numbers match:
- the variance is the **biased** one, divided by `N` (not `N − 1`, as `torch.var` does by default);
- `eps` goes **under** the square root: it keeps a row of (nearly) equal values from dividing by zero,
  and one of the graded sizes has rows whose variance is far below `eps`;
- the statistics are kept in float32, and the variance is computed from the centred values
  `x − μ`: the shortcut `E[x²] − μ²` cancels catastrophically when the mean is large beside the spread
  (the same size has rows around 30 whose spread is about a tenth: there `E[x²] − μ²` is off by far more
  than the tolerance).

**Rows wider than one block.** One program normalises one row (the grid is `(M,)`), but `N` is larger
than the block `BN` and need not be a multiple of it: walk the row in chunks of `BN`, as in puzzles 7
and 8. Two passes gather the statistics (the sum for the mean, then the sum of squared deviations) and
a third writes `z`; the masked-off lanes of the last chunk must add nothing to either sum (`(0 − μ)²` is
not zero). A one-pass alternative (Welford's running mean and variance) is accepted too.

This kernel writes `z` only. Triton's tutorial also stores each row's `μ` and `1/σ` (the "rstd"), for
the backward pass to reuse: puzzle 26 receives them as inputs.
""",
    sizes=(
        {"M": 4, "N": 200, "eps": 1e-5, "BN": 64},
        {"M": 6, "N": 97, "eps": 1e-3, "BN": 32},  # a last chunk of one column; eps large enough to matter
        {"M": 3, "N": 256, "eps": 1e-5, "BN": 128},  # N a multiple of BN: a loop that stops a chunk early fails
        {"M": 9, "N": 300, "eps": 1e-5, "BN": 128},  # the shaped rows (layernorm_rows)
    ),
    hints=(
        "The idea: one program per row, and three walks along it in chunks of `BN` (puzzle 7's loop). The first "
        "sums for the mean, the second sums the squared deviations from that mean for the variance, the third "
        "normalises, scales and shifts. Only the two statistics pass from one walk to the next.",
        "The shape: each walk loads a chunk of the row masked at `N`. Walks 1 and 2 add into a `BN`-wide float32 "
        "accumulator, reduced with `tl.sum` after the loop and divided by `N` (not by the lanes). In walk 2 a "
        "masked-off lane must add 0, not `(0 − mean)²`. Then `1 / sqrt(var + eps)`; walk 3 loads the chunk's `x`, "
        "`w` and `b` and stores `z`.",
        "One key line, walk 2's: `centred = tl.where(cols < N, x - mean, 0.0)`: the padding lanes add nothing to "
        "the variance.",
    ),
    grid=lambda s: (s["M"],),
    draw_inputs=layernorm_rows,
    likely_mistakes=(
        Mistake("the variance is divided by N - 1: layer norm's variance is the biased one, the mean of the "
                "squared deviations (divided by N)", slips.layernorm_unbiased),
        Mistake("eps is added after the square root: 1 / sqrt(var + eps), with eps under it (it matters where the "
                "variance is small beside eps)", slips.layernorm_eps_outside),
        Mistake("the masked-off lanes of the last chunk count in the variance: loaded as 0, each adds (0 - mean)²; "
                "keep them out with tl.where(cols < N, x - mean, 0.0)", slips.layernorm_padding_in_variance),
        Mistake("the sums are divided by the padded width (N rounded up to whole blocks of BN): divide by N",
                slips.layernorm_padded_count),
        Mistake("the weight and the bias are swapped: z = x̂ · w + b", slips.layernorm_affine_swapped),
        Mistake("the mean is divided by BN, the block's width (mean = tl.sum(acc, axis=0) / BN): the row has N "
                "elements, so divide its sum by N", slips.layernorm_mean_over_block),
        Mistake("the mean and the variance are divided by BN, the block's width: the row has N elements, so "
                "divide both sums by N", slips.layernorm_statistics_over_block),
        Mistake("the weight and the bias are never applied (z = x̂): load w[cols] and b[cols] in the last pass and "
                "store (x - mean) * rstd * w + b", slips.layernorm_without_affine),
        Mistake("eps is not the kernel's argument (written as a number, 1e-5, or left out): rstd = 1 / sqrt(var + "
                "eps) with the eps the kernel is given, which the graded sizes change (eps=1e-3 at one)",
                slips.layernorm_eps_written),
        Mistake("eps is left out: rstd = 1 / sqrt(var + eps), which keeps a row of nearly equal values from "
                "dividing by (nearly) zero", slips.layernorm_without_eps),
        Mistake("the variance is computed as E[x²] - mean² (the sum of squares less the squared mean): where a "
                "row's mean is large beside its spread (the rows around 30 here) the two nearly cancel and "
                "their float32 rounding is what is left; compute it from the centred values, the mean of "
                "(x - mean)², in a second pass over the row (or with Welford's updates)",
                slips.layernorm_one_pass_variance, by_rows=True),
    ),
    # Sums of a few hundred float32 terms, in any order: off by about 1e-6 of the row; a variance off by
    # 1/N (N - 1 instead of N) or computed in float16 must fail.
    rtol=1e-4,
    atol=1e-4,
    perf_size={"M": 4096, "N": 8192, "eps": 1e-5, "BN": 1024},
    fast_reference=FastReference(
        "A row of at most 8 chunks (8192 floats, 32 KB, at the speed size) is loaded once, as two halves of 4 "
        "chunks, and kept in registers: the mean, the variance and the output all use that one load, so `x` is "
        "read from memory once instead of three times, the least a layer norm reads (the weight and the bias of "
        "a half are loaded only when that half is written, which keeps the registers in hand). Longer rows take "
        "the teaching kernel's three passes, the first pass's loads marked `evict_last` so that the later passes "
        "find the row in the L2 cache."),
    speed_goal=SpeedGoal(
        vs_compile=1.0, roofline=0.6,
        levers="BN of 1024 to 4096 with num_warps 8 (fewer chunks per row), and the row's later passes reading "
               "from L2 (a 32 KB row is still there); where a row fits in one block, one pass keeps it in "
               "registers and reads x once"),
    library=LibraryBaseline(
        "F.layer_norm", library_ops.layernorm_library,
        why="the op a model calls (nn.LayerNorm): biased variance, eps inside the square root, as the spec"),
)
