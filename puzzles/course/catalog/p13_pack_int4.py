"""Puzzle 13: pack int4 values into int32 words."""

import torch
from jaxtyping import Int8, Int32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal

FPINT = 8  # 4-bit values per int32 word


def int4_values(x: Tensor) -> Tensor:
    """The signed 4-bit value each int8 carries in its low nibble: -8..7 (x itself when x is in -8..7)."""
    return ((x.to(torch.int32) + 8) & 0xF) - 8


def pack_int4_spec(x: Int8[Tensor, "N0 N1"]) -> Int32[Tensor, "N0 N1//8"]:
    """z[r, w] = sum over n < 8 of (v[r, 8w + n] + 8) << 4n: eight offset-binary nibbles, low nibble first"""
    nibbles = (int4_values(x) + 8).to(torch.int64)  # 0..15
    shifts = torch.arange(FPINT, dtype=torch.int64, device=x.device) * 4
    words = (nibbles.unflatten(-1, (-1, FPINT)) << shifts).sum(-1)  # 0 .. 2**32 - 1
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)  # the same 32 bits, signed


PUZZLE = Puzzle(
    number=13,
    slug="pack_int4",
    title="Pack int4 into int32",
    kernel_name="pack_int4_kernel",
    spec=pack_int4_spec,
    statement=r"""
The quantization track starts with storage. A 4-bit weight takes one of 16 values, so eight of
them fit in one 32-bit word, a quarter of the memory of fp16 and half of int8. For a
memory-bound kernel (a decoder generating one token at a time reads every weight once per
token) that is up to four times less traffic than fp16.

**The values.** `x` is an `N0 × N1` int8 matrix in which every element carries a signed 4-bit
value `v` in its low nibble, read as a 4-bit two's-complement number:

$$v = \big((x + 8)\ \&\ \mathtt{0xF}\big) - 8 \in \{-8, \dots, 7\}$$

(when `x` is already in `−8 … 7`, `v = x`). The grader draws `x` over the whole int8 range,
so the high nibble holds junk that must not leak into the result.

**The packing.** Each value is stored with an offset of 8 ("offset binary"), as the nibble
`q = v + 8` in `0 … 15`. The eight values `8w … 8w + 7` of a row go into word `w` of that row,
**low nibble first**:

$$z_{r,w} = \sum_{n=0}^{7} q_{r,\,8w+n}\; 2^{4n}
\qquad\text{so nibble } n \text{ of a word is } (z \gg 4n)\ \&\ \mathtt{0xF}$$

`z` has shape `N0 × N1/8`, int32; a word whose top nibble is 8 or more is negative, and
that is fine: only the 32 bits count. Because the nibbles do not overlap, the sum is the same
as a bitwise or.

*The two-per-byte form.* Read the output's bytes (`z.view(torch.uint8)` on a little-endian
machine, which every GPU host is) and you get the other common layout: two values per byte,
low nibble first, byte `b` of a row holding values `2b` (low) and `2b + 1` (high). So packing
8 per word, low nibble first, and packing 2 per byte, low nibble first, write the same bytes.

**The kernel.** Grid axis 0 walks the rows in blocks of `B0`, axis 1 walks each row's *values*
in blocks of `B1` (so a block makes `B1/8` words). `N1` and `B1` are multiples of 8; `N0` is
any size and `N1` need not be a multiple of `B1`. Anything in `triton.language` is allowed;
`tl.sum` over an axis of length 8 is one way to combine the nibbles.
""",
    sizes=(
        {"N0": 8, "N1": 64, "B0": 4, "B1": 32},
        {"N0": 5, "N1": 40, "B0": 4, "B1": 32},
        {"N0": 3, "N1": 8, "B0": 2, "B1": 16},
    ),
    hints=(
        "First get the nibble of each value right: `q = (x + 8) & 0xF` (after widening `x` to int32). Check it on "
        "a few values: `x = -8 -> 0`, `x = -1 -> 7`, `x = 7 -> 15`, and `x = 24 -> 0` (its high nibble is junk).",
        "Make the block three-dimensional: `B0` rows × `B1 // 8` words × 8 nibbles. The value at `[r, w, n]` is "
        "column `8 * w + n` of row `r`, so load it from `x_ptr + r * N1 + 8 * w + n` (with `[:, None, None]`-style "
        "broadcasting), masking rows `< N0` and words `< N1 // 8`.",
        "Shift each nibble to its place, `q << 4 * n` with `n = tl.arange(0, 8)`, and add the 8 of a word with "
        "`tl.sum(..., axis=2)`; store the `B0 × B1 // 8` words at `z_ptr + r * (N1 // 8) + w`.",
    ),
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    likely_mistakes=(
        Mistake("the nibbles are in reverse order: value 8w + n goes to nibble n, bits 4n … 4n + 3 (low nibble "
                "first), so shift it by 4 * n", mistakes.pack_high_nibble_first),
        Mistake("each value is stored as its own 4-bit pattern, v & 0xF; the statement stores v + 8 (offset "
                "binary): q = (x + 8) & 0xF", mistakes.pack_without_offset),
        Mistake("x + 8 is shifted without & 0xF: the junk high nibble of each int8 spills into the next nibbles; "
                "keep only the low 4 bits, q = (x + 8) & 0xF", mistakes.pack_without_nibble_mask),
    ),
    perf_size={"N0": 8192, "N1": 8192, "B0": 16, "B1": 256},
    speed_goal=SpeedGoal(roofline=0.6, levers=(
        "each program packs a tile wide along N0 (B1 of 256 or more words), so loads of the eight nibbles and"
        " the store of the packed words are full vectors; shifts and ORs in registers, one store per word")),
    no_library=NO_SUCH_OP.format(what=(
        "packing int4 values into int32 words: torch's own packing for its int4 matmul "
        "(_convert_weight_to_int4pack) writes a tiled layout, not these words")),
)
