"""Puzzle 24: seeded dropout, forward and backward (the training track's first puzzle)."""

import torch
from jaxtyping import Float32, Int32
from torch import Tensor

from puzzles.course import mistakes_dropout_norm as slips
from puzzles.course.catalog.tracks import TRAINING_TRACK
from puzzles.course.philox import rand  # tl.rand(seed, offsets), bit for bit, in PyTorch
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal, cdiv


def dropout_spec(x: Float32[Tensor, "N1 N0"], seeds: Int32[Tensor, "N1"], *, p: float) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = x[j, i] / (1 - p) where tl.rand(seeds[j], i) > p, else 0"""
    columns = torch.arange(x.shape[1], device=x.device)
    keep = rand(seeds[:, None], columns[None, :]) > torch.tensor(p, dtype=torch.float32)
    return torch.where(keep, x / (1 - p), 0.0)


BACKWARD_TEXT = """\
## The backward pass, in a training step

Your kernel is both passes. Wrapped for autograd, the forward launch keeps the `N1` seeds (not a mask of
`N1 × N0` bytes) and the backward launch draws the same mask from them, here with another block size:

```python
class SeededDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, seeds, p):
        z = torch.empty_like(x)
        dropout_kernel[(triton.cdiv(x.shape[1], 1024), x.shape[0])](x, seeds, z, x.shape[1], x.shape[0], p, B0=1024)
        ctx.save_for_backward(seeds)
        ctx.p = p
        return z

    @staticmethod
    def backward(ctx, dz):
        (seeds,) = ctx.saved_tensors
        dx = torch.empty_like(dz)
        dropout_kernel[(triton.cdiv(dz.shape[1], 256), dz.shape[0])](dz, seeds, dx, dz.shape[1], dz.shape[0],
                                                                       ctx.p, B0=256)
        return dx, None, None


# Each training step draws new seeds (one per row); the same seeds must reach the backward pass.
seeds = torch.randint(-2**31, 2**31, (x.shape[0],), dtype=torch.int32, device=x.device)
y = SeededDropout.apply(x, seeds, 0.1)
```

The grader's exact check is what makes this safe: a mask that depended on the launch (the lane within
the block, the flat index under another grid) would differ between the two launches.
"""


PUZZLE = Puzzle(
    number=24,
    slug="seeded_dropout",
    title="Seeded dropout, forward and backward",
    kernel_name="dropout_kernel",
    spec=dropout_spec,
    statement=TRAINING_TRACK + r"""

**Dropout** zeroes each element with probability `p` during training and scales the survivors by
`1 / (1 - p)`, so that the expected value of every element is unchanged:

$$z_{j,i} = \begin{cases} x_{j,i} / (1 - p) & r_{j,i} > p \\ 0 & \text{otherwise}\end{cases}
\qquad r_{j,i} = \texttt{tl.rand}(\mathit{seeds}_j,\ i) \in [0, 1)$$

`x` is `N1 × N0` (a batch of rows); each row `j` has its own seed, `seeds[j]`, and its random numbers
are drawn at the **column** index `i`: row `j`'s mask depends on its seed and nothing else.

**Why no mask is stored.** PyTorch's eager dropout writes the mask (one byte per element) in the forward
pass and reads it back in the backward pass. `tl.rand(seed, offsets)` needs no such memory: it is a
*counter-based* generator (Philox 4x32, ten rounds), a pure function of the seed and the offset, so the
same `(seed, offset)` gives the same number in any program of any launch. The backward pass of dropout
is the same formula applied to the incoming gradient (the derivative of `z` with respect to `x` is the
mask over `1 - p`), so **the backward kernel is this kernel**, launched on `dz` with the same seeds:
`dx = dropout_kernel(dz, seeds)` regenerates exactly the forward's mask, and the forward keeps only the
`N1` seeds for it.

That holds only if the numbers depend on `(seed, column)` alone, not on how the launch is cut: a
backward kernel is often tuned with another block size, and a mask drawn at the lane's position in its
block, `tl.arange(0, B0)`, would differ there. So the grader checks the exact numbers: the spec draws
them with `rand` from `puzzles`, Triton's generator written in PyTorch and checked
against `tl.rand` on a CPU and a GPU, and each graded size uses another block size.

