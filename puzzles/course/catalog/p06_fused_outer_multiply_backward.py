"""Puzzle 6: the backward pass of puzzle 5."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal


def mul_relu_block_back_spec(
    x: Float32[Tensor, "N1 N0"], y: Float32[Tensor, "N1"], dz: Float32[Tensor, "N1 N0"]
) -> Float32[Tensor, "N1 N0"]:
    """dx[j, i] = relu'(x[j, i] * y_j) * y_j * dz[j, i]"""
    product = x * y[:, None]
    return (product > 0).to(x.dtype) * y[:, None] * dz


PUZZLE = Puzzle(
    number=6,
    slug="fused_outer_multiply_backward",
    title="Fused outer multiply, backward",
    kernel_name="mul_relu_block_back_kernel",
    spec=mul_relu_block_back_spec,
    statement=r"""
The gradient of `z = relu(x * y[:, None])` with respect to `x`, where now `x` is a matrix:
`x` and the incoming gradient `dz` both have shape `N1 × N0`, and `y` has `N1` elements (one
per row). By the chain rule

$$dx_{j,i} = \mathrm{relu}'(x_{j,i}\, y_j)\; y_j\; dz_{j,i}, \qquad
\mathrm{relu}'(a) = \begin{cases}1 & a > 0\\ 0 & a \le 0\end{cases}$$

The kernel writes `dx` (its last pointer, `dx_ptr`; the verdict calls the output `z`, as in every
puzzle). Tiling, grid and masks are those of
puzzle 4: axis 0 walks the `N0` columns, axis 1 the `N1` rows.
""",
    sizes=(
        {"N0": 100, "N1": 90, "B0": 32, "B1": 32},
        {"N0": 37, "N1": 70, "B0": 16, "B1": 32},
        {"N0": 64, "N1": 32, "B0": 32, "B1": 16},
    ),
    hints=(
        "`x` and `dz` are 2-D: both use the offsets `j[:, None] * N0 + i[None, :]`; `y` is loaded per row.",
        "`tl.where(x * y[:, None] > 0, y[:, None] * dz, 0.0)` is the whole formula.",
    ),
    likely_mistakes=(
        Mistake("the relu's gate is taken from x alone: the relu's input is the product x · y, so the gate is "
                "x * y[:, None] > 0", mistakes.backward_gate_from_x),
        Mistake("the factor y is left out: the derivative of x · y with respect to x is y, so dx = gate · y · dz",
                mistakes.backward_without_y),
    ),
    perf_size={"N0": 8192, "N1": 8192, "B0": 64, "B1": 64},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(roofline=0.8, levers=(
        "tiles wide along N0 (B0 of 128 or 256) so the loads of x and dz and the store of dx are 16-byte "
        "vectors; load y once per tile row; B0 * B1 of 4K-16K elements with num_warps 4-8")),
    no_library=NO_SUCH_OP.format(what=(
        "the gradient of relu(x_i * y_j) given dz: autograd would run the forward product again")),
)
