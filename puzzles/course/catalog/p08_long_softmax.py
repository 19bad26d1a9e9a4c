"""Puzzle 8: long softmax."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.bug_inputs import softmax_mixed_rows
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, ScalarWork, SpeedGoal, cdiv


def softmax_spec(x: Float32[Tensor, "N0 T"]) -> Float32[Tensor, "N0 T"]:
    """z[i, j] = exp(x[i, j] - max_j x[i]) / sum_j exp(x[i, j] - max_j x[i])"""
    x_max = x.max(1, keepdim=True)[0]
    x = x - x_max
    x_exp = x.exp()
    return x_exp / x_exp.sum(1, keepdim=True)


PUZZLE = Puzzle(
    number=8,
    slug="long_softmax",
    title="Long softmax",
    kernel_name="softmax_kernel",
    spec=softmax_spec,
    reduction=Reduction("T", KSlice("x", 1)),  # a loop over T that stops early is named
    statement=r"""
The softmax of each row of an `N0 × T` matrix:

$$z_{i,j} = \frac{e^{x_{i,j} - m_i}}{\sum_{k} e^{x_{i,k} - m_i}}, \qquad m_i = \max_k x_{i,k}$$

Rows are long, so walk them in chunks of `B1` as in puzzle 7. Subtracting the row maximum
keeps `exp` from overflowing: at one of the tested sizes some rows reach ±100, where
`exp(x)` alone is infinite in float32, and others grow along the row, so the maximum changes
from chunk to chunk. Three passes work (max, sum, write); two are enough
if you keep a running maximum and rescale the running sum when it grows (the "online
softmax"). `exp(x) = exp2(x * log2(e))`, and `tl.exp2` is the faster instruction on a GPU.
The grid is `(cdiv(N0, B0),)`; `N1` is passed and not used.
""",
    sizes=(
        {"N0": 4, "N1": 32, "T": 200, "B0": 1, "B1": 32},
        {"N0": 5, "N1": 32, "T": 81, "B0": 1, "B1": 16},  # a last chunk of one column: `range(0, T - 1, B1)` fails
        # T a multiple of B1: a loop over the full chunks `range(0, T - B1, B1)` and a tail after it fails.
        {"N0": 6, "N1": 32, "T": 96, "B0": 2, "B1": 32},
        {"N0": 9, "N1": 32, "T": 200, "B0": 16, "B1": 64},  # the shaped inputs (softmax_mixed_rows)
    ),
    hints=(
        "Pass 1: the row maximum. Pass 2: the sum of `exp(x - max)`. Pass 3: store `exp(x - max) / sum`.",
        "Masked-off lanes must not win the maximum: load them with `other=-float('inf')`.",
        "Online: when the maximum grows from `m` to `m_new`, scale the running sum by `exp(m - m_new)`.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]),),
    unused_sizes=("N1",),
    likely_mistakes=(
        Mistake("the masked-off lanes of the last chunk count in the sum: loaded with other=0, each adds "
                "exp(0 - max); load the scores with other=-float('inf'), whose exp is 0",
                mistakes.softmax_padding_in_sum),
        Mistake("the running sum is not rescaled when the running maximum grows: before adding a chunk, multiply "
                "the sum by exp(m - m_new), so that every term is relative to the same maximum",
                mistakes.softmax_sum_not_rescaled),
    ),
    # Each row's errors are judged against its own largest value: softmax values are near 1/T,
    # so an absolute 1e-3 would pass a row whose every element is 10% off.
    draw_inputs=softmax_mixed_rows,
    tolerance="row",
    perf_size={"N0": 4096, "N1": 32, "T": 8192, "B0": 1, "B1": 1024},
    fast_reference=FastReference(
        "A row of at most 8 chunks (8192 floats, 32 KB, at the speed size) is loaded once and kept in "
        "registers: its maximum, its exponentials, their sum and the stores all use that one load, so `x` is "
        "read from memory once instead of twice, which is the least any softmax reads. Longer rows take the "
        "two passes of the teaching kernel, changed three ways: the running maximum and sum are kept per lane "
        "and combined once after the pass (no reduction across threads inside the loop), the first pass's "
        "loads are marked `evict_last`, and the second pass walks the row backwards, so the chunks it reads "
        "first are those the first pass read last, most likely still in the L2 cache. (`torch.compile` does "
        "three passes and counts on that cache.)"),
    # Relative to each row's largest value (above): a GPU's exp is off by about 1e-6, a float16 one by 5e-4.
    rtol=1e-4,
    atol=1e-4,
    scalar_work=lambda s: ScalarWork(fmas=3 * s["N0"] * s["T"], exps=s["N0"] * s["T"]),
    speed_goal=SpeedGoal(roofline=0.6, levers=(
        "fewer passes over each row: the max and the sum in one pass (online softmax), or the whole row of T "
        "in registers (a B1 of T, read once); tl.exp2 with log2(e) folded into the scale; B1 of 1024-4096 "
        "with num_warps 8")),
    library=LibraryBaseline(
        "torch.softmax", library_ops.softmax_library,
        why="a row softmax is one torch call, a fused kernel that reads each row once where it fits, as a "
            "user would write it instead of the spec's four ops"),
)
