"""Puzzle 18: GPTQ int4 dequantize-and-multiply, split-K, on the AutoGPTQ layout."""

import torch
from jaxtyping import Float16, Int32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Baseline, FastReference, KSlice, Mistake, Puzzle, SpeedGoal, SplitK, cdiv

FPINT = 8  # 4-bit values per int32 word


def nibbles(words: Tensor, dim: int) -> Tensor:
    """Unpack int32 words into their 8 nibbles (0..15), low nibble first, along `dim`."""
    shifts = torch.arange(FPINT, dtype=torch.int32, device=words.device) * 4
    words = words.movedim(dim, -1)
    return ((words[..., None] >> shifts) & 0xF).flatten(-2).movedim(-1, dim)


def gptq_matmul_spec(
    a: Float16[Tensor, "M K"],
    qweight: Int32[Tensor, "K//8 N"],
    scales: Float16[Tensor, "K//G N"],
    qzeros: Int32[Tensor, "K//G N//8"],
) -> Float16[Tensor, "M N"]:
    """z = a @ W, W[k, n] = (q[k, n] - (zero[k // G, n] + 1)) * scales[k // G, n], summed in float32"""
    group = a.shape[1] // scales.shape[0]  # G
    q = nibbles(qweight, dim=0)  # K × N: packed along K
    zero = nibbles(qzeros, dim=1)  # K/G × N: packed along N
    per_row = lambda t: t.repeat_interleave(group, dim=0)  # noqa: E731 - one group -> its G rows of K
    w = (q - (per_row(zero) + 1)).float() * per_row(scales).float()
    return (a.float() @ w).half()


PRODUCTION_LESSON = (
    "It reads the same 4-bit weights; the gap is the work per weight. A kernel written as the hints say "
    "loads each word once for each of its 8 rows, and a scale and a zero point for every weight; the "
    "production kernel loads each word once, in 16-byte vectors (the weights are repacked at load time), "
    "and one row of scales and zero points per K step, dequantizes two weights per fp16 instruction with "
    "bit tricks instead of integer-to-float conversions, hands the weights to the tensor cores straight "
    "from registers, and takes its tile and split from a table tuned per M (solutions/gptq/kernels.py; "
    "measurements in benchmarks/gptq/NOTES.md)."
)


