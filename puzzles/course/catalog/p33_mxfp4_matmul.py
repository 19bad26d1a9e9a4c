"""Puzzle 33: a block-scaled MXFP4 matmul (e2m1 weights packed two to a byte along K, one e8m0 scale per 32)."""

import torch
from jaxtyping import Float16, Float32, UInt8
from torch import Tensor

from puzzles.course import mistakes_mxfp4 as slips
from puzzles.course import mxfp4  # the format: its e2m1 table, the nibbles' order, the quantizer
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.library_ops import mxfp4_library
from puzzles.course.puzzle import FastReference, Mistake, Puzzle, SpeedGoal, TritonFeature, cdiv
from puzzles.running.interpreter_hooks import interprets_dot_scaled


def mxfp4_matmul_spec(x: Float16[Tensor, "M K"], w: UInt8[Tensor, "K//2 N"],
                      scale: UInt8[Tensor, "K//32 N"]) -> Float32[Tensor, "M N"]:
    """z = x @ W, W[k, n] = e2m1(nibble k % 2 of w[k // 2, n]) * 2^(scale[k // 32, n] - 127), summed in float32"""
    codes = mxfp4.nibbles_along_k(w)  # K × N, 0..15: row 2j the low nibble of w[j], row 2j + 1 the high one
    values = mxfp4.E2M1_VALUES.to(w.device)[codes.long()]  # the 16-entry table: 0, .5, 1, 1.5, 2, 3, 4, 6, then negated
    block_scale = torch.exp2(scale.float() - 127).repeat_interleave(32, dim=0)  # K × N: each row's block's
    return x.float() @ (values * block_scale)


