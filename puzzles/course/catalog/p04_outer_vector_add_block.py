"""Puzzle 4: outer vector add, in blocks."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import Puzzle, SpeedGoal


def add_vec_block_spec(x: Float32[Tensor, "N0"], y: Float32[Tensor, "N1"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = x_i + y_j"""
    return x[None, :] + y[:, None]


PUZZLE = Puzzle(
    number=4,
    slug="outer_vector_add_block",
    title="Outer vector add, in blocks",
    kernel_name="add_vec_block_kernel",
    spec=add_vec_block_spec,
    statement=r"""
The outer sum again, tiled:

$$z_{j,i} = x_i + y_j \qquad 0 \le i < N_0,\; 0 \le j < N_1$$

The grid is `(cdiv(N0, B0), cdiv(N1, B1))`: program `(p0, p1)` computes the `B1 × B0` tile of
`z` whose columns start at `p0*B0` and whose rows start at `p1*B1`. `N0` and `N1` are any
positive lengths, not necessarily multiples of the blocks: mask the loads of `x` and `y` and the
2-D store of `z` (a lane is valid when its row and its column are both in range).
""",
    sizes=(
        {"N0": 100, "N1": 90, "B0": 32, "B1": 32},
        {"N0": 37, "N1": 70, "B0": 16, "B1": 32},
        {"N0": 64, "N1": 32, "B0": 32, "B1": 16},
    ),
    hints=(
        "Columns: `i = tl.program_id(0) * B0 + tl.arange(0, B0)`; "
        "rows: `j = tl.program_id(1) * B1 + tl.arange(0, B1)`.",
        "The 2-D mask is `(j[:, None] < N1) & (i[None, :] < N0)`.",
    ),
    perf_size={"N0": 8192, "N1": 8192, "B0": 64, "B1": 64},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(roofline=0.8, levers=(
        "tiles wide along N0 (B0 of 128 or 256), the contiguous axis of z, so each store is a full 16-byte "
        "vector; fewer, larger tiles (B0 * B1 of 4K-16K elements) with num_warps 4-8")),
    no_library=ONE_TORCH_OP.format(op="x[None, :] + y[:, None], one broadcast add"),
)
