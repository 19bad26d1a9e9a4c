"""Puzzle 24 (seeded dropout): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl
from kernel_flags import with_flags

# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def _scaled(v, factor):
    return (v.to(tl.bfloat16) * factor).to(tl.float32)


@triton.jit
def dropout_through_a_bf16_helper(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, _scaled(x, 1 / (1 - p)), 0.0), mask=cols < N0)


@triton.jit
def dropout_saying_float16_in_a_comment(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)  # the first half of a float16 row? no: float32 throughout
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_with(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr, SCALE: tl.constexpr):
    """SCALE: 0 x / (1 - p), 1 x * (1 - p), 2 x / p."""
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    if SCALE == 1:
        kept = x * (1 - p)
    elif SCALE == 2:
        kept = x / p
    else:
        kept = x / (1 - p)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, kept, 0.0), mask=cols < N0)


def dropout(**slip):
    return with_flags(dropout_with, {"SCALE": 0}, **slip)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def dropout_flat_offsets(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), row * N0 + cols)  # the flat index
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_block_offsets(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), tl.arange(0, B0))  # the lane, not the column
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_first_seed(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr), cols)  # seeds[0] for every row
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_one_seed_flat(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    flat = row * N0 + cols
    x = tl.load(x_ptr + flat, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr), flat)  # the 1-D kernel's draw, over the matrix
    tl.store(z_ptr + flat, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_keep_below(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r < p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_not_rescaled(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x, 0.0), mask=cols < N0)


@triton.jit
def dropout_no_mask(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0))


@triton.jit
def dropout_multiplied_by_inverse(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    """Right in another style: offsets in int64, the scale as one reciprocal multiplied in."""
    row = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0).to(tl.int64) * B0 + tl.arange(0, B0)
    keep_scale = 1.0 / (1.0 - p)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    tl.store(z_ptr + row * N0 + cols, x * tl.where(r > p, keep_scale, 0.0), mask=cols < N0)


CORRECT = (dropout_multiplied_by_inverse,)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (dropout_with,)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def dropout_lanes_strided(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    """Right, uncoalesced: lane k takes column 17 k mod B0 of the block (a permutation of it)."""
    row = tl.program_id(1)
    lane = tl.arange(0, B0)
    cols = tl.program_id(0) * B0 + (lane * 17) % B0
    in_row = cols < N0
    x = tl.load(x_ptr + row * N0 + cols, mask=in_row, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=in_row)


SLOW = (dropout_lanes_strided,)
