"""Puzzle 15: int8 weight-only matrix-vector product with per-channel scales."""

from jaxtyping import Float16, Int8
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, SpeedGoal, cdiv


def int8_gemv_spec(
    x: Float16[Tensor, "K"], weight: Int8[Tensor, "K N"], scale: Float16[Tensor, "N"]
) -> Float16[Tensor, "N"]:
    """z[n] = scale[n] * sum_k x[k] * weight[k, n], accumulated in float32, rounded to float16 at the end"""
    return ((x.float() @ weight.float()) * scale.float()).half()


PUZZLE = Puzzle(
    number=15,
    slug="int8_gemv",
    title="Int8 weight-only matrix-vector product",
    kernel_name="int8_gemv_kernel",
    spec=int8_gemv_spec,
    reduction=Reduction("K", KSlice("x", 0)),  # a loop over K that stops early is named
    statement=r"""
A language model generating one token at a time multiplies a single activation vector by
every weight matrix: a matrix-**vector** product (batch size 1). Each weight is read once and
used for one multiply-add, so the kernel's speed is the speed at which it can stream the
weights from memory. *Weight-only* quantization stores them as int8, one byte instead of
two, with one float scale per output channel (per column), and keeps the activations in
fp16:

$$z_n = \mathrm{scale}_n \sum_{k=0}^{K-1} x_k\, W_{k,n}$$

`x` is an fp16 vector of length `K`, `weight` an int8 matrix of shape `K × N` (row-major,
the `x @ W` orientation of the GPTQ puzzle; `nn.Linear` stores the transpose, `N × K`, and
a kernel on that layout sums along each row instead), `scale` an fp16 vector of length `N`, and `z` an fp16
vector of length `N`. The scale of column `n` is the same for every `k`, so it comes out of
the sum: accumulate `Σ x_k W_{k,n}` in float32 and multiply by the scale once, at the end,
then round to fp16.

**Why not `tl.dot`.** A tensor-core product needs tiles of at least 16 rows; with one row of
activations, 15 of every 16 would be padding, and the work is limited by memory, not by
arithmetic, anyway. So this kernel uses plain vector instructions: a broadcast multiply and a
`tl.sum`. Don't use `tl.dot` or its scaled form `tl.dot_scaled` (the grader rejects a kernel that calls
either).

**The kernel.** Grid axis 0 walks the output in strips of `BN` columns; each program streams
its `K × BN` strip of weights once, in chunks of `BK` rows, and keeps `BN` float32 running
sums. `K` need not be a multiple of `BK`, nor `N` of `BN`.
""",
    sizes=(
        {"N": 64, "K": 256, "BN": 32, "BK": 64},
        {"N": 80, "K": 193, "BN": 32, "BK": 64},  # a last chunk of one row
        {"N": 24, "K": 96, "BN": 16, "BK": 32},
    ),
    hints=(
        "One program owns columns `n = tl.program_id(0) * BN + tl.arange(0, BN)` and keeps "
        "`acc = tl.zeros([BN], dtype=tl.float32)`; it loops `for k0 in range(0, K, BK)`.",
        "A chunk is `x[k]` (length `BK`) and the `BK × BN` tile `weight_ptr + k[:, None] * N + n[None, :]`; mask "
        "`k < K` and `n < N`, loading 0 where masked so that the padding adds nothing.",
        "Convert both to float32 and `acc += tl.sum(x[:, None] * w, axis=0)`; after the loop, "
        "`tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)`.",
    ),
    grid=lambda s: (cdiv(s["N"], s["BN"]),),
    forbidden_calls=("dot", "dot_scaled"),  # every tensor-core product of triton.language
    # The sums reach a few hundred; fp16 keeps about 3 significant digits.
    rtol=1e-2,
    atol=1e-2,
    likely_mistakes=(
        Mistake("the per-column scale is left out: multiply each column's sum by scale[n] before rounding to fp16",
                mistakes.gemv_without_scale),
    ),
    perf_size={"N": 8192, "K": 8192, "BN": 64, "BK": 128},
    fast_reference=FastReference(
        "Two changes. Each trip of the loop loads `4·BK` rows of the strip at once instead of `BK` (32 KB of int8 "
        "at the perf size): there are only `N / BN` = 128 programs, about one per multiprocessor, so the bytes "
        "each has in flight set the speed. And the loop is `tl.range(0, K, 4 * BK, num_stages=3)`: the compiler "
        "issues the next trips' loads while this one is summed. On an H200 each change alone takes the kernel "
        "from 173 us to 94 and 110; together to 43, 3.7x torch.compile's 162 "
        "(benchmarks/results/nvidia-h200/p15_variants.md)."),
    flops=lambda s: 2 * s["N"] * s["K"],
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    speed_goal=SpeedGoal(roofline=0.6, levers=(
        "stream the int8 weights once in large, contiguous tiles (BK of 128-512 along K), accumulate in "
        "float32 and apply the per-channel scale once at the end; enough programs (BN small enough) to fill "
        "every multiprocessor")),
    library=LibraryBaseline(
        "torch._weight_int8pack_mm (int8 weight-only matmul)", library_ops.int8_library, dtype="float16",
        why="torch's own int8 weight-only matmul (what torchao's int8 weight-only quantization runs): float16 "
            "activations times int8 weights with one scale per output column, as the spec; the weight is stored "
            "N x K, its layout, before timing"),
)