PUZZLE = Puzzle(
    number=33,
    slug="mxfp4_matmul",
    title="Block-scaled MXFP4 matmul",
    kernel_name="mxfp4_matmul_kernel",
    spec=mxfp4_matmul_spec,
    statement=r"""
Today's 4-bit format: **MXFP4**, the OCP Microscaling format that gpt-oss ships its weights in and that
Blackwell's tensor cores read natively. Puzzles 13-18 stored integers (`q − zero`, times a float16 scale per
group); MXFP4 stores tiny *floats*, and a power of two per block.

`z = x @ W` with `x` float16 `M × K` and `W` `K × N` stored as two uint8 tensors:

* `w`, `K/2 × N`: each byte holds two **e2m1** codes of one column, **packed along `K`** as `qweight` was in
  puzzle 14: row `2j` is the **low** nibble of `w[j, n]`, row `2j + 1` the high one.
* `scale`, `K/32 × N`: one **e8m0** exponent per block of 32 consecutive rows of `K` and per column; the block's
  multiplier is $2^{s - 127}$ (`255` means NaN in the format; the quantizer never writes it).

An e2m1 code is 4 bits, sign · exponent (2 bits, bias 1) · mantissa (1 bit); exponent 0 is subnormal:

| code | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 |
|---|---|---|---|---|---|---|---|---|
| value | 0 | 0.5 | 1 | 1.5 | 2 | 3 | 4 | 6 |

and codes `8 … 15` are the same values negated (bit 3 is the sign). So

$$W_{k,n} = \mathrm{e2m1}\big((w_{\lfloor k/2\rfloor,n} \gg 4\,(k \bmod 2))\ \&\ \mathtt{0xF}\big)
\cdot 2^{\,\mathrm{scale}_{\lfloor k/32\rfloor,n} - 127},\qquad z_{m,n} = \sum_k x_{m,k}\, W_{k,n}$$

in float32 (`z` is float32). Every `W` value is an e2m1 value times a power of two, so it is exact in float16 for
the scales here: decode, multiply by the block's scale, convert to float16 and `tl.dot` with a float32
accumulator; the grader's weights come from the quantizer in `puzzles/course/mxfp4.py` (each block's scale
$2^{\lfloor \log_2 \max|v| \rfloor - 2}$, values rounded to the nearest e2m1, ties to even).

**The kernel.** Grid `(cdiv(M, BM), cdiv(N, BN))`; each program walks `K` in chunks of `BK` as in puzzle 18
(without the split), unpacks and decodes its `BK × BN` weights in registers and multiplies. `K` is a multiple of
32 (whole blocks; so of 2, whole bytes) but need not be a multiple of `BK`; `M` and `N` need not be multiples of
`BM`, `BN`.

**Where 4 bits pay.** The speed size is `M = 16` tokens against an `8192 × 8192` layer: 32 MiB of packed weights
and 2 MiB of scales for 2.1 GFLOP, so reading the weights sets the time (about 7.5 µs at an H200's 4.8 TB/s; the
FLOPs take 2 µs), and reading a quarter of float16's bytes is the whole gain. At `M = 128` the same layer is
17 GFLOP, past what the tensor cores do in the time its bytes take: the bytes saved no longer set the time. Hopper
has no MXFP4 instruction, so a user there dequantizes to float16 and calls `torch.mm` (cuBLAS), writing and
re-reading the four-times-larger float16 weights each call: that, and `torch.compile` of the spec, are the bar.

**`tl.dot_scaled`.** Triton has one call for all of this: `tl.dot_scaled(x, None, "fp16", w_tile, scale_tile,
"e2m1", acc)` takes the packed `BK/2 × BN` bytes as they are, with the same low-nibble-first order, but its
right-hand scales **`BN × BK/32`**, transposed from this puzzle's `K/32 × N` (load them with the offsets swapped:
`scale_ptr + (k0 // 32 + b)[None, :] * N + n[:, None]`). Triton's interpreter runs it from 3.8 on; on an older
one the grader says so instead of running it. On Hopper (an H100 or H200) there is no MXFP4 tensor-core
instruction: the compiler decodes to float16 for you, much as your kernel does; for an A100 (sm_80) Triton's code
for it does not assemble (3.7 to 3.9), so the grader compiles a kernel that calls it for sm_90 only.
""",
    sizes=(
        {"M": 20, "N": 40, "K": 96, "BM": 16, "BN": 32, "BK": 64},  # K = 1.5 chunks: a half-masked last chunk
        {"M": 16, "N": 32, "K": 64, "BM": 16, "BN": 32, "BK": 32},  # whole tiles, one block per chunk
        {"M": 5, "N": 24, "K": 128, "BM": 16, "BN": 16, "BK": 64},  # a few tokens: 5 of a 16-row tile
        {"M": 33, "N": 72, "K": 160, "BM": 32, "BN": 32, "BK": 64},
    ),
    hints=(
        "Start from puzzle 18 without the split: `m`, `n` from the program ids, `for k0 in range(0, K, BK)`, a "
        "masked float16 `x` tile, and a `BK × BN` float16 `w` tile built in registers for `acc += tl.dot(x, w)`.",
        "Row `k` of the chunk: byte `w_ptr + (k // 2)[:, None] * N + n[None, :]`, code "
        "`(byte >> ((k % 2) * 4)[:, None]) & 0xF`; scale `scale_ptr + (k // 32)[:, None] * N + n[None, :]`.",
        "Decode: exponent `e = (code >> 1) & 3`, mantissa `m = code & 1`; magnitude `0.5 * m` where `e == 0`, else "
        "`2^(e - 1) * (1 + m / 2)`; negate where `code & 8`. Multiply by `tl.exp2(s.to(tl.float32) - 127.0)` and "
        "convert to float16.",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"])),
    draw_inputs=mxfp4.graded_weights,
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    # Only a kernel that calls tl.dot_scaled needs it; the decode-and-tl.dot path runs on every supported Triton.
    needs_triton=TritonFeature("tl.dot_scaled", "3.8", interprets_dot_scaled, call="dot_scaled",
                               compiles_from_sm=90),
    likely_mistakes=(
        Mistake("the nibbles are swapped: row 2j is the LOW nibble of byte j (byte & 0xF) and row 2j + 1 the high "
                "one (byte >> 4), as in puzzle 14", slips.nibbles_swapped),
        Mistake("the scale is taken as 2^s: e8m0 has a bias of 127, the multiplier is 2^(s − 127) (2^s overflows "
                "float16)", slips.scale_without_bias),
        Mistake("the scales are read as if stored N × K/32 (n · K/32 + k // 32, tl.dot_scaled's layout); here they "
                "are K/32 × N: scale_ptr + (k // 32) * N + n", slips.scales_read_as_n_by_blocks),
        Mistake("the block of row k is taken as its byte row's, (k // 2) // 32: a block is 32 values, 16 bytes; "
                "use k // 32", slips.scale_per_32_bytes),
        Mistake("the sign bit is ignored: bit 3 of the code negates the value (codes 8 … 15 are −0 … −6)",
                slips.sign_ignored),
        Mistake("the nibbles are read as int4 (nibble − 8, puzzle 14's offset binary); an e2m1 code is a tiny "
                "float: sign bit 3, exponent bits 2-1, mantissa bit 0", slips.nibbles_as_int4),
        Mistake("exponent 0 is decoded as a normal number, 2^(e − 1) · (1 + m/2): it is subnormal, 0 and 0.5",
                slips.subnormals_as_normal),
    ),
    # M = 16 tokens (decode with a small batch), N = K = 8192: 32 MiB of packed weights and 2 MiB of scales against
    # 2.1 GFLOP, so the weights' bytes bound it (about 7.5 us at an H200's 4.8 TB/s, the FLOPs 2 us): where 4-bit
    # pays. At M = 128 the same layer is 17 GFLOP, past an H200's float16 ridge (about 200 FLOP per byte here 430):
    # compute-bound, where the bytes saved no longer set the time.
    perf_size={"M": 16, "N": 8192, "K": 8192, "BM": 16, "BN": 64, "BK": 256},
    fast_reference=FastReference(
        "Five changes. Per block of 32 rows of `K`: its `16 × BN` bytes are loaded once, where the teaching kernel "
        "loads each byte twice (once per nibble) and each scale 32 times: the low nibbles are rows `2j`, the high "
        "ones rows `2j + 1`, and a sum over `k` does not care about its order, so the block adds "
        "`tl.dot(x_even, low) + tl.dot(x_odd, high)` with `x_even, x_odd = tl.split(tl.reshape(x, (BM, 16, 2)))`. "
        "Its 32 rows share one scale per column, so the dots take the bare e2m1 values and their `BM × BN` sum is "
        "multiplied by the block's `2^(s − 127)`: once per output, not once per weight. A code is decoded by "
        "placing its bits in a float16 (exponent and mantissa at bits 11-9, sign at 15: the value times 2^−14, "
        "exponent 0 landing on float16's subnormals) and multiplying by 2^14, exact, with no select and no "
        "float32 arithmetic. There is no mask along `K`: a block past `K` reads the last block again and is "
        "multiplied by 0. And each trip of the loop takes `2 × BK` rows, with four trips' loads in flight "
        "(`tl.range(0, K, 2 * BK, num_stages=4)`): with only `N / BN` = 128 programs, about one per "
        "multiprocessor, the bytes each keeps in flight set the speed. On an H200 it takes 82 us against the "
        "teaching kernel's 208 and torch.compile's 274; without the last change 136, with either half of it "
        "129 and 126 (benchmarks/results/nvidia-h200/p33_variants.md). Launched with `num_warps=8` the one-chunk "
        "kernel took 73 us, and `tl.dot_scaled` (the compiler's own decode, Triton 3.8+) 80."),
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    # The bar: the fastest of eager torch, torch.compile(spec) and the library's dequantize-then-torch.mm, on an H200
    # torch.compile's 271 us. Twice its speed: the fast reference took 81 us (3.3x), tl.dot_scaled 80, while decoding
    # every weight in registers as the teaching kernel does took 206 (1.3x: not yet the goal). No roofline part: 81 us
    # is 11% of the 9.2 us floor (compile_baseline.md, p33_variants.md).
    speed_goal=SpeedGoal(vs_compile=2.0, levers=(
        "load each block's bytes once and dot its low nibbles with x's even columns and its high ones with the odd "
        "columns (or split them into BK x BN codes, puzzle 14's fast reference), apply each block's scale to its "
        "dot's BM x BN sum rather than to its 32 x BN weights, decode with few integer operations (the code's bits "
        "placed in a float16), two chunks of K a trip with tl.range(..., num_stages=4) so that each of the N/BN "
        "programs keeps enough bytes in flight")),
    library=LibraryBaseline(
        "dequantize to float16, then torch.mm (cuBLAS)", mxfp4_library, dtype="float16",
        why="Hopper has no MXFP4 tensor-core instruction and torch no MXFP4 matmul for it: a user keeps the weights "
            "in MXFP4 (a quarter of the memory) and dequantizes them to float16 before each torch.mm, as "
            "frameworks' fallbacks do; the float16 product is rounded to float16 once"),
)
