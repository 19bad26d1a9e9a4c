"""Puzzle 11 (batched matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

from solutions.p11_batched_matmul import dot_kernel as _dot

# -- right answers through block pointers or tensor descriptors -----------------------------------------------------

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



# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def dot_community(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    pid_0 = tl.program_id(0)
    pid_1 = tl.program_id(1)
    pid_2 = tl.program_id(2)
    off_i = pid_0 * B0 + tl.arange(0, B0)
    off_j = pid_1 * B1 + tl.arange(0, B1)
    off_z = pid_2 * B2 + tl.arange(0, B2)
    mask_i = off_i < N0
    mask_j = off_j < N1
    mask_z = off_z < N2
    z = tl.zeros((B2, B0, B1), dtype=tl.float32)
    for k in tl.range(0, MID, B_MID):
        off_k = k + tl.arange(0, B_MID)
        mask_k = off_k < MID
        x = tl.load(
            x_ptr + off_z[:, None, None] * N0 * MID + off_i[None, :, None] * MID + off_k[None, None, :],
            mask=mask_z[:, None, None] & mask_i[None, :, None] & mask_k[None, None, :],
            other=0.0,
        )
        y = tl.load(
            y_ptr + off_z[:, None, None] * MID * N1 + off_k[None, :, None] * N1 + off_j[None, None, :],
            mask=mask_z[:, None, None] & mask_k[None, :, None] & mask_j[None, None, :],
            other=0.0,
        )
        z = tl.dot(x, y, z)
    tl.store(
        z_ptr + off_z[:, None, None] * N0 * N1 + off_i[None, :, None] * N1 + off_j[None, None, :],
        z,
        mask=mask_z[:, None, None] & mask_i[None, :, None] & mask_j[None, None, :],
    )


@triton.jit
def dot_pointer_increments(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    kk = tl.arange(0, B_MID)
    xs = x_ptr + tl.program_id(2) * N0 * MID + i[:, None] * MID + kk[None, :]
    ys = y_ptr + tl.program_id(2) * MID * N1 + kk[:, None] * N1 + j[None, :]
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        x = tl.load(xs, mask=(i[:, None] < N0) & (kk[None, :] < MID - k0), other=0.0)
        y = tl.load(ys, mask=(kk[:, None] < MID - k0) & (j[None, :] < N1), other=0.0)
        acc = tl.dot(x, y, acc, allow_tf32=False)
        xs += B_MID
        ys += B_MID * N1
    tl.store(
        z_ptr + tl.program_id(2) * N0 * N1 + i[:, None] * N1 + j[None, :],
        acc,
        mask=(i[:, None] < N0) & (j[None, :] < N1),
    )


@triton.jit
def dot_transposed(
    x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    b = tl.program_id(2)
    acc = tl.zeros((B1, B0), dtype=tl.float32)  # z transposed
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(
            x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0
        )
        y = tl.load(
            y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0
        )
        acc += tl.dot(tl.trans(y), x.T)
    tl.store(z_ptr + b * N0 * N1 + i[None, :] * N1 + j[:, None], acc, mask=(i[None, :] < N0) & (j[:, None] < N1))



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def dot_to_last_index(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                      B_MID: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    b = tl.program_id(2)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID - 1, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID),
                    other=0.0)
        y = tl.load(y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + b * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))


@triton.jit
def dot_kernel_rows_of_16(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                          B2: tl.constexpr, B_MID: tl.constexpr):
    _dot(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, 16, B1, B2, B_MID)


@triton.jit
def dot_kernel_steps_by_b0(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                           B2: tl.constexpr, B_MID: tl.constexpr):
    """Puzzle 11 stepping MID by B0 while its chunks are B_MID wide: chunks overlap wherever B0 < B_MID."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    batch = tl.program_id(2)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B0):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + batch * N0 * MID + i[:, None] * MID + k[None, :],
                    mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_ptr + batch * MID * N1 + k[:, None] * N1 + j[None, :],
                    mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def matmul_setting_the_tile(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                            B2: tl.constexpr, B_MID: tl.constexpr):
    b = tl.program_id(2)
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID),
                    other=0.0)
        y = tl.load(y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1),
                    other=0.0)
        acc = tl.dot(x, y)  # = where += was meant
    tl.store(z_ptr + b * N0 * N1 + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))


@triton.jit
def matmul_with_the_batch_from_axis_0(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID, B0: tl.constexpr, B1: tl.constexpr,
                                      B2: tl.constexpr, B_MID: tl.constexpr):
    b = tl.program_id(0)  # the batch from axis 0, the rows from axis 2
    i = tl.program_id(2) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :], mask=(i[:, None] < N0) & (k[None, :] < MID),
                    other=0.0)
        y = tl.load(y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :], mask=(k[:, None] < MID) & (j[None, :] < N1),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(z_ptr + b * N0 * N1 + i[:, None] * N1 + j[None, :], acc,
             mask=(i[:, None] < N0) & (j[None, :] < N1) & (b < N2))



# -- bfloat16 computed as on a GPU ----------------------------------------------------------------------------------

@triton.jit
def dot_kernel_bf16(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID,
                    B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr):
    """Puzzle 11 with bfloat16 tiles into tl.dot, accumulated in float32."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    batch = tl.program_id(2) * B2
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + batch * N0 * MID + i[:, None] * MID + k[None, :],
                    mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_ptr + batch * MID * N1 + k[:, None] * N1 + j[None, :],
                    mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        acc = tl.dot(x.to(tl.bfloat16), y.to(tl.bfloat16), acc=acc)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc,
             mask=(i[:, None] < N0) & (j[None, :] < N1) & (batch < N2))


@triton.jit
def dot_kernel_bf16_swapped(x_ptr, y_ptr, z_ptr, N0, N1, N2, MID,
                            B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr, B_MID: tl.constexpr):
    """Wrong: y's tile read with x's row stride (MID where N1 belongs)."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    batch = tl.program_id(2) * B2
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        x = tl.load(x_ptr + batch * N0 * MID + i[:, None] * MID + k[None, :],
                    mask=(i[:, None] < N0) & (k[None, :] < MID), other=0.0)
        y = tl.load(y_ptr + batch * MID * N1 + j[None, :] * MID + k[:, None],
                    mask=(k[:, None] < MID) & (j[None, :] < N1), other=0.0)
        acc = tl.dot(x.to(tl.bfloat16), y.to(tl.bfloat16), acc=acc)
    tl.store(z_ptr + batch * N0 * N1 + i[:, None] * N1 + j[None, :], acc,
             mask=(i[:, None] < N0) & (j[None, :] < N1) & (batch < N2))


CORRECT = (dot_community, dot_pointer_increments, dot_transposed)
CORRECT_WITH_BLOCK_POINTERS = (dot_block_pointers_ieee,)
CORRECT_WITH_DESCRIPTORS = (dot_descriptors,)
