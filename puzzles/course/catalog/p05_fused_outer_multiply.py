"""Puzzle 5: fused outer multiply with relu."""

import torch
from jaxtyping import Float32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal


def mul_relu_block_spec(x: Float32[Tensor, "N0"], y: Float32[Tensor, "N1"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = relu(x_i * y_j)"""
    return torch.relu(x[None, :] * y[:, None])


PUZZLE = Puzzle(
    number=5,
    slug="fused_outer_multiply",
    title="Fused outer multiply",
    kernel_name="mul_relu_block_kernel",
    spec=mul_relu_block_spec,
    statement=r"""
Multiply every `x_i` by every `y_j` and apply a relu, in one pass (the product never goes to
memory: that is what fusing means):

$$z_{j,i} = \max(0,\; x_i \, y_j) \qquad 0 \le i < N_0,\; 0 \le j < N_1$$

Tiling, grid and masks are those of puzzle 4. The inputs are centred on zero, so about half
of the products are negative: the relu matters.
""",
    sizes=(
        {"N0": 100, "N1": 90, "B0": 32, "B1": 32},
        {"N0": 37, "N1": 70, "B0": 16, "B1": 32},
        {"N0": 64, "N1": 32, "B0": 32, "B1": 16},
    ),
    hints=(
        "Start from your puzzle 4 kernel; replace the sum by a product.",
        "`tl.maximum(z, 0.0)` is the relu (or `tl.where(z > 0, z, 0.0)`).",
    ),
    likely_mistakes=(
        Mistake("the relu is missing: negative products must become 0, tl.maximum(x[None, :] * y[:, None], 0.0)",
                mistakes.mul_without_relu),
    ),
    perf_size={"N0": 8192, "N1": 8192, "B0": 64, "B1": 64},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(roofline=0.8, levers=(
        "as puzzle 4: tiles wide along N0 (B0 of 128 or 256) for 16-byte stores, B0 * B1 of 4K-16K elements "
        "with num_warps 4-8; the relu costs nothing, fused into the store")),
    no_library=NO_SUCH_OP.format(what="relu of an outer product: torch.outer and torch.relu are two calls"),
)
