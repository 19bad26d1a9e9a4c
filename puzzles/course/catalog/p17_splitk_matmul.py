"""Puzzle 17: split-K matrix multiply with atomic adds."""

from jaxtyping import Float16, Float32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import KSlice, Mistake, Puzzle, SpeedGoal, SplitK, cdiv


def splitk_matmul_spec(a: Float16[Tensor, "M K"], b: Float16[Tensor, "K N"]) -> Float32[Tensor, "M N"]:
    """z = a @ b, products of fp16 values summed in float32"""
    return a.float() @ b.float()


PUZZLE = Puzzle(
    number=17,
    slug="splitk_matmul",
    title="Split-K matrix multiply",
    kernel_name="splitk_matmul_kernel",
    spec=splitk_matmul_spec,
    statement=r"""
`z = a @ b` with `a` of shape `M × K`, `b` of shape `K × N` (both fp16) and `z` of shape
`M × N` (float32):

$$z_{m,n} = \sum_{k=0}^{K-1} a_{m,k}\, b_{k,n}$$

**Why split K.** In an inference layer `M` is the number of tokens, often a handful, while `K`
and `N` are in the thousands. One program per `BM × BN` tile then gives very few programs
(`M = 16`, `N = 4096`, `BN = 64`: 64 programs for a GPU with over a hundred multiprocessors),
each walking a very long `K`. Split-K cuts the reduction into `SPLIT_K` parts and gives each
part its own program, so there are `SPLIT_K` times more programs, each doing a `1/SPLIT_K`
share of the loop. Their partial tiles must then be added up.

**The kernel.** The grid is `(cdiv(M, BM), cdiv(N, BN), SPLIT_K)`: axis 0 walks the tile rows,
axis 1 the tile columns, axis 2 the part `s` of `K`. Cut `K` into chunks of `BK`; part `s`
takes chunks `s, s + SPLIT_K, s + 2·SPLIT_K, …` (rows `k` with `⌊k / BK⌋ mod SPLIT_K = s`),
accumulates their products in float32 and **adds** its partial tile into `z` with
`tl.atomic_add`: several programs add into the same elements at the same time, and an atomic
add is the only way to do that without losing updates (a load, add and store by two programs
at once can keep only one of the two sums). The grader fills `z` with zeros before the run, as
the host code around a split-K kernel must (`torch.zeros`, not `torch.empty`). It also checks
the split itself: the parts of a tile must read disjoint shares of `K`, each part a share
(contiguous ranges of chunks, as CUTLASS cuts them, pass as well as the interleaved ones).

`K` need not be a multiple of `BK · SPLIT_K` (the last round of chunks is partial, and some
parts get one chunk fewer than others), nor a multiple of `BK`; `M` and `N` need not be
multiples of `BM` and `BN`. `tl.dot` is allowed (fp16 tiles in, float32 out).

*Deterministic alternative.* Atomic adds of floats happen in whatever order the programs
finish, so the last bits of the result can change from run to run. A kernel that must be
bit-reproducible writes each part's tile into a `SPLIT_K × M × N` buffer instead and sums it
in a second step (another kernel, or `torch.sum`).
""",
    sizes=(
        {"M": 32, "N": 32, "K": 256, "BM": 16, "BN": 16, "BK": 32, "SPLIT_K": 4},
        {"M": 24, "N": 40, "K": 193, "BM": 32, "BN": 32, "BK": 32, "SPLIT_K": 4},  # a last chunk of one row
        {"M": 5, "N": 16, "K": 80, "BM": 16, "BN": 16, "BK": 16, "SPLIT_K": 3},
        # BM differs from BN where both axes run several programs: `m` from BN (or `n` from BM) fails.
        {"M": 40, "N": 40, "K": 144, "BM": 32, "BN": 16, "BK": 16, "SPLIT_K": 4},
    ),
    hints=(
        "Part `s = tl.program_id(2)` loops `for k0 in range(s * BK, K, BK * SPLIT_K)`: its chunks start at "
        "`s * BK` and are `BK * SPLIT_K` apart.",
        "Each chunk is the usual pair of tiles: `a_ptr + m[:, None] * K + k[None, :]` and "
        "`b_ptr + k[:, None] * N + n[None, :]`, with `k = k0 + tl.arange(0, BK)`. Mask `k < K` on both (and `m < M`, "
        "`n < N`), with `other=0.0`, so the ragged last chunk adds nothing past `K`.",
        "`acc += tl.dot(a_tile, b_tile)` into a float32 `acc`; after the loop, "
        "`tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=...)` instead of `tl.store`.",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"]), s["SPLIT_K"]),
    # On a GPU, fp16 tl.dot accumulates in float32; partial sums added in any order differ in the last bits.
    rtol=1e-3,
    atol=1e-3,
    output_init="zeros",
    split_k=SplitK((KSlice("a", 1), KSlice("b", 0))),
    perf_size={"M": 16, "N": 4096, "K": 8192, "BM": 16, "BN": 64, "BK": 128, "SPLIT_K": 4},
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    likely_mistakes=(
        Mistake("every part walks the whole of K, so z is SPLIT_K times a @ b: part s takes only chunks s, "
                "s + SPLIT_K, …, range(s * BK, K, BK * SPLIT_K)", mistakes.splitk_every_part_whole_k),
        Mistake("the parts' chunks overlap: part s starts at chunk s but steps by BK, taking every chunk from s on; "
                "step by BK * SPLIT_K", mistakes.splitk_parts_step_by_bk),
    ),
    speed_goal=SpeedGoal(levers=(
        "the weights stream once: BK of 128-256, BN of 64-128, SPLIT_K so that tiles times parts fill every "
        "multiprocessor; tl.dot on each step, num_stages 3-4; one atomic add per tile and part")),
    library=LibraryBaseline(
        "torch.mm(a, b, out_dtype=torch.float32) (cuBLAS)", library_ops.mm_library, dtype="float16 in, float32 out",
        cpu_note="aten::mm.dtype has a CUDA kernel only",
        why="cuBLAS multiplies float16 matrices with float32 accumulation and writes the float32 result, as the "
            "spec; it picks its own split of K for a skinny M"),
)
