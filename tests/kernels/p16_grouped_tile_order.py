"""Puzzle 16 (grouped tile order): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def grouped_order_triton_tutorial(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    tl.store(z_ptr + pid * 2 + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, pid_m, pid_n))


@triton.jit
def grouped_order_swizzle2d(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    i = pid // tiles_n
    j = pid % tiles_n
    i2, j2 = tl.swizzle2d(i, j, tiles_m, tiles_n, GROUP_M)
    tl.store(z_ptr + 2 * pid, i2)
    tl.store(z_ptr + 2 * pid + 1, j2)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def grouped_order_kernel_position_from_pid(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """Puzzle 16 taking the tile row from `pid % rows` instead of the position in the band, `pid % (GROUP_M * TN)`:
    the same in every full band (GROUP_M divides the band's first pid) and in a short band of one row."""
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    per_band = GROUP_M * tiles_n
    first_m = (pid // per_band) * GROUP_M
    rows = tl.minimum(tl.cdiv(M, BM) - first_m, GROUP_M)
    tl.store(z_ptr + 2 * pid, first_m + pid % rows)
    tl.store(z_ptr + 2 * pid + 1, (pid % per_band) // rows)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def grouped_order_row_major(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    tl.store(z_ptr + 2 * pid, pid // tiles_n)  # ignores GROUP_M: the plain row-major order
    tl.store(z_ptr + 2 * pid + 1, pid % tiles_n)


@triton.jit
def grouped_order_full_last_band(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                                 GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    per_band = GROUP_M * tl.cdiv(N, BN)
    first_m = (pid // per_band) * GROUP_M
    i = pid % per_band
    tl.store(z_ptr + 2 * pid, first_m + i % GROUP_M)  # the last band may have fewer than GROUP_M rows
    tl.store(z_ptr + 2 * pid + 1, i // GROUP_M)


CORRECT = (grouped_order_triton_tutorial, grouped_order_swizzle2d)
