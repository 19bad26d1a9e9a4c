"""What a learner reads when a kernel fails: notes that point at the real mistake and not at a wrong one,
out-of-bounds accesses named after the pointer the kernel used, one line per op of the kernel, and advice
for Triton's own messages (found walking notebooks 10-20 as a learner)."""

from __future__ import annotations

import p02_constant_add_block as p02
import p07_long_sum as p07
import p10_convolution_2d as p10
import p14_unpack_int4 as p14
import p15_int8_gemv as p15
import pytest
import triton
from judging import grade

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.split_k import rows_text
from puzzles.running import compat
from puzzles.running.recording import InvalidAccess

TRITON_3_5 = compat.parse(triton.__version__) == (3, 5)

# Out-of-bounds accesses and masked-off lanes are the interpreter's recording.
interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


@interpreted_only
def test_no_other_note_where_a_size_without_masked_lanes_is_wrong_too():
    """The wrong shift fails at K=64 too, where no lane is masked off: the masked load without other= (whose
    lanes are never stored) is not the mistake, and the verdict does not send the learner after it."""
    result = grade(14, p14.unpack_shifting_by_a_byte)
    assert all(o.status == "wrong" for o in result.outcomes), str(result)
    assert "other=" not in str(result)


@interpreted_only
def test_a_load_without_a_mask_is_not_called_a_masked_load_without_other():
    result = grade(14, p14.unpack_without_any_mask)
    assert result.first_failure.status == "out of bounds", str(result)
    assert "masked loads without other=" not in str(result)


@interpreted_only
def test_an_overshoot_is_named_after_the_pointer_on_the_line():
    """qweight_ptr + k * N runs 8 times past qweight, beyond z: the access is still qweight's, as the line says."""
    result = grade(14, p14.unpack_with_the_row_as_word_index)
    accesses = result.first_failure.invalid_accesses
    assert accesses and {a.tensor for a in accesses} == {"qweight"}, str(result)


@interpreted_only
def test_one_detail_line_per_op_that_went_out_of_bounds():
    result = grade(14, p14.unpack_with_the_row_as_word_index)
    lines = [line for line in str(result).splitlines() if line.strip().startswith("out of bounds:")]
    assert len(lines) == 1, str(result)
    assert "more times at this line, in programs (0, 1, 0)" in lines[0]


def test_lanes_are_counted_in_words():
    one_more = InvalidAccess("load", "x", 40, (1, 0, 0), 3, "tl.load(x_ptr + i)", count=2)
    assert "(and 1 more lane)" in one_more.describe()
    assert "(and 2 more lanes)" in InvalidAccess("load", "x", 40, (1, 0, 0), 3, "", count=3).describe()


def test_a_value_larger_than_its_pointers_gets_advice():
    result = grade(2, p02.add_storing_a_block_per_lane)
    assert result.first_failure.status == "error", str(result)
    # Triton 3.5's interpreter names a rank mismatch instead of the pointers' shape: its own advice.
    advice = "different numbers of axes" if TRITON_3_5 else "larger shape than the block of pointers"
    assert advice in result.reason(), str(result)


def test_whole_numbers_where_floats_are_expected_are_pointed_out():
    result = grade(2, p02.add_storing_integers)
    assert result.first_failure.status == "wrong", str(result)
    assert "whole number" in result.reason()
    zeros = grade(2, p02.add_storing_zeros)
    assert zeros.first_failure.status == "wrong" and "whole number" not in zeros.reason(), str(zeros)


@interpreted_only
def test_a_loop_that_stops_early_is_told_which_rows_it_never_read():
    result = grade(7, p07.sum_stopping_a_chunk_early)
    assert result.first_failure.status == "wrong", str(result)
    assert "no program loads x at T = 192…199 (of 0…199)" in result.reason(), str(result)


def test_rows_are_named_as_runs():
    assert rows_text([0, 1, 2, 5, 7, 8]) == "0…2, 5, 7…8"
    assert rows_text(list(range(0, 20, 2))) == "0, 2, 4, 6, …"


def test_a_slip_that_cannot_be_computed_is_left_out():
    """A likely slip that raises at some size (sizes outside the puzzle's rules) never reaches the learner as a
    traceback: the verdict is the one without it."""
    import dataclasses

    from puzzles.course.puzzle import Mistake

    def broken(inputs, sizes):
        raise ValueError("not at these sizes")

    p = catalog.get(15)
    p = dataclasses.replace(p, likely_mistakes=(Mistake("never shown", broken), *p.likely_mistakes))
    result = test(p.reference(), p.spec, puzzle=p, quiet=True, seed=1234)
    assert result.passed, str(result)


def test_the_likely_slips_are_computed_only_for_a_wrong_output():
    """Puzzle 18's eight slips took over a second a grading; a passing run needs none of them."""
    import dataclasses

    from puzzles.course.puzzle import Mistake
    from puzzles.grading.cases import case_from_spec

    calls = []

    def counted(inputs, sizes):
        calls.append(sizes)
        raise ValueError("counted only")

    p = catalog.get(15)
    p = dataclasses.replace(p, likely_mistakes=(Mistake("counted", counted),))
    assert test(p.reference(), p.spec, puzzle=p, quiet=True, seed=1234).passed and calls == []
    case = case_from_spec(p.spec, p, p.canonical, 1234, 0)
    assert case.mistaken == [] and len(calls) == 1  # asked for: computed once, then kept
    assert case.mistaken == [] and len(calls) == 1


