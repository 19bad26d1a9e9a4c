"""Puzzle 33 reference: x @ W with W in MXFP4, unpacked and decoded in registers (arithmetic e2m1 decode, the block
scale as exp2), multiplied with tl.dot in float16 into a float32 accumulator. Runs on every supported Triton's
interpreter (tl.dot_scaled, which does all of this in one call, needs 3.8's: tests/kernels/p33_mxfp4_matmul.py)."""

import triton
import triton.language as tl


@triton.jit
def mxfp4_matmul_kernel(x_ptr, w_ptr, scale_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr):
    # BEGIN SOLUTION
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m_in, n_in = m < M, n < N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        k_in = k < K
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=m_in[:, None] & k_in[None, :], other=0.0)
        w_in = k_in[:, None] & n_in[None, :]
        # Row k is in byte row k // 2: the low nibble for an even k, the high one for an odd k.
        packed = tl.load(w_ptr + (k // 2)[:, None] * N + n[None, :], mask=w_in, other=0)
        code = (packed >> ((k % 2) * 4)[:, None]) & 0xF
        exponent = (code >> 1) & 0x3
        mantissa = (code & 0x1).to(tl.float32)
        # e2m1: exponent 0 is subnormal (0 or 0.5); else 2^(exponent - 1) * (1 + mantissa / 2).
        magnitude = tl.where(exponent == 0, mantissa * 0.5,
                             (1 << exponent).to(tl.float32) * 0.5 * (1.0 + mantissa * 0.5))
        value = tl.where((code & 0x8) != 0, -magnitude, magnitude)
        # One e8m0 scale per 32 rows of K: 2^(s - 127).
        s = tl.load(scale_ptr + (k // 32)[:, None] * N + n[None, :], mask=w_in, other=127)
        w = (value * tl.exp2(s.to(tl.float32) - 127.0)).to(tl.float16)  # exact: e2m1 times a power of two
        acc += tl.dot(x, w)
    tl.store(z_ptr + m[:, None] * N + n[None, :], acc, mask=m_in[:, None] & n_in[None, :])
    # END SOLUTION
