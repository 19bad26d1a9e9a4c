"""Puzzle 22: torch.compile first, then a kernel for what it leaves unfused."""

import torch
from jaxtyping import Float16
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_epilogue as slips
from puzzles.course.bug_inputs import linear_cancelling_sum
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import KSlice, Mistake, Puzzle, Reduction, SpeedGoal, cdiv


def linear_relu_spec(
    x: Float16[Tensor, "M K"],
    w: Float16[Tensor, "K N"],
    b: Float16[Tensor, "N"],
) -> Float16[Tensor, "M N"]:
    """z = relu(x @ w + b): a linear layer and its activation, in fp16"""
    return torch.relu(x @ w + b)


COMPILE_TEXT = """\
## torch.compile first

Before writing a kernel, do what GPU MODE's lecture 14 ("A Practitioner's Guide to Triton") puts first:
(1) write it in PyTorch, (2) if that is not fast enough, try `torch.compile`, (3) if that is still not
enough, rewrite the PyTorch code so `torch.compile` does better, and (4) only then write a Triton
kernel, starting from the code `torch.compile` wrote. The next cell does steps 1 and 2 on the spec
above, at the speed challenge's size, and prints the code inductor (`torch.compile`'s compiler)
generated. On a GPU it is compiled now; on a CPU you read a capture made on an H100 that ships with
the course.

Read it for three things:
* **How many kernels run, and which.** `extern_kernels.mm(...)` is a call to cuBLAS, NVIDIA's
  matmul library: inductor does not write the matmul itself (unless asked to with
  `mode="max-autotune"`, which tries Triton matmul templates and takes minutes to compile). Each
  `triton_..._0.run(...)` launches a Triton kernel that inductor wrote, whose source is printed
  above it in the `async_compile.triton(...)` string.
* **What goes through memory between them.** `buf0` is the matmul's output, `M × N` in fp16: cuBLAS
  writes all of it, and the Triton kernel `triton_poi_fused_add_relu_0` (*poi*: pointwise; *fused
  add relu*: the two operations it fused) reads all of it back, adds `b`, applies the relu and writes
  the result over it, in place (its `in_out_ptr0`; the wrapper's `buf1 = buf0  # reuse`): that buffer is
  returned as `z`. At the size below `z` is 128 MB, so that round trip moves 256 MB that a fused kernel
  never moves.
* **What the generated kernel looks like.** A flat index `xindex`, loads with `eviction_policy`, a mask
  `xmask`: a kernel like the ones of puzzles 1-6, which you can read and could have written.

Step 3 does not help here (there is no PyTorch way to ask cuBLAS for a bias and relu on its output
tile), so step 4: write the kernel that does the matmul and applies `+ b` and the relu to each tile
while it is still in registers, before its one store.
"""

COMPILE_CODE = """\
from puzzles import compare_with_compiled, compiled_code, kernels_in

print(compare_with_compiled(22))  # steps 1 and 2: eager and compiled times (on a GPU)
code = compiled_code(22)  # on a GPU: compiled now; on a CPU: the capture shipped with the course
triton_kernels, library_calls = kernels_in(code)
print("Triton kernels inductor wrote:", triton_kernels)
print("library calls:", library_calls)
print(code)
"""

