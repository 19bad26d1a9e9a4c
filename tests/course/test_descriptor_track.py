"""Puzzle 29, tensor descriptors (the first puzzle of issue 50's track of Triton as it is written now): the
reference's tiles move by TMA in its sm_90 PTX; a transpose through pointers has the right values and is told which
line is no TMA copy; each slip is named (coordinates swapped or counted in tiles, z's descriptor copied from x's, a
tile stored as loaded); the sizes keep TMA's rules; a Triton without descriptors is told which one it needs."""

from __future__ import annotations

import dataclasses

import p29_tensor_descriptors as p29
import pytest
import torch
from judging import grade, interpreted_only
from marked_lines import marked_line

from puzzles import compiled, test
from puzzles.course import catalog, mistakes_descriptors
from puzzles.running.descriptor_stores import chunk_end

PUZZLE = catalog.get(29)


# One compile cache for the module (each compile is a second or more on a CPU), not the user's.
pytestmark = pytest.mark.usefixtures("module_compile_cache")




# -- the compiled code: TMA copies, or the line that is not one ------------------------------------------------


def test_the_references_tiles_move_by_tma_on_sm_90_and_by_plain_loads_on_sm_80():
    result = grade(29, PUZZLE.reference(), seed=1)
    assert result.passed, str(result)
    assert any("every global load and store is a TMA copy" in n for n in result.notes), result.notes
    hopper = compiled(PUZZLE.reference(), puzzle=29)
    assert {a.kind for a in hopper.accesses} == {"TMA load", "TMA store"}, hopper.summary()
    assert "cp.async.bulk.tensor" in hopper.ptx and "ld.global" not in hopper.ptx
    ampere = compiled(PUZZLE.reference(), puzzle=29, target="sm_80")  # no TMA: the same descriptor, per thread
    assert {a.kind for a in ampere.accesses} == {"load", "store"}, ampere.summary()


def test_a_transpose_through_pointers_has_the_right_values_and_is_told_it_used_no_tma():
    kernel = p29.transpose_pointers
    result = grade(29, kernel, seed=1)
    assert not result.passed
    assert all(o.status == "error" for o in result.outcomes), str(result)  # right values, the code fails
    message = result.first_failure.error.message
    load, store = marked_line(kernel, "LOAD_LINE"), marked_line(kernel, "STORE_LINE")
    assert "asks for its tiles to move by TMA" in message, message
    assert f"the load at line {load} is " in message and "ld.global" in message
    assert f"the store at line {store} is " in message and "st.global" in message
    assert message.count("an instruction of each thread, not a TMA copy") == 2
    assert "x_desc.load([...])" in message  # the advice: what compiles to TMA
    assert result.first_failure.error.line == load


def test_a_descriptor_load_beside_a_pointer_store_is_told_of_the_store_alone():
    kernel = p29.transpose_descriptor_load_pointer_store
    result = grade(29, kernel, seed=1)
    assert not result.passed and all(o.status == "error" for o in result.outcomes), str(result)
    message = result.first_failure.error.message
    assert f"the store at line {marked_line(kernel, 'STORE_LINE')} is " in message, message
    assert "the load at line" not in message and "no load is a TMA copy" not in message


# -- the slips ----------------------------------------------------------------------------------------------


@interpreted_only
@pytest.mark.parametrize("kernel, slip", [
    (p29.transpose_store_at_x_corner, "z's tile is stored at x's corner [j0, i0]"),
    (p29.transpose_load_at_z_corner, "x's tile is loaded at z's corner [i0, j0]"),
    (p29.transpose_z_described_as_x, "z's descriptor has x's shape and strides"),
], ids=["store_at_x_corner", "load_at_z_corner", "z_described_as_x"])
def test_swapped_block_coordinates_and_a_copied_descriptor_are_named(kernel, slip):
    result = grade(29, kernel, seed=1)
    assert not result.passed
    assert all(o.status in ("wrong", "unwritten") for o in result.outcomes), str(result)
    assert slip in result.outcomes[0].note, str(result)
    assert all(slip in o.note or o.note == "see the note above" or not o.note for o in result.outcomes[1:])


