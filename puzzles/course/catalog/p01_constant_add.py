"""Puzzle 1: constant add."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import Puzzle, SpeedGoal


def add_spec(x: Float32[Tensor, "N0"]) -> Float32[Tensor, "N0"]:
    """z_i = x_i + 10"""
    return x + 10.0


PUZZLE = Puzzle(
    number=1,
    slug="constant_add",
    title="Constant add",
    kernel_name="add_kernel",
    spec=add_spec,
    statement=r"""
Add the constant 10 to every element of a vector:

$$z_i = x_i + 10 \qquad 0 \le i < N_0$$

One program does the whole vector: the block size `B0` equals the length `N0`, and both are
powers of two. Load the block of `x` with `tl.load`, add, and write it to `z` with `tl.store`.
Pointers are addresses: `x_ptr + offsets` is the block of addresses `x_ptr + 0 … x_ptr + B0-1`,
where `offsets = tl.arange(0, B0)`.
""",
    sizes=(
        {"N0": 32, "B0": 32},
        {"N0": 8, "B0": 8},
        {"N0": 128, "B0": 128},
    ),
    hints=(
        "`tl.arange(0, B0)` is the block of offsets 0, 1, …, B0-1.",
        "`x = tl.load(x_ptr + offsets)` reads the block; `tl.store(z_ptr + offsets, x + 10.0)` writes it.",
    ),
    perf_size={"N0": 4096, "B0": 4096},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(levers=(
        "nothing to tune in the kernel: 4096 elements are one launch of one program, and the launch is the "
        "time (the lesson is the launch floor; puzzle 2 is where blocks pay)")),
    no_library=ONE_TORCH_OP.format(op="x + 10"),
)
