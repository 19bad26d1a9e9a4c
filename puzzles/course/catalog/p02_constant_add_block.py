"""Puzzle 2: constant add, in blocks."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import CpuSpeedGoal, Puzzle, SpeedGoal


def add2_spec(x: Float32[Tensor, "N0"]) -> Float32[Tensor, "N0"]:
    """z_i = x_i + 10"""
    return x + 10.0


SPEED_TEXT = """\
## How fast, without a GPU

A right kernel's verdict here ends with an efficiency line: the interpreter recorded every lane's address, and a
GPU moves memory in 32-byte sectors, a warp of 32 lanes at a time. Below, the same add written two ways, both
right: yours (one block of contiguous lanes) and one whose lanes are scattered over its block. The report tells
them apart by the sectors each warp touches, predicts each one's time on an H100, and names the line to change."""

SPEED_CODE = """\
@triton.jit
def add_mask2_scattered(x_ptr, z_ptr, N0, B0: tl.constexpr):
    lane = tl.arange(0, B0)
    offsets = tl.program_id(0) * B0 + (lane * 17) % B0  # every lane of the block, in a scattered order
    in_range = offsets < N0
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=in_range) + 10.0, mask=in_range)


for kernel in (add_mask2_kernel, add_mask2_scattered):
    result = test(kernel, add2_spec, quiet=True)
    print(kernel.fn.__name__, "->", result.efficiency.text() if result.efficiency else result.reason(), "\\n")
"""

PUZZLE = Puzzle(
    number=2,
    slug="constant_add_block",
    title="Constant add, in blocks",
    kernel_name="add_mask2_kernel",
    spec=add2_spec,
    statement=r"""
The same sum, on a vector longer than one block:

$$z_i = x_i + 10 \qquad 0 \le i < N_0$$

The grid has `cdiv(N0, B0)` programs; program `p` (`tl.program_id(0)`) handles elements
`p*B0 … p*B0 + B0-1`. `N0` is any positive length and need not be a multiple of `B0` (a power
of two), so the last block runs past the end: guard every load and store with a mask,
`offsets < N0`. Lanes whose mask is false are neither read nor written.
""",
    sizes=(
        {"N0": 200, "B0": 32},
        {"N0": 37, "B0": 16},
        {"N0": 1000, "B0": 128},
        {"N0": 64, "B0": 64},
    ),
    hints=(
        "`pid = tl.program_id(0)`; the block's offsets are `pid * B0 + tl.arange(0, B0)`.",
        "`mask = offsets < N0`, then `tl.load(x_ptr + offsets, mask=mask)` and `tl.store(..., mask=mask)`.",
    ),
    perf_size={"N0": 1 << 26, "B0": 1024},
    # Few exact float32 operations: a kernel computing in float16 (half the bits) must fail, and a GPU
    # rounds each operation as torch does.
    rtol=1e-5,
    atol=1e-5,
    cpu_speed_goal=CpuSpeedGoal(),
    notebook_cells=(("markdown", SPEED_TEXT), ("code", SPEED_CODE)),
    speed_goal=SpeedGoal(roofline=0.8, levers=(
        "B0 of 1024 or more with num_warps 4 or 8, so that each thread moves 16-byte vectors and few programs"
        " cover the 64M elements")),
    no_library=ONE_TORCH_OP.format(op="x + 10"),
)
