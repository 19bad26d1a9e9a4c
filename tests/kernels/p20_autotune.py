"""Puzzle 20 (autotune): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.autotune(configs=[triton.Config({"B0": 64}), triton.Config({"B0": 256})], key=["N0"])
@triton.jit
def silu_constexpr_n(x_ptr, y_ptr, z_ptr, N0: tl.constexpr, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(z_ptr + offs, tl.fdiv(x, 1.0 + tl.math.exp(-x)) * tl.load(y_ptr + offs, mask=m), mask=m)


LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.autotune(configs=[triton.Config({"B0": 64}), triton.Config({"B0": 256}, num_warps=4, num_stages=2)], key=["N0"])
@triton.jit
def silu_mul_exp(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(z_ptr + offs, x / (1.0 + tl.exp(-x)) * y, mask=m)


@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=4), triton.Config({"B0": 512}, num_warps=8)], key=["N0"])
@triton.jit
def silu_mul_grid_stride(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    if pid * B0 >= N0:
        return
    offs = pid * B0 + tl.arange(0, B0)
    m = offs < N0
    x = tl.load(x_ptr + offs, mask=m)
    sig = 1.0 / (1.0 + tl.exp2(-x * LOG2E))
    tl.store(z_ptr + offs, x * sig * tl.load(y_ptr + offs, mask=m), mask=m)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def _silu_mul_exp_form(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 20 as x / (1 + exp(-x)) * y (not the reference's x * sigmoid(x) * y), its products in DTYPE."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    gate = (x / (1.0 + tl.exp(-x))).to(DTYPE)  # tl.exp takes float32 only: the rest is where float16 creeps in
    tl.store(z_ptr + offsets, (gate * y.to(DTYPE)).to(tl.float32), mask=mask)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 256}, num_warps=4)],
                 key=["N0"])
@triton.jit
def silu_mul_kernel_float16(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul_exp_form(x_ptr, y_ptr, z_ptr, N0, B0, tl.float16)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 256}, num_warps=4)],
                 key=["N0"])
@triton.jit
def silu_mul_kernel_divided(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul_exp_form(x_ptr, y_ptr, z_ptr, N0, B0, tl.float32)



# -- what a graded file and a kernel's body may use -----------------------------------------------------------------

@triton.jit
def _silu_mul_at(x_ptr, y_ptr, z_ptr, offsets, N0):
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x * tl.sigmoid(x) * tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_literal_block(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, 64), N0)  # right only where B0 is 64


@triton.autotune(configs=[triton.Config({"B0": 256}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_literal_stride(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * 256 + tl.arange(0, B0), N0)  # right only where B0 is 256


@triton.autotune(configs=[triton.Config({"B0": 64, "UNROLL": 1}, num_warps=1),
                          triton.Config({"B0": 512, "UNROLL": 1}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_extra_meta(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, UNROLL: tl.constexpr):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.heuristics({"EVEN": lambda args: args["N0"] % args["B0"] == 0})
@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_heuristics_above(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, EVEN: tl.constexpr):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_sizes_reordered(x_ptr, y_ptr, z_ptr, B0: tl.constexpr, N0):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 128}, num_warps=4),
                          triton.Config({"B0": 256}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_wrong_second_config(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul_at(x_ptr, y_ptr, z_ptr, tl.program_id(0) * 64 + tl.arange(0, B0), N0)  # right only where B0 is 64



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.autotune(configs=[triton.Config({"B0": 32}, num_warps=1), triton.Config({"B0": 128}, num_warps=2),
                          triton.Config({"B0": 1024}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_one_config(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * 128 + tl.arange(0, B0)  # right only where B0 is 128
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x * tl.sigmoid(x) * y, mask=mask)


@triton.jit
def silu_mul_kernel_not_autotuned(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x * tl.sigmoid(x) * tl.load(y_ptr + offsets, mask=mask), mask=mask)


CORRECT = (silu_constexpr_n, silu_mul_exp, silu_mul_grid_stride)

# Kernels whose wrong signature is the point: the signature step must refuse them.
SIGNATURE_MISTAKES = {
    "silu_mul_kernel_sizes_reordered",
}