PUZZLE = Puzzle(
    number=18,
    slug="gptq_splitk",
    title="GPTQ int4 matmul with split-K",
    kernel_name="gptq_matmul_kernel",
    spec=gptq_matmul_spec,
    statement=r"""
The end of the track: the kernel behind a GPTQ-quantized linear layer, `z = a @ W`, reading
the weights in 4 bits on the layout AutoGPTQ writes to disk, with the split-K scheme of
puzzle 17 (as in the PyTorch/IBM split-K GPTQ kernel). `a` is fp16, `M × K` (`M` tokens,
a few); `W` is `K × N`, stored as three tensors:

* `qweight`, int32, `K/8 × N`: the 4-bit values `q[k, n]` in `0 … 15`, **packed along `K`**
  as in puzzle 14: `q[k, n] = (qweight[k // 8, n] >> 4·(k % 8)) & 0xF`.
* `scales`, fp16, `K/G × N`: one scale per group of `G` consecutive rows of `K` and per column.
* `qzeros`, int32, `K/G × N/8`: one 4-bit zero point per group and column, **packed along
  `N`**: `zero[g, n] = (qzeros[g, n // 8] >> 4·(n % 8)) & 0xF`.

Dequantized, with the group `g = ⌊k / G⌋`,

$$W_{k,n} = \big(q_{k,n} - (\mathrm{zero}_{g,n} + 1)\big)\; \mathrm{scale}_{g,n},
\qquad z_{m,n} = \sum_{k} a_{m,k}\, W_{k,n}$$

The `+ 1` is AutoGPTQ's storage convention: it saves each zero point minus one, so the kernel
adds the one back (newer "v2" checkpoints drop it; this puzzle uses the classic format). No
activation reordering: the group of row `k` is simply `k // G` (what `g_idx` holds when
`desc_act` is off). Real checkpoints use `G = 128`; to keep the interpreter quick, the sizes
here use smaller groups on the same layout, from `G = 24` to `G = 64`: a group need not be a
power of two, nor a multiple of `BK` (nor `BK` a multiple of it), so a chunk may hold rows of two
or three groups.

**The kernel.** As in puzzle 17, the grid is `(cdiv(M, BM), cdiv(N, BN), SPLIT_K)` and part
`s` reduces the `BK`-row chunks `s, s + SPLIT_K, …` of `K`. For each chunk it loads the `BM × BK`
tile of `a` and the `BK/8 × BN` words of `qweight` that hold the chunk's `BK × BN` weights,
unpacks them, looks up each row's group for the scale and the zero point, dequantizes,
and multiplies with `tl.dot` (fp16 tiles, float32 accumulator). The weights go from memory
to registers in 4 bits and are never written back dequantized: that is the point.
At the end the program adds its partial tile, rounded to fp16, into `z` (fp16, `M × N`) with
`tl.atomic_add`; the grader zeroes `z` first. (Adding fp16 partials, as split-K kernels do when
the layer's output is fp16, rounds each partial sum; the tolerance allows for it.) Puzzle 16's
grouped tile order pays off where `z` has many rows of tiles; with `M` a few tokens it has one, so
the program ids are used as they come.

`K` is a multiple of `G`, `G` and `BK` of 8, `N` of 8 (whole words); `K` need not be a
multiple of `BK · SPLIT_K` nor of `BK`, `M` and `N` need not be multiples of `BM`, `BN`
(`M = 3` fills three rows of a 16-row tile: `tl.dot` wants tiles of at least 16).
""",
    sizes=(
        {"M": 3, "N": 64, "K": 256, "G": 32, "BM": 16, "BN": 32, "BK": 32, "SPLIT_K": 4},
        {"M": 5, "N": 40, "K": 192, "G": 64, "BM": 16, "BN": 32, "BK": 32, "SPLIT_K": 4},
        # Two tile rows (M > BM): the rows come from tl.program_id(0) * BM, not from another block.
        {"M": 40, "N": 24, "K": 160, "G": 32, "BM": 32, "BN": 16, "BK": 64, "SPLIT_K": 2},
        # Groups that are not powers of two, nor multiples of BK, nor divisors of it.
        {"M": 3, "N": 24, "K": 120, "G": 24, "BM": 16, "BN": 16, "BK": 32, "SPLIT_K": 2},
        {"M": 2, "N": 16, "K": 80, "G": 40, "BM": 16, "BN": 16, "BK": 16, "SPLIT_K": 3},
    ),
    hints=(
        "Start from your puzzle 17 kernel: the same grid, the same loop "
        "`for k0 in range(part * BK, K, BK * SPLIT_K)`, the same masked `a` tile. Only the `b` tile changes: it is "
        "now built from `qweight`, `scales` and `qzeros`.",
        "For rows `k` and columns `n` of the chunk: the weights are `(qweight[k // 8, n] >> (k % 8) * 4) & 0xF` "
        "(one load of `qweight_ptr + (k // 8)[:, None] * N + n[None, :]`); the group is `g = k // G`; the scales "
        "are at `scales_ptr + g[:, None] * N + n[None, :]`, the zero words at "
        "`qzeros_ptr + g[:, None] * (N // 8) + (n // 8)[None, :]`, their nibble at `(n % 8) * 4`.",
        "`w = ((q - (zero + 1)).to(tl.float32) * scale.to(tl.float32)).to(tl.float16)`, masked rows `k >= K` "
        "loading 0 in `a` so they add nothing; `acc += tl.dot(a_tile, w)`; at the end "
        "`tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc.to(tl.float16), mask=...)`.",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"]), s["SPLIT_K"]),
    # fp16 weights in the dot and fp16 partial sums: a few units in the last place of values up to ~100.
    rtol=1e-2,
    atol=1e-1,
    output_init="zeros",
    split_k=SplitK((KSlice("a", 1), KSlice("qweight", 0, rows=8))),
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    baseline=Baseline(name="the production GPTQ kernel (solutions/gptq, gptq_matmul)", lesson=PRODUCTION_LESSON,
                      launcher="solutions.gptq.puzzle_baseline:launcher"),
    likely_mistakes=(
        Mistake("the zero point is subtracted without its + 1: AutoGPTQ stores zero − 1, so "
                "W = (q − (zero + 1)) · scale", mistakes.gptq_without_plus_one),
        Mistake("every zero point is taken as 8 (q − 8, as in puzzle 14); here each group and column has its own, "
                "unpacked from qzeros", mistakes.gptq_zero_as_eight),
        Mistake("the zero point is left out: W = (q − (zero + 1)) · scale", mistakes.gptq_without_zero),
        Mistake("the zero point is read at nibble k % 8 of its word, as a weight is; qzeros is packed along N: "
                "zero[g, n] is nibble n % 8 of qzeros[g, n // 8]", mistakes.gptq_zeros_along_k),
        Mistake("the scales are left out: W = (q − (zero + 1)) · scale[g, n]", mistakes.gptq_without_scales),
        Mistake("the group of row k is taken as k // BK (its chunk); it is k // G, and a chunk may hold rows of "
                "several groups", mistakes.gptq_group_by_block),
        Mistake("every row of a chunk takes the group of the chunk's first row (g = k0 // G), but a chunk may hold "
                "rows of two or three groups", mistakes.gptq_group_of_chunk_start,
                where=mistakes.gptq_chunks_across_groups),
        Mistake("the group of row k is taken as k // 64, a fixed size (in puzzle 12, 64 values shared an offset "
                "word); here it is k // G, with G an argument of the kernel", mistakes.gptq_group_of_64),
    ),
    perf_size={"M": 16, "N": 4096, "K": 4096, "G": 128, "BM": 16, "BN": 64, "BK": 128, "SPLIT_K": 4},
    fast_reference=FastReference(
        "Two changes to the loads, which were most of the time. The teaching kernel builds each of a chunk's "
        "`BK × BN` weights from loads of its own: its word (so each word 8 times), its scale and its zero "
        "point (the same row of them `BK` times when the chunk lies in one group). The fast one loads the "
        "`BK/8 × BN` words once and unpacks them with a broadcast shift into a `BK/8 × 8 × BN` tile, reshaped "
        "to `BK × BN`; and a chunk whose rows all fall in one group (always, when `BK` divides `G`, as with "
        "real checkpoints' `G = 128`) loads that group's scales and zero points once, as one row broadcast "
        "over the chunk. Only a chunk that straddles groups looks them up row by row."),
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    speed_goal=SpeedGoal(levers=(
        "dequantize a whole BK x BN tile per step (shifts on loaded words, one scale and zero per group and "
        "column), one tl.dot per step, SPLIT_K and tiles that fill every multiprocessor, 16-byte loads of the"
        " packed weights; the production kernel beside it shows the rest")),
    library=LibraryBaseline(
        "torch._weight_int4pack_mm (tinygemm int4 weight-only matmul)", library_ops.int4_library, dtype="bfloat16",
        why="torch's own int4 weight-only matmul (what torchao's int4 weight-only quantization and gpt-fast run): "
            "the GPTQ weights, zero points and scales repacked once into its layout, as a model loader would; "
            "it takes bfloat16 activations (8 mantissa bits: outputs off by up to 0.4% of the largest, checked "
            "so) and groups of 32 to 256 (the perf size's G is 128), N a multiple of 16",
        tolerance=(1e-2, 0.5)),
)
