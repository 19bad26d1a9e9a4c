"""Puzzle 33, fast reference: each byte loaded once, its two nibbles multiplied by the even and the odd columns of
x, the block's scale applied after the dot, the e2m1 codes decoded by placing their bits in a float16, and two
chunks of K a trip in a loop pipelined four deep.

Same signature, grid and result as solutions/p33_mxfp4_matmul.py. On an H200 (Triton 3.6) at the perf size:
82.4 us against the teaching kernel's 208 and torch.compile's 274 (benchmarks/results/nvidia-h200/p33_variants.md,
its row "fast, 2 x BK a trip, 4 stages"; the row "fast reference" there is this kernel with one chunk a trip and
3 stages, 136 us). What changes, per block of 32 rows of K:
- The block's 16 x BN bytes are loaded once (the teaching kernel loads each byte twice, once per nibble, and each
  scale 32 times). Row 2j of W is the low nibble of byte row j and row 2j + 1 the high one, and a sum over k does not
  care about its order: z += x[:, even k] @ low + x[:, odd k] @ high, two tl.dot on 16 rows each.
- The block's 32 rows share one scale per column, so x @ (e2m1 * 2^(s - 127)) = (x @ e2m1) * 2^(s - 127): the dots
  take the bare e2m1 values and their BM x BN sum is scaled once, not every one of the 32 x BN weights.
- Decoding is three integer operations: the code's exponent and mantissa bits at bits 9-11 of a float16 and its sign
  at bit 15 are its value times 2^-14 (exponent 0 falls on float16's subnormals, 0 and 2^-15: the e2m1 subnormals
  0 and 0.5 scaled alike); times 2^14 it is exact, with no select and no float32 arithmetic.
- Each trip of the loop takes 2 x BK rows of K and the loop keeps 4 trips' loads in flight (tl.range num_stages=4):
  with N / BN = 128 programs, about one per multiprocessor, the bytes each has in flight set the speed (either
  alone: 129 and 126 us; together 82).
- No masks along K: a block past K (K need not be a multiple of the trip) reads the last block again, and its
  products are multiplied by 0. Rows of x past M read row M - 1; their sums are never stored.
Launched with num_warps=8 the same kernel took 73 us at one chunk a trip; tl.dot_scaled, the compiler's own
decode, 80 (Triton 3.8+ under the interpreter).
"""

import triton
import triton.language as tl


@triton.jit
def mxfp4_matmul_kernel(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    n_in = n < N
    byte_row = tl.arange(0, 16)  # a block's 32 rows of K are 16 rows of bytes
    w_block = w_ptr + byte_row[:, None] * N + n[None, :]
    w_in = tl.broadcast_to(n_in[None, :], (16, BN))  # every byte row of a block is inside K (see kb)
    x_block = x_ptr + tl.minimum(m, M - 1)[:, None] * K + tl.arange(0, 32)[None, :]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in tl.range(0, K, 2 * BK, num_stages=4):  # two chunks a trip, four trips in flight
        for b in tl.static_range(2 * BK // 32):
            kb = tl.minimum(k0 + 32 * b, K - 32)  # a whole block: K is a multiple of 32
            packed = tl.load(w_block + (kb // 2) * N, mask=w_in, other=0).to(tl.uint16)
            x_even, x_odd = tl.split(tl.reshape(tl.load(x_block + kb), (BM, 16, 2)))  # columns kb + 2i, kb + 2i + 1
            # Code bits (sign, e1, e0, m) -> float16 bits 15 and 11-9: the e2m1 value times 2^-14, exact.
            low = (((packed & 0x7) << 9) | ((packed & 0x8) << 12)).to(tl.float16, bitcast=True) * 16384.0
            high = (((packed & 0x70) << 5) | ((packed & 0x80) << 8)).to(tl.float16, bitcast=True) * 16384.0
            block_sum = tl.dot(x_odd, high, tl.dot(x_even, low))
            s = tl.load(scale_ptr + (kb // 32) * N + n, mask=n_in, other=127)
            multiplier = tl.where(k0 + 32 * b < K, tl.exp2(s.to(tl.float32) - 127.0), 0.0)  # 0: a block past K
            acc += block_sum * multiplier[None, :]
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m < M)[:, None] & n_in[None, :])
