"""Puzzle 7: long sum."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import CpuSpeedGoal, FastReference, KSlice, Mistake, Puzzle, Reduction, SpeedGoal, cdiv


def sum_spec(x: Float32[Tensor, "N0 T"]) -> Float32[Tensor, "N0"]:
    """z_i = sum_j x[i, j]"""
    return x.sum(1)


PUZZLE = Puzzle(
    number=7,
    slug="long_sum",
    title="Long sum",
    kernel_name="sum_kernel",
    spec=sum_spec,
    reduction=Reduction("T", KSlice("x", 1)),  # a loop over T that stops early is named
    statement=r"""
Sum each row of an `N0 × T` matrix:

$$z_i = \sum_{j=0}^{T-1} x_{i,j} \qquad 0 \le i < N_0$$

A row is too long for one block, so each program walks its rows in chunks of `B1` columns,
keeping a running sum (a loop inside the kernel: `for j0 in range(0, T, B1)`). The grid is
`(cdiv(N0, B0),)`: each program handles `B0` rows. `T` need not be a multiple of `B1`: mask
the last chunk. `N1` is passed for compatibility with the classic course and is not used.
""",
    sizes=(
        {"N0": 4, "N1": 32, "T": 200, "B0": 1, "B1": 32},
        {"N0": 5, "N1": 32, "T": 81, "B0": 1, "B1": 16},  # a last chunk of one column: `range(0, T - 1, B1)` fails
        {"N0": 9, "N1": 32, "T": 256, "B0": 4, "B1": 64},
    ),
    hints=(
        "Keep `acc = tl.zeros([B0], dtype=tl.float32)` and add `tl.sum(block, axis=1)` for each chunk.",
        "A chunk's offsets are `rows[:, None] * T + (j0 + tl.arange(0, B1))[None, :]`; "
        "mask columns `< T` and rows `< N0`.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]),),
    unused_sizes=("N1",),
    likely_mistakes=(
        Mistake("the running sum holds only the last chunk: it is set (acc = ...) or created (tl.zeros) inside the "
                "loop; create it once before the loop and add each chunk's sum to it (acc += ...)",
                mistakes.sum_last_chunk_only),
        Mistake("every step reads the first chunk again: the chunk's column offsets are tl.arange(0, B1) without the "
                "loop's start, j0 + tl.arange(0, B1)", mistakes.sum_first_chunk_repeated),
        Mistake("each row holds the sum of all its program's rows: tl.sum(x) without an axis adds up the whole "
                "B0 × B1 block; tl.sum(x, axis=1) sums each row", mistakes.sum_without_axis),
        Mistake("row r is read at r * N1: a row of x is T elements long, so row r starts at x_ptr + r * T "
                "(N1 is not used)", mistakes.sum_rows_n1_apart),
    ),
    perf_size={"N0": 4096, "N1": 32, "T": 8192, "B0": 1, "B1": 1024},
    fast_reference=FastReference(
        "Two changes. Each step loads 8 chunks at once (the whole row of 8192 floats at the speed size), so "
        "all of a step's loads are in flight together instead of one chunk's. And the running sum is a `B0 × "
        "8·B1` tile added element by element, summed across once after the loop; the teaching kernel sums "
        "across each chunk inside the loop, a reduction across threads per chunk that the next load waits "
        "for. The loads are marked `eviction_policy=\"evict_first\"`: each value is read once, so it need not "
        "stay in the cache. And a program runs 16 warps, set with a one-config `@triton.autotune` (`test()` "
        "launches a kernel with Triton's default of 4): 4096 programs of one row each, the more threads to "
        "a row the more of its loads in flight at once."),
    # A float32 sum of a few hundred values in [-1, 1) is off by about 1e-6 whatever its order; a float16
    # accumulator is off by 1e-3 and must fail.
    rtol=1e-4,
    atol=1e-4,
    cpu_speed_goal=CpuSpeedGoal(),
    speed_goal=SpeedGoal(roofline=0.7, levers=(
        "a large B1 (2048-8192: few loop steps, each a long contiguous load), num_warps 8, a float32 "
        "accumulator summed once after the loop (tl.sum of a block, not of each chunk)")),
    no_library=ONE_TORCH_OP.format(op="x.sum(1)"),
)