PUZZLE = Puzzle(
    number=22,
    slug="torch_compile_first",
    title="torch.compile first",
    kernel_name="linear_relu_kernel",
    spec=linear_relu_spec,
    statement=r"""
A linear layer with a relu, in fp16: `x` is `M × K` (`M` tokens), `w` is `K × N`, `b` has `N` entries, and

$$z_{m,n} = \max\Big(0,\; b_n + \sum_{k=0}^{K-1} x_{m,k}\, w_{k,n}\Big)$$

This puzzle is about *when* to write a kernel. Read the section **torch.compile first** below the spec
before writing yours: `torch.compile` turns this spec into two kernels, a cuBLAS matmul that writes
`x @ w` to memory and a Triton kernel that reads it back, adds `b`, applies the relu and writes the
result over it (in place, in the capture that ships with the course). Your kernel does both in
one: a tiled matmul as in puzzle 11 (fp16 tiles into `tl.dot`, a float32 accumulator), then, after
the loop over `K`, `+ b` (one value per column `n`) and the relu applied to the accumulator, and a
single store of `z` rounded to fp16. This is a matmul *epilogue*: work done on the
output tile between the last `tl.dot` and the store, which costs almost nothing there.
The accumulator must be float32: one graded size has a running sum over `K` that climbs to 512 before
it cancels, where float16 steps by 0.5, so a float16 accumulator (or `out_dtype=tl.float16`) fails it.

The grid is `(cdiv(M, BM), cdiv(N, BN))`: axis 0 walks the tile rows, axis 1 the tile columns, and
each program loops over `K` in chunks of `BK`. `M`, `N` and `K` need not be multiples of the blocks
(mask the edges, loading 0 past `K` so the ragged last chunk adds nothing); the blocks are powers of
two of at least 16 (`tl.dot`'s smallest tile). On a GPU the speed challenge times your kernel against
`torch.compile(linear_relu_spec)` itself.
""",
    sizes=(
        {"M": 64, "N": 48, "K": 80, "BM": 32, "BN": 16, "BK": 32},  # K a chunk and a half past 64: the tail
        {"M": 50, "N": 70, "K": 64, "BM": 16, "BN": 32, "BK": 16},  # M and N not multiples of their blocks
        # M < N: a bias read by row (b[m]) stays in bounds and is wrong; BM != BN catches swapped blocks.
        {"M": 33, "N": 100, "K": 40, "BM": 32, "BN": 64, "BK": 16},
        # A running sum over K that reaches 512 and cancels (linear_cancelling_sum): a float16 accumulator fails.
        {"M": 20, "N": 36, "K": 97, "BM": 16, "BN": 16, "BK": 32},
    ),
    hints=(
        "The idea: one kernel does what inductor's two do. It is puzzle 11's tiled matmul without the batch, and "
        "the bias and the relu are applied to the float32 accumulator after the loop over `K`, while the tile is "
        "still in registers: nothing goes to memory between the matmul and the relu.",
        "The shape: program `(i, j)` owns a `BM × BN` tile of `z` (its rows from axis 0, its columns from axis 1). "
        "Loop over `K` in chunks of `BK`: a `BM × BK` tile of `x` and a `BK × BN` tile of `w`, masked with 0 past "
        "every edge and left in fp16 (converting them first makes `tl.dot` slower), their `tl.dot` added into a "
        "float32 accumulator. After the loop: the tile's `BN` entries of `b`, added to every row, the relu, and "
        "one masked store rounded to fp16.",
        "One key line, the epilogue on the accumulator: `z = tl.maximum(acc + b[None, :].to(tl.float32), 0.0)`.",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"])),
    reduction=Reduction("K", KSlice("x", 1)),  # a loop over K that stops early is named
    # fp16 output: one rounding in the fused kernel, two in the spec (the matmul's, then the bias's); values
    # up to about 15 at these sizes, where an fp16 step is 0.008.
    rtol=1e-2,
    atol=1e-2,
    draw_inputs=linear_cancelling_sum,
    likely_mistakes=(
        Mistake("the accumulator is stored as it is, without the epilogue: add b[n] and apply the relu to it "
                "before the store, z = max(0, acc + b)", slips.linear_without_epilogue),
        Mistake("the bias is left out: add b[n] to the accumulator before the relu", slips.linear_without_bias),
        Mistake("the relu is left out: z = max(0, acc + b)", slips.linear_without_relu),
        Mistake("the bias is added after the relu; it goes inside: z = max(0, acc + b)", slips.linear_bias_after_relu),
        Mistake("the bias is read by row (b[m]); there is one per column: b_ptr + n, broadcast as b[None, :]",
                slips.linear_bias_by_row),
        Mistake("w is read as if it were N × K (w_ptr + n * K + k): it is K × N, row k holding the N weights of "
                "input k, so its tile is w_ptr + k[:, None] * N + n[None, :]", slips.linear_w_read_as_n_by_k),
        Mistake("x is read as if it were K × M (x_ptr + k * M + m): it is M × K, row m holding token m's K inputs, "
                "so its tile is x_ptr + m[:, None] * K + k[None, :]", slips.linear_x_read_as_k_by_m),
        Mistake("the running sum over K is kept in float16 (a float16 accumulator, tl.dot(..., "
                "out_dtype=tl.float16), or each chunk's product rounded to float16 before it is added): at this "
                "size the sum climbs to 512, where float16 steps by 0.5, before it cancels; keep acc = "
                "tl.zeros([BM, BN], dtype=tl.float32), add tl.dot's float32 result, and round to float16 once, "
                "in the store", slips.linear_float16_accumulator),
    ),
    lead_cells=(("markdown", COMPILE_TEXT), ("code", COMPILE_CODE)),
    perf_size={"M": 8192, "N": 8192, "K": 256, "BM": 128, "BN": 128, "BK": 64},
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    speed_goal=SpeedGoal(vs_compile=1.0, roofline=0.3,
                         levers="fusion (the bias and relu on the accumulator, one store of z), fp16 tiles into "
                                "tl.dot, 128 × 128 tiles"),
    library=LibraryBaseline(
        "torch.addmm(b, x, w).relu_() (cuBLASLt)", library_ops.addmm_library, dtype="float16",
        why="a linear layer as torch runs it (F.linear): cuBLASLt adds the bias in the matmul's epilogue, and "
            "relu is one more pass over z"),
)