@interpreted_only
def test_coordinates_counted_in_tiles_are_told_that_a_descriptor_counts_elements():
    kernel = p29.transpose_load_coordinates_in_tiles
    result = grade(29, kernel, seed=1)
    assert not result.passed and all(o.status == "error" for o in result.outcomes), str(result)
    error = result.first_failure.error
    assert "coordinates count elements" in error.message and "tl.program_id(0) * B0" in error.message, error.message
    assert error.line == marked_line(kernel, "LOAD_LINE")


@interpreted_only
def test_a_tile_stored_as_loaded_is_named_where_the_tile_is_square_and_told_why_where_it_is_not():
    kernel = p29.transpose_tile_not_transposed
    result = grade(29, kernel, seed=1)
    assert not result.passed
    for o in result.outcomes:
        if o.sizes["B0"] != o.sizes["B1"]:  # a B1 × B0 tile into a B0 × B1 store: Triton's bare assert, explained
            assert o.status == "error" and "tl.trans(tile)" in o.error.message, str(result)
            assert o.error.line == marked_line(kernel, "STORE_LINE")
        else:
            assert o.status == "wrong", str(result)
    assert "each tile is stored as it was loaded" in str(result)


def test_each_slip_played_tile_by_tile_is_the_spec_without_the_slip():
    """The slips' player (mistakes_descriptors.played) with the right corners is the transpose at every size, and
    each slip differs from it at some size."""
    gen = torch.Generator().manual_seed(0)
    for sizes in PUZZLE.sizes:
        x = torch.rand(sizes["N1"], sizes["N0"], generator=gen)
        assert torch.equal(mistakes_descriptors.played(x, sizes), PUZZLE.spec(x))
    for mistake in PUZZLE.likely_mistakes:
        differs = []
        for sizes in PUZZLE.sizes:
            x = torch.rand(sizes["N1"], sizes["N0"], generator=gen)
            try:
                out = mistake.output({"x": x}, sizes)
            except ValueError:  # a slip that stops the kernel at this size instead
                continue
            differs.append(not torch.equal(out, PUZZLE.spec(x)))
        assert differs and all(differs), mistake.text


# -- the sizes, the statement and the Triton it needs -----------------------------------------------------------


def test_every_size_keeps_tmas_rules_and_leaves_ragged_tiles():
    for s in PUZZLE.sizes:
        assert s["N0"] % 4 == 0 and s["N1"] % 4 == 0, s  # every row a multiple of 16 bytes: TMA's strides
        assert chunk_end(s["N1"], 4) == s["N1"], s  # z's rows end on a whole 16-byte chunk: no store past them
        assert 4 <= s["B0"] <= 256 and 4 <= s["B1"] <= 256, s  # a tile's last side ≥ 16 bytes, no side over 256
    assert sum(1 for s in PUZZLE.sizes if s["N0"] % s["B0"] and s["N1"] % s["B1"]) >= 3
    for rule in ("multiples of 4 at every size", "whole 16-byte chunks", "cp.async.bulk.tensor", "Triton 3.5"):
        assert rule in PUZZLE.statement, rule


@pytest.mark.interpreter("the interpreter's descriptor check names the rule; on a GPU the words are not checked yet")
def test_a_size_whose_rows_are_no_multiple_of_16_bytes_is_told_why():
    result = grade(29, PUZZLE.reference(), seed=1, sizes=[{"N0": 100, "N1": 38, "B0": 32, "B1": 16}])
    assert not result.passed
    assert "multiple of 16 bytes" in result.first_failure.error.message, str(result)


def test_a_triton_without_tensor_descriptors_is_told_which_it_needs_and_nothing_runs():
    absent = dataclasses.replace(PUZZLE.needs_triton, present=lambda: False)
    lacking = dataclasses.replace(PUZZLE, needs_triton=absent)
    result = test(PUZZLE.reference(), PUZZLE.spec, puzzle=lacking, quiet=True, seed=1)
    assert not result.passed and not result.outcomes, str(result)
    text = str(result)
    assert "puzzle 29 needs device-side tensor descriptors (tl.make_tensor_descriptor)" in text, text
    assert "from triton 3.5 on" in text and "pip install" in text
    assert PUZZLE.needs_triton.missing(29) == ""  # every Triton the course supports has them
