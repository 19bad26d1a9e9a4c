"""Puzzle 14: unpack int4 weights packed along K (the GPTQ `qweight` layout)."""

import torch
from jaxtyping import Int8, Int32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.puzzle import FastReference, Mistake, Puzzle, SpeedGoal, cdiv

FPINT = 8  # 4-bit values per int32 word


def unpack_int4_spec(qweight: Int32[Tensor, "K//8 N"]) -> Int8[Tensor, "K N"]:
    """z[k, n] = ((qweight[k // 8, n] >> 4 * (k % 8)) & 0xF) - 8"""
    shifts = torch.arange(FPINT, dtype=torch.int32, device=qweight.device) * 4
    nibbles = (qweight[:, None, :] >> shifts[None, :, None]) & 0xF  # K/8 × 8 × N: word row, nibble, column
    return (nibbles.flatten(0, 1) - 8).to(torch.int8)


PUZZLE = Puzzle(
    number=14,
    slug="unpack_int4",
    title="Unpack int4 along K",
    kernel_name="unpack_int4_kernel",
    spec=unpack_int4_spec,
    statement=r"""
The inverse of puzzle 13, on the layout the GPTQ puzzle (18) reads. A weight matrix `W` of
`K` rows (the reduction dimension of `x @ W`) and `N` columns holds 4-bit values, packed
8 to an int32 word **down the columns**, along `K`: word `qweight[j, n]` holds rows
`8j … 8j + 7` of column `n`, low nibble first, each as the offset-binary nibble `v + 8`.
So `qweight` has shape `K/8 × N` and

$$z_{k,n} = \big((\mathrm{qweight}_{\lfloor k/8\rfloor,\,n} \gg 4\,(k \bmod 8))\ \&\ \mathtt{0xF}\big) - 8
\in \{-8, \dots, 7\}$$

with `z` an int8 matrix of shape `K × N`. (Puzzle 12 packed along the row, the last axis.
Packed along `K`, a word holds 8 consecutive weights of one column: exactly what a loop over
`K` for a fixed output column consumes, which is how the original GPTQ CUDA kernels worked.)

The words are random 32-bit integers, so every nibble takes every value, the top one included:
`>>` on an int32 is an arithmetic shift, which copies the sign bit into the vacated bits, so
mask with `0xF` **after** shifting.

Grid axis 0 walks the rows `k` of `z` in blocks of `BK`, axis 1 its columns in blocks of
`BN`. `K` and `BK` are multiples of 8 (a block holds whole words); `K` need not be a multiple
of `BK`, nor `N` of `BN`.
""",
    sizes=(
        {"K": 64, "N": 32, "BK": 32, "BN": 16},
        {"K": 40, "N": 20, "BK": 16, "BN": 16},
        {"K": 96, "N": 24, "BK": 64, "BN": 32},
    ),
    hints=(
        "Row `k` of `z` lives in word row `k // 8` at nibble `k % 8`; column `n` stays column `n`.",
        "Load the word of every element of the `BK × BN` block, `qweight_ptr + (k // 8)[:, None] * N + n[None, :]` "
        "(each word is loaded for 8 rows, which is fine), masked by `k < K` and `n < N`.",
        "Then `((words >> ((k % 8) * 4)[:, None]) & 0xF) - 8`, converted with `.to(tl.int8)`, stored at "
        "`z_ptr + k[:, None] * N + n[None, :]`.",
    ),
    grid=lambda s: (cdiv(s["K"], s["BK"]), cdiv(s["N"], s["BN"])),
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    likely_mistakes=(
        Mistake("the nibbles are stored as they are, 0 … 15: subtract the offset of 8 to get the value in −8 … 7",
                mistakes.unpack_without_offset),
        Mistake("the words are masked before the shift, (word & 0xF) >> 4·(k % 8), which keeps only nibble 0: shift "
                "first, then mask", mistakes.unpack_masked_first),
        Mistake("each nibble is masked in place, then shifted down, (word & (0xF << s)) >> s: for the top nibble "
                "the arithmetic shift copies the sign bit into the bits above it; shift first, then mask with 0xF",
                mistakes.unpack_masked_in_place),
    ),
    perf_size={"K": 8192, "N": 8192, "BK": 64, "BN": 128},
    fast_reference=FastReference(
        "The teaching kernel loads, for every element, the word that holds it: each word 8 times (the repeats "
        "come from the cache, but each is a load instruction). The fast one loads its `BK/8 × BN` words once, "
        "shifts each by the 8 nibble offsets at once, `(words[:, None, :] >> (tl.arange(0, 8) * 4)[None, :, "
        "None]) & 0xF` (nibble `n` of word row `r` is row `8r + n`), and reshapes that `BK/8 × 8 × BN` tile "
        "to the `BK × BN` output tile."),
    speed_goal=SpeedGoal(roofline=0.6, levers=(
        "load each packed word once and expand it in registers into its eight values (a reshape/broadcast of "
        "shifts), tiles wide along N (BN of 128-256) for 16-byte stores")),
    no_library=NO_SUCH_OP.format(what="unpacking int4 words into int8 values"),
)