The grid is `(cdiv(N0, B0), N1)`: program `(c, j)` handles columns `c·B0 … c·B0 + B0 − 1` of row `j`
(`N0` need not be a multiple of `B0`). `p` is a float; `N1` is passed and not used.
""",
    sizes=(
        {"N0": 200, "N1": 4, "p": 0.5, "B0": 64},
        {"N0": 97, "N1": 6, "p": 0.25, "B0": 32},  # a last block of one column
        {"N0": 128, "N1": 3, "p": 0.125, "B0": 128},
        {"N0": 1000, "N1": 2, "p": 0.75, "B0": 256},
    ),
    hints=(
        "The idea: each element's random number is a pure function of its row's seed and its column, drawn by "
        "`tl.rand`; keep the element where the number is above `p` and scale the survivor by `1 / (1 - p)`. "
        "Because the number depends on nothing else, a backward launch with another block size draws the same mask.",
        "The shape: program `(c, j)` takes row `j` and its `B0` columns from `c · B0`, masked at `N0`. Load the "
        "row's seed (one integer), the block of `x`, draw one number per column of the block, choose between the "
        "scaled value and 0, and store the block at the same place in `z`.",
        "One key line: `r = tl.rand(seed, cols)`, where `cols` are the block's column indices in the row: not the "
        "flat index `row * N0 + cols`, and not the lane within the block, `tl.arange(0, B0)` alone.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]), s["N1"]),
    unused_sizes=("N1",),
    likely_mistakes=(
        Mistake("the numbers are drawn at the flat index row * N0 + column: each row's numbers are drawn at its "
                "columns, tl.rand(seed, cols), so that the row's mask depends on its seed alone",
                slips.dropout_flat_offsets),
        Mistake("the numbers are drawn at tl.arange(0, B0), the lane within the block: every block of a row repeats "
                "the first block's mask, and a launch with another block size (a backward tuned differently) draws "
                "another; draw at the column, program_id(0) * B0 + tl.arange(0, B0)",
                slips.dropout_block_offsets),
        Mistake("every row draws with seeds[0]: load the row's own seed, tl.load(seeds_ptr + row)",
                slips.dropout_first_seed),
        Mistake("one seed for the whole matrix, drawn at the flat index (the 1-D dropout kernel over the matrix): "
                "each row draws with its own seed, seeds[row], at its columns", slips.dropout_one_seed_flat),
        Mistake("the kept elements are those with r < p, so each is kept with probability p: keep r > p",
                slips.dropout_keep_below),
        Mistake("the kept values are not divided by 1 - p: dropout keeps each element's expected value, so the "
                "survivors are x / (1 - p)", slips.dropout_not_rescaled),
        Mistake("the kept values are multiplied by 1 - p: divide by it, x / (1 - p), so that the expected value "
                "(1 - p) · x / (1 - p) is x", slips.dropout_scaled_by_keep),
        Mistake("the kept values are divided by p, the probability of dropping: divide by 1 - p, the probability "
                "of keeping, x / (1 - p)", slips.dropout_divided_by_p),
    ),
    # The mask is exact (the numbers are); the kept values are one float32 division, which a GPU's
    # division (within 2 units in the last place) and x * (1 / (1 - p)) round differently.
    rtol=1e-5,
    atol=1e-6,
    notebook_cells=(("markdown", BACKWARD_TEXT),),
    perf_size={"N0": 8192, "N1": 4096, "p": 0.5, "B0": 1024},
    speed_goal=SpeedGoal(
        vs_compile=1.0, roofline=0.7,
        levers="B0 of 1024 or more with num_warps 4 to 8, so each program moves enough bytes; the ten Philox rounds "
               "are integer multiplies that hide under the memory traffic, so no other work should be added "
               "(one tl.rand per element, no mask stored)"),
    no_library=(
        "torch's dropout (F.dropout) draws its mask from torch's own random stream, not tl.rand's, so "
        "it cannot give this output: eager torch and torch.compile of the spec are the bar"),
)
