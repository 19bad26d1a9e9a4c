"""Puzzle 2 (constant add block): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import p01_constant_add as p01
import triton
import triton.language as tl
from triton.language.extra import libdevice

from .compiler import (  # noqa: F401
    HELPER_OFFSET,
    HELPERS,
    OFFSET,
    SETTINGS,
    add_mask2_kernel_asks_its_handle,
    add_mask2_kernel_asks_the_knobs,
    add_mask2_kernel_bad_helper,
    add_mask2_kernel_break,
    add_mask2_kernel_compares_functions,
    add_mask2_kernel_debugging,
    add_mask2_kernel_default_from_a_dict,
    add_mask2_kernel_element_index,
    add_mask2_kernel_fair_comparisons,
    add_mask2_kernel_global,
    add_mask2_kernel_good_helper,
    add_mask2_kernel_helper_asks_the_class,
    add_mask2_kernel_if_on_block,
    add_mask2_kernel_iterate_block,
    add_mask2_kernel_lambda,
    add_mask2_kernel_method_of_an_object,
    add_mask2_kernel_name_in_one_branch,
    add_mask2_kernel_nested_def,
    add_mask2_kernel_plain_function,
    add_mask2_kernel_reaches_a_frame,
    add_mask2_kernel_returns,
    add_mask2_kernel_tuple_loop,
    add_mask2_kernel_tuple_static_range,
)

# -- right answers through block pointers or tensor descriptors -----------------------------------------------------

@triton.jit
def add_mask2_block_pointer(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(x_ptr, shape=(N0,), strides=(1,), offsets=(pid * B0,), block_shape=(B0,), order=(0,))
    zb = tl.make_block_ptr(z_ptr, shape=(N0,), strides=(1,), offsets=(pid * B0,), block_shape=(B0,), order=(0,))
    x = tl.load(xb, boundary_check=(0,), padding_option="zero")
    tl.store(zb, x + 10.0, boundary_check=(0,))


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



# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def add_mask2_early_return(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= tl.cdiv(N0, B0):
        return
    off_x = pid * B0 + tl.arange(0, B0)
    mask = off_x < N0
    x = tl.load(x_ptr + off_x, mask=mask)
    tl.store(z_ptr + off_x, x + 10, mask=mask)


@triton.jit
def add_mask2_where(x_ptr, z_ptr, N0, B0: tl.constexpr):
    off = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = tl.where(off < N0, 1, 0) != 0
    x = tl.load(x_ptr + off, mask=mask, other=float("nan"))
    z = tl.where(mask, x + 10.0, 0.0)
    tl.store(z_ptr + off, z, mask=mask)


@triton.jit
def add_mask2_int64_offsets(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    off = pid * B0 + tl.arange(0, B0).to(tl.int64)
    x = tl.load(x_ptr + off, mask=off < N0, other=0.0)
    tl.store(z_ptr + off, tl.fma(x, 1.0, 10.0), mask=off < N0)


@triton.jit
def add_mask2_persistent(x_ptr, z_ptr, N0: int, B0: tl.constexpr):
    pid = tl.program_id(0)
    for start in range(pid * B0, N0, tl.num_programs(0) * B0):  # a grid-stride loop: one block per program here
        off = start + tl.arange(0, B0)
        x = tl.load(x_ptr + off, mask=off < N0, other=float("nan"))
        tl.store(z_ptr + off, x + 10.0, mask=off < N0)


@triton.jit
def add_constexpr_size(x_ptr, z_ptr, N0: tl.constexpr, B0: tl.constexpr):
    off = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.static_assert(B0 >= 8)
    tl.store(z_ptr + off, tl.load(x_ptr + off, mask=off < N0) + 10.0, mask=off < N0)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def add_mask2_kernel_no_mask(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)
    tl.store(z_ptr + offsets, x + 10.0)


@triton.jit
def add_mask2_kernel_hard_coded(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * 32 + tl.arange(0, 32)
    mask = offsets < 200
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_unwritten_tail(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < (N0 // B0) * B0  # drops the ragged last block
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_off_by_one(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = (tl.program_id(0) + 1) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)


@triton.jit
def add_mask2_kernel_raises(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0 + 1)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)


@triton.jit
def add_mask2_kernel_forever(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = 0
    while i < 1:
        i = i * 1


@triton.jit
def add_mask2_kernel_wrong_signature(x_ptr, z_ptr, N, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N) + 10.0, mask=offsets < N)


@triton.jit
def add_mask2_kernel_no_size(x_ptr, z_ptr, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)


@triton.jit
def add_mask2_kernel_no_output(x_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_writes_next_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Also stores x into the next program's block, which that program overwrites later (here)."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)
    following = offsets + B0
    tl.store(z_ptr + following, x, mask=following < N0)


@triton.jit
def add_mask2_kernel_writes_previous_block_again(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Also stores the previous block, with the same values: wasteful, but right in any order."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)
    previous = offsets - B0
    inside = (previous >= 0) & (previous < N0)
    tl.store(z_ptr + previous, tl.load(x_ptr + previous, mask=inside) + 10.0, mask=inside)


@triton.jit
def add_mask2_kernel_reads_previous_output(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Takes the 10 from the previous program's last output (z - x), which it may not have written yet."""
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    ten = 10.0
    if pid > 0:
        ten = tl.load(z_ptr + pid * B0 - 1) - tl.load(x_ptr + pid * B0 - 1)
    tl.store(z_ptr + offsets, x + ten, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_float16(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0).to(tl.float16)
    tl.store(z_ptr + offsets, (x + 10.0).to(tl.float32), mask=offsets < N0)


@triton.jit
def add_mask2_kernel_exchanges_into_next_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Writes x into the next program's block with an atomic, which that program's plain store overwrites."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    following = offsets + B0
    tl.atomic_xchg(z_ptr + following, x, mask=following < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)



# -- right-looking kernels that are wrong (red-team round 5) --------------------------------------------------------

@triton.jit
def add_reading_its_output(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < N0
    z = tl.load(z_ptr + offs, mask=mask, other=0.0)  # as if z started at zero
    tl.store(z_ptr + offs, z + tl.load(x_ptr + offs, mask=mask) + 10.0, mask=mask)


@triton.jit
def add_through_a_helper_module(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offs, mask=offs < N0)
    tl.store(z_ptr + offs, p01.plus_ten(x) + (p01.TEN - 10.0), mask=offs < N0)


@triton.jit
def add_with_pythons_abs(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offs, mask=offs < N0)
    tl.store(z_ptr + offs, x + abs(-10.0), mask=offs < N0)


@triton.jit
def add_through_libdevice(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offs, mask=offs < N0)
    tl.store(z_ptr + offs, libdevice.log(libdevice.exp(x)) + 10.0, mask=offs < N0)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def add_storing_a_block_per_lane(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + i, mask=i < N0)
    tl.store(z_ptr + i, x[None, :] + tl.zeros([2, B0], dtype=tl.float32) + 10, mask=i < N0)  # 2 x B0 into B0


@triton.jit
def add_storing_integers(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + i, mask=i < N0)
    tl.store(z_ptr + i, (x * 4 + 10).to(tl.int32), mask=i < N0)


@triton.jit
def add_storing_zeros(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + i, tl.zeros([B0], dtype=tl.float32), mask=i < N0)


@triton.jit
def add_reading_two_tensors_past_x(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets + 2 * N0, mask=mask)  # a stride slip: two whole tensors past x
    tl.store(z_ptr + offsets, x + 10, mask=mask)


@triton.jit
def add_without_the_program_id(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)  # every program takes the first block
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_with_blocks_one_apart(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) + tl.arange(0, B0)  # pid, not pid * B0
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_with_a_constant_max(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, max(B0, 8))  # two constants: Python's max is right
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)  # no mask: fails for another reason


@triton.jit
def add_masked_one_too_far(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets <= N0  # one lane too many
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 10.0, mask=mask)


@triton.jit
def add_reading_one_element_ahead(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets + 1, mask=offsets < N0)  # the last lane reads x[N0]
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


@triton.jit
def add_indexing_the_pointer(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = x_ptr[offsets]  # as if x_ptr were an array
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


@triton.jit
def add_with_len_of_a_block(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0)
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < len(x))



# -- what they compile to -------------------------------------------------------------------------------------------

@triton.jit
def add_mask2_kernel_many_live_values(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Puzzle 2's signature; every loaded value stays alive across a reduction, which spills under a register
    limit (maxnreg=24) at B0 = 2048."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0, other=0.0)
    tl.store(z_ptr + offsets, x / tl.sum(x) + tl.max(x), mask=offsets < N0)



# -- what a graded file and a kernel's body may use -----------------------------------------------------------------

@triton.jit
def add_mask2_kernel_default(x_ptr, z_ptr, N0, B0: tl.constexpr, ADD: tl.constexpr = 10.0):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + ADD, mask=offsets < N0)


@triton.heuristics({"EVEN": lambda args: args["N0"] % args["B0"] == 0})
@triton.jit
def add_mask2_kernel_heuristics(x_ptr, z_ptr, N0, B0: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    if EVEN:  # no mask needed (and a kernel that got EVEN wrong would read past x)
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)
    else:
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_unknown(x_ptr, z_ptr, N0, B0: tl.constexpr, ADD: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + ADD, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_sizes_reordered(x_ptr, z_ptr, B0: tl.constexpr, N0):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)



# -- for the GPU worker ---------------------------------------------------------------------------------------------

SCALE = tl.constexpr(10.0)


@triton.jit
def _plus_scale(x):
    return x + SCALE


@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    tl.store(z_ptr + offsets, _plus_scale(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.jit
def add_mask2_kernel_wild(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    wild = (z_ptr.to(tl.int64, bitcast=True) + (1 << 46)).to(tl.pointer_type(tl.float32), bitcast=True)
    tl.store(wild + offsets, tl.load(x_ptr + offsets, mask=offsets < N0))


@triton.jit
def add_mask2_kernel_prints(x_ptr, z_ptr, N0, B0: tl.constexpr):
    print("hello from program", tl.program_id(0))
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 10.0, mask=mask)



# -- for the interpreter's hooks across Triton versions -------------------------------------------------------------

# -- the load that sees `other=`: a one-lane load with other=0.0 is not one without other= -----------------------
@triton.jit
def add_reading_the_next_one(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0)  # one lane: a scalar pointer
    after = tl.load(x_ptr + i + 1, mask=i + 1 < N0, other=0.0)
    tl.store(z_ptr + i, tl.load(x_ptr + i) + 10.0 + 0.0 * after)  # 0 * NaN is NaN: poison would show


@triton.jit
def add_reading_the_next_one_without_other(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0)
    after = tl.load(x_ptr + i + 1, mask=i + 1 < N0)
    tl.store(z_ptr + i, tl.load(x_ptr + i) + 10.0 + 0.0 * after)


# -- stores and atomics are checked --------------------------------------------------------------------------------
@triton.jit
def add_stored_without_mask(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + i, tl.load(x_ptr + i, mask=i < N0, other=0.0) + 10.0)


@triton.jit
def add_exchanged(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.atomic_xchg(z_ptr + i, tl.load(x_ptr + i, mask=i < N0, other=0.0) + 10.0, mask=i < N0)


@triton.jit
def add_exchanged_without_mask(x_ptr, z_ptr, N0, B0: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.atomic_xchg(z_ptr + i, tl.load(x_ptr + i, mask=i < N0, other=0.0) + 10.0)


# -- tensor descriptors: their loads and stores are recorded and bounds-checked --------------------------------------
@triton.jit
def add_descriptor_past_x(x_ptr, z_ptr, N0, B0: tl.constexpr):
    start = tl.program_id(0) * B0
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0 + B0], strides=[1], block_shape=[B0])  # the shape is wrong
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z.store([start], x.load([start]) + 10.0)


@triton.jit
def add_descriptor_past_z(x_ptr, z_ptr, N0, B0: tl.constexpr):
    start = tl.program_id(0) * B0
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0 + B0], strides=[1], block_shape=[B0])
    z.store([start], x.load([start]) + 10.0)


@triton.jit
def add_descriptor_first_block_only(x_ptr, z_ptr, N0, B0: tl.constexpr):
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z = tl.make_tensor_descriptor(z_ptr, shape=[N0], strides=[1], block_shape=[B0])
    z.store([0], x.load([0]) + 10.0)  # every program writes the first block


# -- block pointers where the Triton has none (3.9): the verdict says what replaces them ----------------------------
@triton.jit
def add_block_pointer_advanced(x_ptr, z_ptr, N0, B0: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    zb = tl.make_block_ptr(z_ptr, shape=(N0,), strides=(1,), offsets=(0,), block_shape=(B0,), order=(0,))
    for _ in range(0, N0, B0):
        tl.store(zb, tl.load(xb, boundary_check=(0,)) + 10.0, boundary_check=(0,))
        xb, zb = tl.advance(xb, (B0,)), tl.advance(zb, (B0,))


CORRECT = (add_mask2_early_return, add_mask2_where, add_mask2_int64_offsets, add_mask2_persistent, add_constexpr_size)
CORRECT_WITH_BLOCK_POINTERS = (add_mask2_block_pointer,)
CORRECT_WITH_DESCRIPTORS = (add_mask2_descriptor_load,)

# Kernels whose wrong signature is the point: the signature step must refuse them.
SIGNATURE_MISTAKES = {
    "add_mask2_kernel_no_output",
    "add_mask2_kernel_no_size",
    "add_mask2_kernel_unknown",
    "add_mask2_kernel_wrong_signature",
}

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def add_mask2_lanes_strided(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Right, uncoalesced: lane k of the block takes element 17 k mod B0 (a permutation of the block), so a warp's
    lanes fall 68 bytes apart, each in a sector of its own."""
    lane = tl.arange(0, B0)
    offsets = tl.program_id(0) * B0 + (lane * 17) % B0
    in_range = offsets < N0
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=in_range) + 10.0, mask=in_range)


@triton.jit
def add_mask2_reads_twice(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Right, re-reading: x is loaded twice (half of it each time, summed)."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    in_range = offsets < N0
    first = tl.load(x_ptr + offsets, mask=in_range)
    second = tl.load(x_ptr + offsets, mask=in_range)
    tl.store(z_ptr + offsets, 0.5 * first + 0.5 * second + 10.0, mask=in_range)


@triton.jit
def add_mask2_tiny_chunks(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Right, in chunks of 32 elements one after another: every access is one warp's worth."""
    for c in range(0, B0, 32):
        offsets = tl.program_id(0) * B0 + c + tl.arange(0, 32)
        in_range = offsets < N0
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=in_range) + 10.0, mask=in_range)


@triton.jit
def add_mask2_one_element_at_a_time(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Right, one element per access: each request moves 4 bytes of a 32-byte sector."""
    for k in range(B0):
        at = tl.program_id(0) * B0 + k
        if at < N0:
            tl.store(z_ptr + at, tl.load(x_ptr + at) + 10.0)


@triton.jit
def add_mask2_half_lanes_masked(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Right, wasting lanes: a block of 2 x B0 lanes of which every odd one is masked off."""
    lane = tl.arange(0, 2 * B0)
    offsets = tl.program_id(0) * B0 + lane // 2
    active = (lane % 2 == 0) & (offsets < N0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=active) + 10.0, mask=active)


SLOW = (add_mask2_half_lanes_masked, add_mask2_lanes_strided, add_mask2_reads_twice, add_mask2_tiny_chunks,
        add_mask2_one_element_at_a_time)
