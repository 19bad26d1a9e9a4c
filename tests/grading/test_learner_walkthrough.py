"""What a learner reads in notebooks 01-09, 11, 17 and 21, walked as a learner would: each kernel below is a
mistake met there, and its verdict must name it. The other messages: tests/grading/test_learner_messages.py."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
from judging import grade

from puzzles.running import compat

TRITON_3_5 = compat.parse(triton.__version__) == (3, 5)

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- notebooks 01-09, 11, 17 and 21, walked as a learner ---------------------------------------------------

@triton.jit
def add_returning_its_result(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    return tl.load(x_ptr + offsets) + 10.0  # returned, never stored


@interpreted_only  # the compile check runs beside the interpreter
def test_a_kernel_that_returns_its_result_is_told_so_not_asked_if_it_is_the_starter():
    result = grade(1, add_returning_its_result, compile_check=True)
    assert result.first_failure.status == "compile error", str(result)
    reason = result.reason()
    assert "cannot return a value" in reason and "write the result through a pointer with tl.store" in reason
    assert "nothing was written into the output" in reason and "still the starter" not in reason, reason


@triton.jit
def sum_over_the_wrong_axis(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0)
        acc += tl.sum(x, axis=0)  # B1 column sums, not B0 row sums
    tl.store(z_ptr + i, acc, mask=i < N0)


@interpreted_only
def test_an_accumulator_that_changes_shape_points_at_the_reduction_axis():
    """acc starts as tl.zeros([B0]) already: 'give it its final type (tl.zeros instead of 0.0)' was no help."""
    reason = grade(7, sum_over_the_wrong_axis, compile_check=True).reason()
    assert "changes shape in the loop, from [1] to [32]" in reason and "wrong axis" in reason, reason
    assert "instead of 0.0" not in reason, reason


def test_a_loop_variable_that_starts_as_a_number_is_told_to_start_as_a_block():
    from puzzles.running.compile_check.messages import hint_for

    message = ("AssertionError: Loop-carried variable acc has initial type fp32 but is re-assigned to <['4'], fp32> "
               "in loop!")
    assert "tl.zeros([B0], dtype=tl.float32) instead of 0.0" in hint_for(message, None)


@triton.jit
def sgd_loading_through_an_address(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                                   B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    p_ptr = tl.load(addresses_ptr + t)  # an int64 address, never cast to a pointer
    tl.store(z_ptr + offs, tl.load(p_ptr + offs, mask=offs < tl.load(numels_ptr + t)), mask=offs < 1)


def test_an_address_loaded_from_a_table_is_told_to_become_a_pointer():
    result = grade(21, sgd_loading_through_an_address)
    assert result.first_failure.status == "error", str(result)
    assert ".to(tl.pointer_type(tl.float32))" in result.reason(), str(result)


@triton.jit
def sum_resetting_the_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc = tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                             other=0.0), axis=1)  # = where += was meant
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_without_the_chunk_start(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for _j0 in range(0, T, B1):
        j = tl.arange(0, B1)  # j0 left out
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_with_rows_n1_apart(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * N1 + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_without_an_axis(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0))  # the whole block, not each row
    tl.store(z_ptr + i, acc, mask=i < N0)


@pytest.mark.parametrize(("kernel", "slip"), [
    (sum_without_an_axis, "each row holds the sum of all its program's rows"),
    (sum_resetting_the_accumulator, "the running sum holds only the last chunk"),
    (sum_without_the_chunk_start, "every step reads the first chunk again"),
    (sum_with_rows_n1_apart, "row r is read at r * N1"),
], ids=["no-axis", "reset", "no-j0", "stride-N1"])
def test_a_long_sums_loop_slips_are_named(kernel, slip):
    result = grade(7, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives: " + slip in result.reason(), str(result)


@triton.jit
def softmax_with_padding_in_the_sum(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    top = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=-float("inf"))
        top = tl.maximum(top, tl.max(x, axis=1))
    total = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0)
        total += tl.sum(tl.exp(x - top[:, None]), axis=1)  # the padding's exp(0 - top) counts
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        mask = (i[:, None] < N0) & (j[None, :] < T)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=mask, other=-float("inf"))
        tl.store(z_ptr + i[:, None] * T + j[None, :], tl.exp(x - top[:, None]) / total[:, None], mask=mask)


def test_a_softmax_summing_its_padding_is_told_to_load_minus_infinity():
    result = grade(8, softmax_with_padding_in_the_sum)
    assert result.first_failure.status == "wrong", str(result)
    assert "the masked-off lanes of the last chunk count in the sum" in result.reason(), str(result)
    assert "other=-float('inf')" in result.reason()


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


def test_a_matmul_keeping_only_the_last_chunk_is_named():
    result = grade(11, matmul_setting_the_tile)
    assert result.first_failure.status == "wrong", str(result)
    assert "the tile holds only the last chunk of MID" in result.reason(), str(result)


@triton.jit
def add_without_the_program_id(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)  # every program takes the first block
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_with_blocks_one_apart(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) + tl.arange(0, B0)  # pid, not pid * B0
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@interpreted_only
def test_programs_that_all_store_the_same_block_are_told_their_offsets_ignore_the_program_id():
    result = grade(2, add_without_the_program_id)
    assert result.first_failure.status == "unwritten", str(result)
    assert "all 7 programs store the same 32 elements of z" in result.reason(), str(result)
    assert "the grid is 7 programs on one axis" in result.reason()


@interpreted_only
def test_overlapping_blocks_name_two_programs_and_an_element():
    result = grade(2, add_with_blocks_one_apart)
    assert "programs (0, 0, 0) and (1, 0, 0) both store z[1]" in result.reason(), str(result)


@triton.jit
def outer_add_with_grid_axes_swapped(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(1) * B0 + tl.arange(0, B0)  # columns from axis 1, which has fewer programs
    j = tl.program_id(0) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))


@interpreted_only
def test_columns_no_program_reaches_are_named_with_the_grid():
    result = grade(4, outer_add_with_grid_axes_swapped)
    assert result.first_failure.status == "unwritten", str(result)
    reason = result.reason()
    assert "columns 96…99 (of 0…99) of z are never written, in any row" in reason, reason
    assert "The grid is 4 × 3 programs; check which tl.program_id axis gives the columns" in reason, reason


@triton.jit
def outer_add_masked_with_python_and(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None],
             mask=(j[:, None] < N1) and (i[None, :] < N0))  # Python's and: one side survives in the interpreter


@triton.jit
def relu_with_python_max(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], max(x[None, :] * y[:, None], 0.0),
             mask=(j[:, None] < N1) & (i[None, :] < N0))


@interpreted_only  # compiled, both lines are element-wise and right
@pytest.mark.parametrize(("number", "kernel", "advice"), [
    (4, outer_add_masked_with_python_and, "uses Python's `and`"),
    (5, relu_with_python_max, "write tl.maximum(a, b)"),
], ids=["and", "max"])
def test_python_operators_on_blocks_are_named_with_what_to_write(number, kernel, advice):
    result = grade(number, kernel)
    assert not result.passed, str(result)
    notes = [n for n in result.notes if advice in n]
    assert len(notes) == 1 and notes[0].startswith("line "), str(result)


@triton.jit
def add_with_a_constant_max(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, max(B0, 8))  # two constants: Python's max is right
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)  # no mask: fails for another reason


def test_python_max_of_constants_gets_no_note():
    result = grade(2, add_with_a_constant_max)
    assert not result.passed and not any("Python's `max`" in n for n in result.notes), str(result)


@triton.jit
def add_masked_one_too_far(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets <= N0  # one lane too many
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 10.0, mask=mask)


@interpreted_only
def test_a_single_lane_just_past_the_end_is_called_one_past_its_end():
    result = grade(2, add_masked_one_too_far)
    assert "load of x[200] (one past its end) out of bounds in program (6, 0, 0)," in result.reason(), str(result)
    assert "(one past its end)" not in str(grade(2, add_without_the_program_id))  # not for a whole block


@triton.jit
def flash_without_rescaling_acc(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    q = tl.load(q_ptr + rows, mask=rows < N0, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    total = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols, mask=cols < T, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols < T, other=0.0)
        s = tl.where((cols < T)[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        total = total * tl.exp(m - m_new) + tl.sum(p, axis=1)
        acc = acc + tl.sum(p * v[None, :], axis=1)  # not rescaled
        m = m_new
    tl.store(z_ptr + rows, acc / total, mask=rows < N0)


def test_flash_attention_without_rescaling_acc_is_named():
    result = grade(9, flash_without_rescaling_acc)
    assert result.first_failure.status == "wrong", str(result)
    assert "the running weighted sum acc is not rescaled" in result.reason(), str(result)


@triton.jit
def splitk_every_part_over_all_of_k(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr, SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):  # the whole of K in every part
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


def test_split_k_parts_that_each_walk_all_of_k_are_named():
    result = grade(17, splitk_every_part_over_all_of_k)
    assert result.first_failure.status == "wrong", str(result)
    assert "every part walks the whole of K, so z is SPLIT_K times a @ b" in result.reason(), str(result)


@triton.jit
def add_reading_one_element_ahead(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets + 1, mask=offsets < N0)  # the last lane reads x[N0]
    tl.store(z_ptr + offsets, x + 10.0, mask=offsets < N0)


@interpreted_only
def test_no_other_note_where_a_load_went_out_of_bounds():
    """The lane past x's end was masked off by the grader and filled with NaN like any masked-off lane: the
    out-of-bounds load is the cause, not the missing other=."""
    result = grade(2, add_reading_one_element_ahead)
    assert result.first_failure.status == "out of bounds", str(result)
    assert "without other=" not in str(result), str(result)


@triton.jit
def sgd_without_weight_decay(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay,
                             B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < tl.load(numels_ptr + t)
    p = tl.load(tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    g = tl.load(tl.load(addresses_ptr + K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    m = momentum * tl.load(tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask) + g
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32)) + offs, m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, p - lr * m, mask=mask)


@triton.jit
def sgd_masked_with_the_chunk_map_length(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum,
                                         weight_decay, B0: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < B0 * 4  # not the tensor's own size
    p = tl.load(tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32)) + offs, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, p, mask=mask)


def test_sgd_without_weight_decay_is_named():
    result = grade(21, sgd_without_weight_decay)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives: the weight decay is left out" in result.reason(), str(result)


@interpreted_only
def test_a_store_through_a_tables_address_is_not_told_to_stop_writing_through_z_ptr():
    result = grade(21, sgd_masked_with_the_chunk_map_length)
    assert result.first_failure.status == "out of bounds", str(result)
    assert "own allocation" not in str(result), str(result)


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


@pytest.mark.parametrize(("kernel", "advice"), [
    (add_indexing_the_pointer, "a pointer is not indexed like an array: read a block with tl.load(x_ptr + offsets)"),
    (add_with_len_of_a_block, "a block has no len(): its length is the block size"),
], ids=["pointer-index", "len"])
def test_python_habits_on_pointers_and_blocks_get_advice(kernel, advice):
    result = grade(2, kernel)
    assert result.first_failure.status == "error" and advice in result.reason(), str(result)


@triton.jit
def outer_add_without_axes(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x + y)  # two 1-D blocks: one row, stored into every row


@triton.jit
def backward_gated_by_x_alone(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    at = j[:, None] * N0 + i[None, :]
    x = tl.load(x_ptr + at, mask=mask, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    dz = tl.load(dz_ptr + at, mask=mask, other=0.0)
    tl.store(dx_ptr + at, tl.where(x > 0, y[:, None] * dz, 0.0), mask=mask)  # relu'(x), not relu'(x * y)


@interpreted_only  # at the square size the interpreter broadcasts the row; a GPU's compiler may reject it
def test_an_outer_sum_without_axes_is_told_to_broadcast():
    result = grade(3, outer_add_without_axes)
    if TRITON_3_5:  # its interpreter refuses to store a 1-D value through 2-D pointers, and says why
        assert result.first_failure.status == "error", str(result)
        assert "x[:, None] for a column and x[None, :] for a row" in result.reason(), str(result)
        return
    assert result.first_failure.status == "wrong", str(result)
    assert "x + y added element by element, as two 1-D blocks" in result.reason(), str(result)


def test_a_backward_gate_taken_from_x_alone_is_named():
    result = grade(6, backward_gated_by_x_alone)
    assert result.first_failure.status == "wrong", str(result)
    assert "the relu's gate is taken from x alone" in result.reason(), str(result)


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


@interpreted_only
def test_matrices_of_a_batch_that_no_program_reaches_are_named():
    result = grade(11, matmul_with_the_batch_from_axis_0)
    assert result.first_failure.status == "unwritten", str(result)
    assert "matrices z[2] (of z[0…2]) are never written" in result.reason(), str(result)
    assert "which tl.program_id axis gives the batch index" in result.reason()


@triton.jit
def splitk_with_a_float16_accumulator(a_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                      BK: tl.constexpr, SPLIT_K: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float16)  # tl.dot gives float32: the loop widens it
    for k0 in range(tl.program_id(2) * BK, K, BK * SPLIT_K):
        k = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(z_ptr + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@interpreted_only
def test_an_accumulator_widened_by_the_loop_is_told_to_start_as_float32():
    """'convert what the loop adds' would have sent the learner to round every tl.dot to float16."""
    reason = grade(17, splitk_with_a_float16_accumulator, compile_check=True).reason()
    assert "changes dtype in the loop, from fp16 to fp32: start it as tl.zeros(..., dtype=tl.float32)" in reason, reason


@triton.jit
def sum_without_creating_the_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :],  # noqa: F821 - acc never created
                              mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@interpreted_only
def test_an_accumulator_added_to_before_it_exists_is_told_to_be_created_before_the_loop():
    reason = grade(7, sum_without_creating_the_accumulator, compile_check=True).reason()
    assert "acc is added to before it has a value: create it before the loop" in reason, reason


