"""Puzzle 11: batched matrix multiplication."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, SpeedGoal


def dot_spec(x: Float32[Tensor, "N2 N0 MID"], y: Float32[Tensor, "N2 MID N1"]) -> Float32[Tensor, "N2 N0 N1"]:
    """z[b] = x[b] @ y[b]"""
    return x @ y


PUZZLE = Puzzle(
    number=11,
    slug="batched_matmul",
    title="Batched matrix multiply",
    kernel_name="dot_kernel",
    spec=dot_spec,
    reduction=Reduction("MID", KSlice("x", 2)),  # a loop over MID that stops early is named
    statement=r"""
Multiply `N2` pairs of matrices: `x` has shape `N2 × N0 × MID`, `y` has `N2 × MID × N1`, and

$$z_{b,i,j} = \sum_{k=0}^{MID-1} x_{b,i,k}\, y_{b,k,j}$$

so `z` has shape `N2 × N0 × N1`. As everywhere, grid axis `d` walks the dimension named `Nd`:
axis 0 the rows `i` of `z` in blocks of `B0`, axis 1 its columns `j` in blocks of `B1`, axis 2
the batch `b`, one matrix per program (`B2` is always 1). Each program walks `MID` (the index `k`)
in chunks of `B_MID` and accumulates
the products of tiles. From this puzzle on you may use `tl.dot(a, b)` (a `B0 × B_MID` tile
times a `B_MID × B1` tile; on a GPU each tile side must be at least 16). At every graded size
but the first the shapes are not square, and `MID` need not be a multiple of `B_MID`, so every
index and every mask matters.
""",
    sizes=(
        {"N0": 32, "N1": 32, "N2": 2, "MID": 64, "B0": 16, "B1": 16, "B2": 1, "B_MID": 16},
        {"N0": 40, "N1": 24, "N2": 3, "MID": 48, "B0": 32, "B1": 16, "B2": 1, "B_MID": 32},
        {"N0": 16, "N1": 48, "N2": 2, "MID": 33, "B0": 16, "B1": 32, "B2": 1, "B_MID": 16},  # a last chunk of one
        # B_MID differs from B0 and B1 where their axes run several programs: a block written as another fails.
        {"N0": 48, "N1": 40, "N2": 2, "MID": 72, "B0": 32, "B1": 16, "B2": 1, "B_MID": 64},
    ),
    hints=(
        "Tile offsets: `x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :]` "
        "and `y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :]`.",
        "Accumulate in float32: `acc = tl.zeros([B0, B1], dtype=tl.float32)`, then `acc += tl.dot(x_tile, y_tile)`.",
        "Masked-off lanes of `x` and `y` must load as 0 (`other=0.0`) so they add nothing to the dot.",
    ),
    # On a GPU, tl.dot on float32 uses TF32 (10 mantissa bits) unless told otherwise.
    rtol=1e-2,
    atol=1e-2,
    perf_size={"N0": 2048, "N1": 2048, "N2": 8, "MID": 2048, "B0": 64, "B1": 64, "B2": 1, "B_MID": 32},
    fast_reference=FastReference(
        "One change: both tiles go into `tl.dot` as fp16 (`.to(tl.float16)`), the accumulator staying "
        "float32. `tl.dot` of float32 tiles runs on the tensor cores as TF32, whose mantissa has 10 bits, "
        "like fp16's; for values in fp16's range the products are as accurate, and fp16 tiles take half the "
        "shared memory and run at twice the tensor-core rate of TF32 on an H100. (`torch.compile` calls "
        "cuBLAS, in full float32 unless `torch.set_float32_matmul_precision(\"high\")` allows TF32.)"),
    flops=lambda s: 2 * s["N0"] * s["N1"] * s["MID"] * s["N2"],
    likely_mistakes=(
        Mistake("the tile holds only the last chunk of MID: it is set (acc = tl.dot(...)) or created inside the loop; "
                "create it once before the loop and add each chunk's product, acc += tl.dot(x_tile, y_tile)",
                mistakes.matmul_last_chunk_only),
        Mistake("every step multiplies the first chunk of MID again: the chunk's offsets are tl.arange(0, B_MID) "
                "without the loop's start, k0 + tl.arange(0, B_MID)", mistakes.matmul_first_chunk_repeated),
    ),
    speed_goal=SpeedGoal(levers=(
        "tl.dot on 64 x 64 or 128 x 128 tiles (tensor cores), B_MID of 32-64, num_warps 4-8 and num_stages "
        "3-4 so loads of the next step overlap the current dot; a grouped tile order (puzzle 16)"),
        # Measured on an H200 (benchmarks/results/nvidia-h200/p11_library_search.md); benchmarks/p11_library.py
        # times the candidates that might close the gap.
        library_note=(
            "cuBLAS's TF32 bmm took 0.41 ms at this size on an H200, and no kernel on this grid that takes "
            "float32 tiles came within 1.1x of it: Hopper's TF32 tensor-core instruction reads its second "
            "operand from shared memory K-major only, and y's tiles are N-major, so Triton transposes them on "
            "the way (every TF32 tl.dot measured took over 0.83 ms); the fastest answer found rounds the tiles "
            "to fp16, with 128 x 256 x 64 blocks, 8 warps and 3 stages: 0.48 ms, 1.18x cuBLAS's time")),
    library=LibraryBaseline(
        "torch.bmm (cuBLAS, TF32 on)", library_ops.bmm_library, allow_tf32=True,
        why="a user multiplies float32 matrices with torch.bmm, and with torch.backends.cuda.matmul.allow_tf32 "
            "(or set_float32_matmul_precision(\"high\")) when TF32's 10-bit mantissa is enough, as this "
            "puzzle's tolerance says it is; torch.compile of the spec keeps IEEE float32 and is 7x slower"),
)
