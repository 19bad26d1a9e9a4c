"""What a learner reads in notebooks 01-09, 11, 17 and 21, walked as a learner would: each kernel below is a
mistake met there, and its verdict must name it. The other messages: tests/grading/test_learner_messages.py."""

from __future__ import annotations

import p01_constant_add as p01
import p02_constant_add_block as p02
import p03_outer_vector_add as p03
import p04_outer_vector_add_block as p04
import p05_fused_outer_multiply as p05
import p06_fused_outer_multiply_backward as p06
import p07_long_sum as p07
import p08_long_softmax as p08
import p09_simple_flash_attention as p09
import p11_batched_matmul as p11
import p17_splitk_matmul as p17
import p21_multi_tensor_apply as p21
import pytest
import triton
from judging import grade

from puzzles.running import compat

TRITON_3_5 = compat.parse(triton.__version__) == (3, 5)

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- notebooks 01-09, 11, 17 and 21, walked as a learner ---------------------------------------------------


@interpreted_only  # the compile check runs beside the interpreter
def test_a_kernel_that_returns_its_result_is_told_so_not_asked_if_it_is_the_starter():
    result = grade(1, p01.add_returning_its_result, compile_check=True)
    assert result.first_failure.status == "compile error", str(result)
    reason = result.reason()
    assert "cannot return a value" in reason and "write the result through a pointer with tl.store" in reason
    assert "nothing was written into the output" in reason and "still the starter" not in reason, reason


@interpreted_only
def test_an_accumulator_that_changes_shape_points_at_the_reduction_axis():
    """acc starts as tl.zeros([B0]) already: 'give it its final type (tl.zeros instead of 0.0)' was no help."""
    reason = grade(7, p07.sum_over_the_wrong_axis, compile_check=True).reason()
    assert "changes shape in the loop, from [1] to [32]" in reason and "wrong axis" in reason, reason
    assert "instead of 0.0" not in reason, reason


def test_a_loop_variable_that_starts_as_a_number_is_told_to_start_as_a_block():
    from puzzles.running.compile_check.messages import hint_for

    message = ("AssertionError: Loop-carried variable acc has initial type fp32 but is re-assigned to <['4'], fp32> "
               "in loop!")
    assert "tl.zeros([B0], dtype=tl.float32) instead of 0.0" in hint_for(message, None)


def test_an_address_loaded_from_a_table_is_told_to_become_a_pointer():
    result = grade(21, p21.sgd_loading_through_an_address)
    assert result.first_failure.status == "error", str(result)
    assert ".to(tl.pointer_type(tl.float32))" in result.reason(), str(result)


