"""Puzzle 30, persistent matmul: the reference and the right kernels in other styles pass at every NUM_PROGRAMS;
a tile computed twice (right values) or never is named by its (tile row, tile column); a carried accumulator is
named as its slip; the slips' player with the right loop is the spec."""

from __future__ import annotations

import p30_persistent_matmul as p30
import pytest
import torch
from judging import grade

from puzzles.course import catalog, mistakes_persistent

PUZZLE = catalog.get(30)


def test_the_reference_and_the_right_kernels_in_other_styles_pass():
    for kernel in (PUZZLE.reference(), *p30.CORRECT):
        result = grade(30, kernel, seed=1)
        assert result.passed, str(result)


def test_the_grader_varies_the_number_of_programs_past_the_number_of_tiles():
    counts = {s["NUM_PROGRAMS"] for s in PUZZLE.sizes}
    assert {1, 3, 7} <= counts
    tiles = [mistakes_persistent.tile_counts(s) for s in PUZZLE.sizes]
    assert any(s["NUM_PROGRAMS"] > tm * tn for s, (tm, tn) in zip(PUZZLE.sizes, tiles, strict=True))
    assert any(s["M"] % s["BM"] and s["N"] % s["BN"] and s["K"] % s["BK"] for s in PUZZLE.sizes)  # ragged


def test_a_loop_stepping_by_one_has_right_values_and_fails_naming_the_tile_computed_twice():
    result = grade(30, p30.persistent_step_one, seed=1)
    assert not result.passed
    for o in result.outcomes:
        if o.sizes["NUM_PROGRAMS"] == 1:  # one program: stepping by 1 is stepping by NUM_PROGRAMS
            assert o.status == "passed", str(result)
            continue
        assert o.status == "tile computed twice" and not o.mismatch_count, str(result)
        assert "tile (0, 1) of z (tile row, tile column) is computed more than once" in o.error.message
        assert "programs (0, 0, 0), (1, 0, 0)" in o.error.message, o.error.message


def test_a_loop_from_zero_names_the_tiles_never_stored_and_the_ones_stored_again():
    result = grade(30, p30.persistent_loop_from_zero, seed=1)
    assert not result.passed
    first = result.outcomes[0]
    assert first.status == "unwritten", str(result)
    assert "no program stores tiles (0, 1), (0, 2)" in first.note and "13 of 20 tiles" in first.note, first.note
    assert "while (0, 0)" in first.note and "computed more than once" in first.note


def test_a_tile_index_split_by_the_wrong_count_names_the_tiles_never_stored():
    result = grade(30, p30.persistent_split_by_tiles_m, seed=1)
    assert not result.passed and all(o.status == "unwritten" for o in result.outcomes), str(result)
    assert "no program stores tiles (0, 4), (1, 4), (2, 4), (3, 4) of z" in result.outcomes[0].note


def test_an_accumulator_created_once_per_program_is_named_as_its_slip():
    result = grade(30, p30.persistent_accumulator_outside, seed=1)
    assert not result.passed
    slip = "the accumulator is created once, before the tile loop"
    for o in result.outcomes:
        if o.sizes["NUM_PROGRAMS"] >= mistakes_persistent.tile_counts(o.sizes)[0] * \
                mistakes_persistent.tile_counts(o.sizes)[1]:
            assert o.status == "passed", str(result)  # one tile per program: nothing carried
        else:
            assert o.status == "wrong" and slip in o.note, str(result)


@pytest.mark.parametrize("index", range(4))
def test_the_slips_player_with_the_right_loop_is_the_spec(index):
    sizes = PUZZLE.sizes[index]
    torch.manual_seed(index)
    inputs = {"x": torch.rand(sizes["M"], sizes["K"]) - 0.5, "y": torch.rand(sizes["K"], sizes["N"]) - 0.5}
    expected = PUZZLE.spec(inputs["x"], inputs["y"])
    torch.testing.assert_close(mistakes_persistent.played(inputs, sizes), expected)