@interpreted_only
def test_an_overshoot_by_whole_tensors_is_out_of_bounds_of_its_own_tensor():
    """Every lane that reads two tensors past x is out of bounds of x, at every size: at N0 = 1000 (4000
    bytes) a guard of one tensor or 4096 bytes let 952 of the 1000 lanes land in z, as accesses that
    looked in bounds."""
    result = grade(2, p02.add_reading_two_tensors_past_x)
    assert {o.sizes["N0"] for o in result.outcomes} >= {1000}
    for outcome in result.outcomes:
        assert outcome.status == "out of bounds", (outcome.sizes, str(result))
        assert {a.tensor for a in outcome.invalid_accesses} == {"x"}, (outcome.sizes, str(result))
        assert sum(a.count for a in outcome.invalid_accesses) == outcome.sizes["N0"], outcome.sizes


# -- a reason in one row of a table (the scoreboard, the progress notebook) ------------------------------------

SLIP_REASON = ("at M=3 N=64 K=256 G=32 BM=16 BN=32 BK=32 SPLIT_K=4 (seed 1234): 186 of 192 elements wrong (first "
               "z[0, 0]: expected -14.2344, got -24.9844); the output is what this slip gives: the zero point is "
               "subtracted without its + 1: AutoGPTQ stores zero − 1, so W = (q − (zero + 1)) · scale")


def test_a_table_row_leads_with_the_likely_slip():
    from puzzles.grading.result import BRIEF, brief_reason

    brief = brief_reason(SLIP_REASON)
    assert len(brief) <= BRIEF
    assert brief.startswith("likely slip: the zero point is subtracted without its + 1"), brief
    assert "186 of 192 wrong" in brief and "expected -14.2344" not in brief, brief


def test_a_long_reason_is_cut_after_a_whole_clause_never_inside_brackets():
    from puzzles.grading.result import brief_reason

    reason = ("at N0=8 (seed 1): 3 out-of-bounds accesses, the first: load x[8] (one past its end) in program (1,) "
              "at line 12: x = tl.load(x_ptr + offsets[None, :] * stride, mask=offsets < N0 + 1); mask the load "
              "with offsets < N0 so that a partial block stops at the end of the tensor")
    brief = brief_reason(reason, limit=120)
    assert len(brief) <= 120 and brief.endswith("…") and "(seed" not in brief, brief
    assert brief.startswith("at N0=8: 3 out-of-bounds accesses"), brief
    assert brief.count("[") == brief.count("]") and brief.count("(") == brief.count(")"), brief
    assert brief_reason("at N0=8 (seed 1): 3 of 8 elements wrong") == "at N0=8 (seed 1): 3 of 8 elements wrong"


def test_the_scoreboard_and_the_progress_table_shorten_by_the_same_rule(tmp_path):
    from puzzles.grading.result import brief_reason
    from puzzles.learner import progress as grading

    g = grading.Grade(catalog.get(18), "failed", SLIP_REASON, "18_gptq_splitk.ipynb")
    assert brief_reason(SLIP_REASON) in grading.scoreboard([g])
    table = grading.Progress([g], tmp_path, {18: "18_gptq_splitk.ipynb"})._repr_html_()
    assert "likely slip: the zero point is subtracted without its + 1" in table
    assert "title='at M=3" in table  # the whole reason on hover


# -- a float16 output whose sum was kept in float16 ---------------------------------------------------------


@interpreted_only  # compiled, a GPU may keep the partial sums of tl.sum wider than float16
def test_a_float16_sum_that_rounds_at_every_step_is_explained():
    result = grade(15, p15.gemv_accumulating_in_float16)
    assert result.first_failure.status == "wrong", str(result)
    assert "a sum kept in float16" in result.reason() and "accumulate in float32" in result.reason(), str(result)
    assert str(result).count("kept in float16") == 1, str(result)  # said once, the other rows point at it


# -- an out-of-bounds access named by the axis that overflows (issue: puzzle 10's column mask) ---------------------


@interpreted_only
def test_an_access_past_a_rows_end_is_named_by_its_column_not_as_the_next_image():
    """Without the column mask, x[1, 7, 7 + 1] is flat index 128 of a 2×8×8 x, which the flat index alone names
    x[2, 0, 0], an image the kernel does mask. The block says which axis ran over, and the wrong elements' shared
    columns are named."""
    result = grade(10, p10.conv2d_without_the_column_mask)
    failure = result.first_failure
    assert failure.status == "out of bounds", str(result)
    assert "load of x[1, 7, 8] (x is 2×8×8) out of bounds (column 8 of a row 8 wide)" in result.reason(), str(result)
    assert "x[2, 0, 0]" not in str(result)
    assert "every wrong element is in columns 5…7 (of 0…7) of z: z[:, :, 5…7]" in failure.note, failure.note
    assert "(column 5 of a row 5 wide)" in result.outcomes[2].reason()  # four images a program: the same axis


def test_block_coordinates_follow_the_block_not_the_flat_index():
    import numpy as np

    from puzzles.running.recording import block_coordinates

    rows, cols = np.arange(4)[:, None], np.arange(4)[None, :]
    elements = (6 + rows) * 8 + (5 + cols)  # rows 6…9, columns 5…8 of an 8×8 tensor
    active = np.ones_like(elements, dtype=bool)
    assert block_coordinates(elements, active, (1, 3), (8, 8)) == (7, 8)  # 64: not [8, 0]
    assert block_coordinates(elements, active, (2, 0), (8, 8)) == (8, 5)
    assert block_coordinates(elements * 0 + 70, active, (0, 0), (8, 8)) is None  # no lane inside
    access = InvalidAccess("load", "x", 64, (0, 0, 0), None, shape=(8, 8), coords=(7, 8))
    assert "x[7, 8] (x is 8×8) out of bounds (column 8 of a row 8 wide)" in access.describe()