@pytest.mark.parametrize(("kernel", "slip"), [
    (p07.sum_without_an_axis, "each row holds the sum of all its program's rows"),
    (p07.sum_resetting_the_accumulator, "the running sum holds only the last chunk"),
    (p07.sum_without_the_chunk_start, "every step reads the first chunk again"),
    (p07.sum_with_rows_n1_apart, "row r is read at r * N1"),
], ids=["no-axis", "reset", "no-j0", "stride-N1"])
def test_a_long_sums_loop_slips_are_named(kernel, slip):
    result = grade(7, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives: " + slip in result.reason(), str(result)


def test_a_softmax_summing_its_padding_is_told_to_load_minus_infinity():
    result = grade(8, p08.softmax_with_padding_in_the_sum)
    assert result.first_failure.status == "wrong", str(result)
    assert "the masked-off lanes of the last chunk count in the sum" in result.reason(), str(result)
    assert "other=-float('inf')" in result.reason()


def test_a_matmul_keeping_only_the_last_chunk_is_named():
    result = grade(11, p11.matmul_setting_the_tile)
    assert result.first_failure.status == "wrong", str(result)
    assert "the tile holds only the last chunk of MID" in result.reason(), str(result)


@interpreted_only
def test_programs_that_all_store_the_same_block_are_told_their_offsets_ignore_the_program_id():
    result = grade(2, p02.add_without_the_program_id)
    assert result.first_failure.status == "unwritten", str(result)
    assert "all 7 programs store the same 32 elements of z" in result.reason(), str(result)
    assert "the grid is 7 programs on one axis" in result.reason()


@interpreted_only
def test_overlapping_blocks_name_two_programs_and_an_element():
    result = grade(2, p02.add_with_blocks_one_apart)
    assert "programs (0, 0, 0) and (1, 0, 0) both store z[1]" in result.reason(), str(result)


@interpreted_only
def test_columns_no_program_reaches_are_named_with_the_grid():
    result = grade(4, p04.outer_add_with_grid_axes_swapped)
    assert result.first_failure.status == "unwritten", str(result)
    reason = result.reason()
    assert "columns 96…99 (of 0…99) of z are never written, in any row" in reason, reason
    assert "The grid is 4 × 3 programs; check which tl.program_id axis gives the columns" in reason, reason


@interpreted_only  # compiled, both lines are element-wise and right
@pytest.mark.parametrize(("number", "kernel", "advice"), [
    (4, p04.outer_add_masked_with_python_and, "uses Python's `and`"),
    (5, p05.relu_with_python_max, "write tl.maximum(a, b)"),
], ids=["and", "max"])
def test_python_operators_on_blocks_are_named_with_what_to_write(number, kernel, advice):
    result = grade(number, kernel)
    assert not result.passed, str(result)
    notes = [n for n in result.notes if advice in n]
    assert len(notes) == 1 and notes[0].startswith("line "), str(result)


def test_python_max_of_constants_gets_no_note():
    result = grade(2, p02.add_with_a_constant_max)
    assert not result.passed and not any("Python's `max`" in n for n in result.notes), str(result)


@interpreted_only
def test_a_single_lane_just_past_the_end_is_called_one_past_its_end():
    result = grade(2, p02.add_masked_one_too_far)
    assert "load of x[200] (one past its end) out of bounds in program (6, 0, 0)," in result.reason(), str(result)
    assert "(one past its end)" not in str(grade(2, p02.add_without_the_program_id))  # not for a whole block


def test_flash_attention_without_rescaling_acc_is_named():
    result = grade(9, p09.flash_without_rescaling_acc)
    assert result.first_failure.status == "wrong", str(result)
    assert "the running weighted sum acc is not rescaled" in result.reason(), str(result)


def test_split_k_parts_that_each_walk_all_of_k_are_named():
    result = grade(17, p17.splitk_every_part_over_all_of_k)
    assert result.first_failure.status == "wrong", str(result)
    assert "every part walks the whole of K, so z is SPLIT_K times a @ b" in result.reason(), str(result)


@interpreted_only
def test_no_other_note_where_a_load_went_out_of_bounds():
    """The lane past x's end was masked off by the grader and filled with NaN like any masked-off lane: the
    out-of-bounds load is the cause, not the missing other=."""
    result = grade(2, p02.add_reading_one_element_ahead)
    assert result.first_failure.status == "out of bounds", str(result)
    assert "without other=" not in str(result), str(result)


def test_sgd_without_weight_decay_is_named():
    result = grade(21, p21.sgd_without_weight_decay)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives: the weight decay is left out" in result.reason(), str(result)


@interpreted_only
def test_a_store_through_a_tables_address_is_not_told_to_stop_writing_through_z_ptr():
    result = grade(21, p21.sgd_masked_with_the_chunk_map_length)
    assert result.first_failure.status == "out of bounds", str(result)
    assert "own allocation" not in str(result), str(result)


@pytest.mark.parametrize(("kernel", "advice"), [
    (p02.add_indexing_the_pointer,
     "a pointer is not indexed like an array: read a block with tl.load(x_ptr + offsets)"),
    (p02.add_with_len_of_a_block, "a block has no len(): its length is the block size"),
], ids=["pointer-index", "len"])
def test_python_habits_on_pointers_and_blocks_get_advice(kernel, advice):
    result = grade(2, kernel)
    assert result.first_failure.status == "error" and advice in result.reason(), str(result)


@interpreted_only  # at the square size the interpreter broadcasts the row; a GPU's compiler may reject it
def test_an_outer_sum_without_axes_is_told_to_broadcast():
    result = grade(3, p03.outer_add_without_axes)
    if TRITON_3_5:  # its interpreter refuses to store a 1-D value through 2-D pointers, and says why
        assert result.first_failure.status == "error", str(result)
        assert "x[:, None] for a column and x[None, :] for a row" in result.reason(), str(result)
        return
    assert result.first_failure.status == "wrong", str(result)
    assert "x + y added element by element, as two 1-D blocks" in result.reason(), str(result)


def test_a_backward_gate_taken_from_x_alone_is_named():
    result = grade(6, p06.backward_gated_by_x_alone)
    assert result.first_failure.status == "wrong", str(result)
    assert "the relu's gate is taken from x alone" in result.reason(), str(result)


@interpreted_only
def test_matrices_of_a_batch_that_no_program_reaches_are_named():
    result = grade(11, p11.matmul_with_the_batch_from_axis_0)
    assert result.first_failure.status == "unwritten", str(result)
    assert "matrices z[2] (of z[0…2]) are never written" in result.reason(), str(result)
    assert "which tl.program_id axis gives the batch index" in result.reason()


@interpreted_only
def test_an_accumulator_widened_by_the_loop_is_told_to_start_as_float32():
    """'convert what the loop adds' would have sent the learner to round every tl.dot to float16."""
    reason = grade(17, p17.splitk_with_a_float16_accumulator, compile_check=True).reason()
    assert "changes dtype in the loop, from fp16 to fp32: start it as tl.zeros(..., dtype=tl.float32)" in reason, reason


@interpreted_only
def test_an_accumulator_added_to_before_it_exists_is_told_to_be_created_before_the_loop():
    reason = grade(7, p07.sum_without_creating_the_accumulator, compile_check=True).reason()
    assert "acc is added to before it has a value: create it before the loop" in reason, reason


