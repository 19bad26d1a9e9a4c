"""Puzzle 32: an FP8 scaled matmul (float8 tiles through tl.dot, x's row scales and w's output-channel scales in the
epilogue; w stored N x K, as a linear layer's weight)."""

import torch
from jaxtyping import Float8e4m3fn, Float16, Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_fp8 as slips
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal, cdiv


def fp8_scaled_matmul_spec(x: Float8e4m3fn[Tensor, "M K"], x_scale: Float32[Tensor, "M"],
                           w: Float8e4m3fn[Tensor, "N K"], w_scale: Float32[Tensor, "N"]) -> Float16[Tensor, "M N"]:
    """z = ((x @ w.T) * x_scale[:, None] * w_scale[None, :]) as float16, the products summed in float32"""
    acc = x.float() @ w.float().T
    return (acc * x_scale[:, None] * w_scale[None, :]).to(torch.float16)


PUZZLE = Puzzle(
    number=32,
    slug="fp8_scaled_matmul",
    title="FP8 scaled matmul",
    kernel_name="fp8_scaled_matmul_kernel",
    spec=fp8_scaled_matmul_spec,
    statement=r"""
An FP8 linear layer as a model serves it: activations `x` (`M × K`) and weights `w` (`N × K`, one row per output
channel, as `torch.nn.Linear` stores its weight) stored as `float8_e4m3fn` (1 sign bit, 4 exponent bits, 3
mantissa bits; largest value 448), each with float32 scales that map the 8-bit values back to the real ones: one
per row of `x` (`x_scale`, length `M`: each token its own) and one per row of `w` (`w_scale`, length `N`: each
output channel its own). The output `z = x @ w.T`, scaled, is float16:

$$z_{m,n} = \Big(\sum_{k=0}^{K-1} x_{m,k}\, w_{n,k}\Big)\; s^x_m\; s^w_n$$

with the sum in float32. A product of two float8 values is exact in float32, so the only rounding is the sum's
and the final cast.

**The kernel.** Puzzle 11's tiled matmul: one program per `BM × BN` tile of `z`, grid
`(cdiv(M, BM), cdiv(N, BN))` (`tl.program_id(0)` is the tile row), a float32 accumulator, `K` walked in chunks
of `BK`. `w[n, k]` is at `w_ptr + n * K + k`: load its tile as `BN × BK` (each row `BK` contiguous bytes) and
hand `x`'s tile and the transposed one, `tl.trans(w)`, to `tl.dot` as they are, in float8: on an sm_89+ GPU (L4,
H100, H200) that is one fp8 tensor-core instruction, twice the rate of float16. The scales do not depend on `k`,
so they come out of the sum: apply them **once per tile, after the K loop** (the epilogue):
`acc * x_scale[:, None] * w_scale[None, :]`, then cast to float16 and store, masked at the ragged edges (`M`, `N`
and `K` are not multiples of the blocks).
`BK` is at least 32: Hopper's fp8 instruction takes `K` 32 at a time.

**Why per row.** One scale for a whole tensor lets a single large value push every small one to zero; a scale
per row of the activations and per output channel of the weights keeps each as precise as its own range allows,
and costs only two vector loads per tile. It is what `torch._scaled_mm` calls *rowwise* scaling.

**Why `N × K`.** Hopper's fp8 tensor-core instruction reads both operands with `K` contiguous ("K-major"): `x`'s
rows and `w`'s rows here, so the transpose is free. Stored `K × N`, the same kernel must reorder every `w` tile
on the way, and on an H200 it ran five times slower (benchmarks/results/nvidia-h200/p32_variants.md).

**The hardware.** fp8 `tl.dot` needs compute capability 8.9 or newer: on an A100 or a T4 this puzzle is graded
under Triton's interpreter (on a CPU, or with `TRITON_INTERPRET=1`), and the grader says so.
""",
    sizes=(
        {"M": 100, "N": 72, "K": 80, "BM": 32, "BN": 32, "BK": 32},  # ragged M, N and K
        {"M": 64, "N": 64, "K": 128, "BM": 32, "BN": 32, "BK": 32},  # whole tiles, M = N
        {"M": 48, "N": 80, "K": 200, "BM": 16, "BN": 32, "BK": 64},  # a last K chunk of 8
        {"M": 40, "N": 40, "K": 96, "BM": 16, "BN": 16, "BK": 32},  # ragged M = N
    ),
    hints=(
        "Start from puzzle 11's tile: `m = tl.program_id(0) * BM + tl.arange(0, BM)`, `n` likewise from "
        "`tl.program_id(1)`, `acc = tl.zeros([BM, BN], dtype=tl.float32)`, and a loop `for k0 in range(0, K, BK)`.",
        "Load x's tile at `m[:, None] * K + k[None, :]` and w's at `n[:, None] * K + k[None, :]` (a BN x BK tile), "
        "masked with `other=0.0`, and call `acc += tl.dot(x, tl.trans(w))` on them as they are: no cast first (a "
        "cast to float16 or float32 gives up the fp8 tensor cores).",
        "After the loop: `x_scale` at rows `m` (mask `m < M`), `w_scale` at columns `n` (mask `n < N`), "
        "`z = acc * xs[:, None] * ws[None, :]`, then `tl.store(..., z.to(tl.float16), mask=...)`.",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"])),
    # float16 output (a unit in the last place is 1e-3 of the value), and on a GPU the fp8 tensor cores' sum.
    rtol=1e-2,
    atol=1e-2,
    draw_inputs=slips.quantized_inputs,
    min_sm=89,
    likely_mistakes=(
        Mistake("the scales divide the sum, as in quantizing (q = x / scale); to get the real values back they "
                "multiply: z = acc * x_scale[:, None] * w_scale[None, :]", slips.scales_divided),
        Mistake("the accumulator is multiplied by the scales inside the K loop, so the first chunks are scaled "
                "again on every later chunk: keep acc += tl.dot(x, w) in the loop and scale once, after it",
                slips.accumulator_rescaled_each_chunk, where=slips.accumulator_rescaled_where),
        Mistake("the scales are on the swapped axes, x_scale indexed by the columns n and w_scale by the rows m: "
                "x has a scale per row (x_scale at the rows m, as a column: [:, None]) and w one per output channel "
                "(w_scale at the columns n of z, as a row: [None, :])", slips.scales_on_swapped_axes),
        Mistake("w is read as if it were K x N (w_ptr + k * N + n), but it is stored N x K, a row per output "
                "channel: w[n, k] is at w_ptr + n * K + k; load a BN x BK tile and hand tl.trans(w) to tl.dot",
                slips.w_read_as_k_by_n),
        Mistake("w's scales are left out: z = acc * x_scale[:, None] * w_scale[None, :]", slips.x_scale_only),
    ),
    perf_size={"M": 4096, "N": 4096, "K": 4096, "BM": 64, "BN": 128, "BK": 128},
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    # Measured on an H200 (benchmarks/results/nvidia-h200/p32_variants.md, compile_baseline.md): the reference at
    # 64 x 128 x 128 took 173 us, 0.6x torch._scaled_mm's 104.5; 128 x 128 x 128 tiles with 4 warps took 405.
    speed_goal=SpeedGoal(vs_compile=0.5, levers=(
        "64 x 128 x 128 fp8 tiles (or 128 x 128 x 128 with num_warps=8: four warps cannot hold that accumulator), "
        "w's tile read along K and handed to tl.dot as tl.trans(w), the float8 tiles as they are, the scales once "
        "per tile after the loop")),
    library=LibraryBaseline(
        "torch._scaled_mm (cuBLASLt fp8, rowwise scales)", library_ops.fp8_scaled_mm_library, dtype="float8_e4m3fn",
        why="a user multiplies fp8 matrices with torch._scaled_mm; rowwise scales (per row of x, per row of w) "
            "return bfloat16 only, cast to float16 here",
        tolerance=(2e-2, 2e-2)),
)
