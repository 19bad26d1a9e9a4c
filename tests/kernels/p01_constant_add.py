"""Puzzle 1 (constant add): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers through block pointers or tensor descriptors -----------------------------------------------------

@triton.jit
def add_block_pointer(x_ptr, z_ptr, N0, B0: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    zb = tl.make_block_ptr(z_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    tl.store(zb, tl.load(xb) + tl.full([B0], 10.0, tl.float32))


# -- tensor descriptors --------------------------------------------------------------------------------------
@triton.jit
def add_descriptor(x_ptr, z_ptr, N0, B0: tl.constexpr):
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z.store([0], x.load([0]) + 10.0)



# -- right answers in other styles than the reference ---------------------------------------------------------------

TEN: tl.constexpr = tl.constexpr(10.0)  # a constexpr global, as Triton requires of a kernel's globals


@triton.jit
def plus_ten(x):
    return x + TEN


@triton.jit
def add_community(x_ptr, z_ptr, N0, B0: tl.constexpr):
    range = tl.arange(0, B0)  # noqa: A001 - the community solution shadows the builtin
    x = tl.load(x_ptr + range)
    z = x + 10
    tl.store(z_ptr + range, z)


@triton.jit
def add_helper_and_hints(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, B0), B0), B0)
    mask = offs < N0
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.debug_barrier()
    tl.store(z_ptr + offs, plus_ten(x).to(z_ptr.dtype.element_ty), mask=mask)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def add_kernel_swapped_pointers(z_ptr, x_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def add_returning_its_result(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    return tl.load(x_ptr + offsets) + 10.0  # returned, never stored


CORRECT = (add_community, add_helper_and_hints)
CORRECT_WITH_BLOCK_POINTERS = (add_block_pointer,)
CORRECT_WITH_DESCRIPTORS = (add_descriptor,)


def add_kernel_not_jitted(x_ptr, z_ptr, N0, B0):
    """Puzzle 1 without @triton.jit: the grader says what is missing."""
    pass

# Kernels whose wrong signature is the point: the signature step must refuse them.
SIGNATURE_MISTAKES = {
    "add_kernel_swapped_pointers",
}

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (plus_ten,)
