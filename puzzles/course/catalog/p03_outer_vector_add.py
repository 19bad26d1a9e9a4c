"""Puzzle 3: outer vector add."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal


def add_vec_spec(x: Float32[Tensor, "N0"], y: Float32[Tensor, "N1"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = x_i + y_j"""
    return x[None, :] + y[:, None]


PUZZLE = Puzzle(
    number=3,
    slug="outer_vector_add",
    title="Outer vector add",
    kernel_name="add_vec_kernel",
    spec=add_vec_spec,
    statement=r"""
Add every element of `x` to every element of `y`, making a matrix:

$$z_{j,i} = x_i + y_j \qquad 0 \le i < N_0,\; 0 \le j < N_1$$

`z` has shape `N1 × N0` and is row-major: element `z[j, i]` (row `j`, column `i`) sits at
`z_ptr + j*N0 + i`. One program does the whole matrix (`B0 = N0`, `B1 = N1`, powers of two), so
no program id is needed yet; at the other graded sizes the two lengths differ, so mixing up `i`
and `j` fails there. (From puzzle 4
on, grid axis `d` walks the dimension named `Nd`: axis 0 the columns `i`, axis 1 the rows `j`.)

Broadcasting builds the 2-D block: `x[None, :] + y[:, None]` has shape `B1 × B0`.
""",
    sizes=(
        {"N0": 32, "N1": 32, "B0": 32, "B1": 32},
        {"N0": 16, "N1": 8, "B0": 16, "B1": 8},
        {"N0": 8, "N1": 64, "B0": 8, "B1": 64},
    ),
    hints=(
        "Load `x` with offsets `tl.arange(0, B0)` and `y` with `tl.arange(0, B1)`.",
        "The output offsets are `j[:, None] * N0 + i[None, :]` for the 2-D block.",
    ),
    likely_mistakes=(
        Mistake("x + y added element by element, as two 1-D blocks: every row of z got the same row; give each "
                "vector its axis so that they broadcast, x[None, :] + y[:, None]", mistakes.outer_add_without_axes),
    ),
    perf_size={"N0": 64, "N1": 64, "B0": 64, "B1": 64},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(levers=(
        "nothing to tune in the kernel: a 64 x 64 output is one program and one launch (puzzle 4 is where "
        "tiles pay)")),
    no_library=ONE_TORCH_OP.format(op="x[None, :] + y[:, None], one broadcast add"),
)
