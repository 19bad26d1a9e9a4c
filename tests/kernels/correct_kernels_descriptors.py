"""Correct kernels that address their blocks through block pointers or tensor descriptors (red-team round 5, and
issue 46): the grader must pass every one where the installed Triton has the API it uses.

Triton 3.9 removed block pointers (`tl.make_block_ptr` raises NotImplementedError, `tl.advance` is gone) in
favour of tensor descriptors (`tl.make_tensor_descriptor`), which Triton's interpreter runs from 3.5 on. A
descriptor clips its block at the tensor's shape (no mask), and needs every stride but the last to be a multiple
of 16 bytes: where a puzzle's sizes include rows of an odd length, the variants below read or write that tensor
through pointers. tests/grading/test_handwritten_kernels.py grades them, each skipped (with the reason) on a Triton
without its API."""

from __future__ import annotations

import triton
import triton.language as tl

# -- block pointers (Triton 3.8 and earlier) ----------------------------------------------------------------

@triton.jit
def add_block_pointer(x_ptr, z_ptr, N0, B0: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    zb = tl.make_block_ptr(z_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    tl.store(zb, tl.load(xb) + tl.full([B0], 10.0, tl.float32))


@triton.jit
def add_mask2_block_pointer(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(x_ptr, shape=(N0,), strides=(1,), offsets=(pid * B0,), block_shape=(B0,), order=(0,))
    zb = tl.make_block_ptr(z_ptr, shape=(N0,), strides=(1,), offsets=(pid * B0,), block_shape=(B0,), order=(0,))
    x = tl.load(xb, boundary_check=(0,), padding_option="zero")
    tl.store(zb, x + 10.0, boundary_check=(0,))


@triton.jit
def add_vec_block_block_pointers(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    pid_0, pid_1 = tl.program_id(0), tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, (N0,), (1,), (pid_0 * B0,), (B0,), (0,))
    yb = tl.make_block_ptr(y_ptr, (N1,), (1,), (pid_1 * B1,), (B1,), (0,))
    zb = tl.make_block_ptr(z_ptr, (N1, N0), (N0, 1), (pid_1 * B1, pid_0 * B0), (B1, B0), (1, 0))
    x = tl.load(xb, boundary_check=(0,))
    y = tl.load(yb, boundary_check=(0,))
    tl.store(zb, y[:, None] + x[None, :], boundary_check=(0, 1))


@triton.jit
def dot_block_pointers_ieee(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    b = tl.program_id(2)
    xb = tl.make_block_ptr(
        x_ptr + b * N0 * MID,
        shape=(N0, MID),
        strides=(MID, 1),
        offsets=(tl.program_id(0) * B0, 0),
        block_shape=(B0, B_MID),
        order=(1, 0),
    )
    yb = tl.make_block_ptr(
        y_ptr + b * MID * N1,
        shape=(MID, N1),
        strides=(N1, 1),
        offsets=(0, tl.program_id(1) * B1),
        block_shape=(B_MID, B1),
        order=(1, 0),
    )
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for _ in range(0, tl.cdiv(MID, B_MID)):
        x = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
        y = tl.load(yb, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(x, y, input_precision="ieee")
        xb = tl.advance(xb, (0, B_MID))
        yb = tl.advance(yb, (B_MID, 0))
    zb = tl.make_block_ptr(
        z_ptr + b * N0 * N1,
        shape=(N0, N1),
        strides=(N1, 1),
        offsets=(tl.program_id(0) * B0, tl.program_id(1) * B1),
        block_shape=(B0, B1),
        order=(1, 0),
    )
    tl.store(zb, acc.to(z_ptr.dtype.element_ty), boundary_check=(0, 1))


# -- tensor descriptors --------------------------------------------------------------------------------------
@triton.jit
def add_descriptor(x_ptr, z_ptr, N0, B0: tl.constexpr):
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z.store([0], x.load([0]) + 10.0)


@triton.jit
def add_mask2_descriptor(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Wrong on a GPU with TMA at N0 = 37: the store writes the last 16-byte chunk whole, 12 bytes past z."""
    start = tl.program_id(0) * B0
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z.store([start], x.load([start]) + 10.0)  # the descriptor drops the lanes past N0, but in 16-byte chunks


@triton.jit
def add_mask2_descriptor_load(x_ptr, z_ptr, N0, B0: tl.constexpr):
    start = tl.program_id(0) * B0
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    offsets = start + tl.arange(0, B0)
    tl.store(z_ptr + offsets, x.load([start]) + 10.0, mask=offsets < N0)  # a load's padding is only read


@triton.jit
def add_vec_block_descriptors(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0]).load([i0])
    y = tl.make_tensor_descriptor(y_ptr, shape=[N1], strides=[1], block_shape=[B1]).load([j0])
    # z's rows may hold an odd number of floats (N0 = 37), which no descriptor can stride over: pointers.
    i, j = i0 + tl.arange(0, B0), j0 + tl.arange(0, B1)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], y[:, None] + x[None, :], mask=(j[:, None] < N1) & (i[None, :] < N0))


@triton.jit
def dot_descriptors(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    b, i0, j0 = tl.program_id(2), tl.program_id(0) * B0, tl.program_id(1) * B1
    # x's rows hold MID floats, odd at MID = 33: x is read through pointers, y and z through descriptors.
    y = tl.make_tensor_descriptor(y_ptr, shape=[N2, MID, N1], strides=[MID * N1, N1, 1], block_shape=[1, B_MID, B1])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N2, N0, N1], strides=[N0 * N1, N1, 1], block_shape=[1, B0, B1])
    i = i0 + tl.arange(0, B0)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        a = tl.load(x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID),
                    other=0.0)
        acc = tl.dot(a, y.load([b, k0, j0]).reshape(B_MID, B1), acc, input_precision="ieee")
    z.store([b, i0, j0], acc.reshape(1, B0, B1))


# By puzzle number.
BLOCK_POINTERS = {1: (add_block_pointer,), 2: (add_mask2_block_pointer,), 4: (add_vec_block_block_pointers,),
                  11: (dot_block_pointers_ieee,)}
DESCRIPTORS = {1: (add_descriptor,), 2: (add_mask2_descriptor_load,), 4: (add_vec_block_descriptors,),
               11: (dot_descriptors,)}
