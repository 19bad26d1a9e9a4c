"""Puzzle 31, pipelining and warp specialization: the reference and the right kernels in other styles pass, with a
note on their compiled K loop (NUM_STAGES buffers, TMA copies, warp-specialized partitions); a loop with the right
values that is not warp-specialized, keeps Triton's default stages, or is not pipelined fails at its line saying
what its compiled code lacks; a warp-specialized loop of pointer loads (which Triton's compiler cannot specialize)
is told to load through a tensor descriptor, never shown the compiler's dump; the slips are named; the sizes keep
TMA's rules; a Triton without the API is told which it needs."""

from __future__ import annotations

import dataclasses

import p31_pipelined_matmul as p31
import pytest
import torch
from judging import grade, interpreted_only
from marked_lines import marked_line
from triton_features import lacking

from puzzles import compiled, test
from puzzles.course import catalog, mistakes_pipelined
from puzzles.running.compiled_code.pipelining import loop_shape

PUZZLE = catalog.get(31)
# Every test but the one that fakes a Triton without the API runs where the installed one has it (3.5 and later).
needs_the_api = pytest.mark.skipif(bool(lacking(PUZZLE)), reason=lacking(PUZZLE) or "-")


# One compile cache for the module (each compile is a second or more on a CPU), not the user's.
pytestmark = pytest.mark.usefixtures("module_compile_cache")




# -- the compiled loop ------------------------------------------------------------------------------------------


@needs_the_api
def test_the_reference_and_the_right_kernels_in_other_styles_pass_with_a_warp_specialized_pipeline():
    for kernel in (PUZZLE.reference(), *p31.CORRECT):
        result = grade(31, kernel, seed=1)
        assert result.passed, str(result)
        stages = PUZZLE.sizes[0]["NUM_STAGES"]
        assert any(f"rotates its tiles through {stages} shared-memory buffers" in n and "warp-specialized" in n
                   for n in result.notes), result.notes
    shape = loop_shape(compiled(PUZZLE.reference(), puzzle=31))
    assert shape.warp_specialized and shape.buffers == stages and shape.tma_copies == 2 and shape.barrier_waits


@needs_the_api
@pytest.mark.parametrize("kernel, lacks", [
    (p31.pipelined_not_warp_specialized, ["is not warp-specialized: the TTGIR has no ttg.warp_specialize"]),
    (p31.pipelined_default_stages, ["keeps 3 buffers per tile where the size asks for 4",
                                    "pass num_stages=NUM_STAGES"]),
    (p31.unpipelined, ["is not pipelined: each tile has a single shared-memory buffer", "is not warp-specialized",
                       "the compiler drops it"]),
], ids=["not_warp_specialized", "default_stages", "unpipelined"])
def test_a_loop_with_the_right_values_is_told_what_its_compiled_code_lacks_at_its_line(kernel, lacks):
    result = grade(31, kernel, seed=1)
    assert not result.passed
    assert all(o.status == "error" for o in result.outcomes), str(result)  # right values, the code fails
    error = result.first_failure.error
    loop = marked_line(kernel, "LOOP_LINE")
    assert f"the K loop at line {loop}" in error.message and error.line == loop, error.message
    for words in lacks:
        assert words in error.message, error.message
    assert "warp_specialize=True" in error.message  # the advice: the loop to write


@needs_the_api
def test_a_warp_specialized_loop_of_pointer_loads_is_told_to_load_through_a_descriptor():
    kernel = p31.pointer_loads_warp_specialized
    result = grade(31, kernel, seed=1)
    # The values are right everywhere; the compile at the first size (the rule's) fails.
    assert not result.passed and result.outcomes[0].status == "compile error", str(result)
    error = result.first_failure.error
    assert "could not warp-specialize the loop" in error.message, error.message
    assert "load through a tensor descriptor" in error.message
    assert error.line == marked_line(kernel, "LOOP_LINE")
    text = str(result)
    assert "PassManager" not in text and "NVGPUWarpSpecialization" not in text and "#loc" not in text


# -- the values -------------------------------------------------------------------------------------------------


@needs_the_api
@interpreted_only
@pytest.mark.parametrize("kernel, slip", [
    (p31.pipelined_last_chunk_only, "acc = tl.dot(x_tile, y_tile) replaces the sum each chunk"),
    (p31.pipelined_y_at_swapped_corner, "y's tile is loaded at [n0, k0]"),
], ids=["last_chunk_only", "y_at_swapped_corner"])
def test_each_slip_is_named(kernel, slip):
    result = grade(31, kernel, seed=1)
    assert not result.passed
    assert result.outcomes[0].status == "wrong" and slip in result.outcomes[0].note, str(result)


def test_each_slip_differs_from_the_spec_at_some_size_and_the_spec_is_float32_sums():
    for sizes in PUZZLE.sizes:
        x = torch.randn(sizes["M"], sizes["K"]).half()
        y = torch.randn(sizes["K"], sizes["N"]).half()
        expected = PUZZLE.spec(x, y)
        assert expected.dtype == torch.float16 and expected.shape == (sizes["M"], sizes["N"])
    for slip in (mistakes_pipelined.last_chunk_only, mistakes_pipelined.y_loaded_at_swapped_corner):
        differs = []
        for sizes in PUZZLE.sizes:
            x = torch.randn(sizes["M"], sizes["K"]).half()
            y = torch.randn(sizes["K"], sizes["N"]).half()
            differs.append(not torch.allclose(slip({"x": x, "y": y}, sizes).float(), PUZZLE.spec(x, y).float(),
                                              rtol=1e-2, atol=1e-2))
        assert any(differs), slip.__name__


@needs_the_api
@interpreted_only
def test_coordinates_counted_in_chunks_are_told_that_a_descriptor_counts_elements():
    kernel = p31.pipelined_coordinates_in_chunks
    result = grade(31, kernel, seed=1)
    assert not result.passed and result.outcomes[0].status == "error", str(result)
    error = result.first_failure.error
    assert "coordinates count elements" in error.message and "8 float16" in error.message, error.message
    assert error.line == marked_line(kernel, "LOAD_LINE")


@needs_the_api
@interpreted_only
def test_swapped_program_ids_leave_rows_unwritten_and_are_told_which_axis_walks_columns():
    result = grade(31, p31.pipelined_swapped_program_ids, seed=1)
    assert not result.passed
    failed = [o for o in result.outcomes if o.status != "passed"]
    assert failed and all(o.unwritten_count and not o.mismatch_count for o in failed), str(result)
    assert "tl.program_id axis" in str(result)


# -- the sizes and the Triton it needs --------------------------------------------------------------------------


def test_every_size_keeps_tmas_rules_and_the_first_asks_for_other_than_the_default_stages():
    for s in PUZZLE.sizes:
        assert s["N"] % 8 == 0 and s["K"] % 8 == 0, s  # float16 rows of whole 16-byte chunks
        assert min(s["BM"], s["BN"], s["BK"]) >= 16 and s["NUM_STAGES"] >= 2, s
    assert sum(bool(s["M"] % s["BM"] or s["N"] % s["BN"] or s["K"] % s["BK"]) for s in PUZZLE.sizes) >= 3
    assert PUZZLE.sizes[0]["NUM_STAGES"] != 3 and PUZZLE.compiled_rule.stages == PUZZLE.sizes[0]["NUM_STAGES"]
    assert any(s["K"] <= s["BK"] for s in PUZZLE.sizes)  # one chunk: fewer than the stages


def test_a_triton_without_the_api_is_told_which_it_needs_and_nothing_runs():
    absent = dataclasses.replace(PUZZLE.needs_triton, present=lambda: False)
    without = dataclasses.replace(PUZZLE, needs_triton=absent)
    result = test(PUZZLE.reference(), PUZZLE.spec, puzzle=without, quiet=True, seed=1)
    assert not result.passed and not result.outcomes, str(result)
    assert "warp_specialize=True" in str(result) and "from triton 3.5 on" in str(result)
    assert "pip install 'triton>=3.5,<3.10'" in str(result)
    assert (PUZZLE.needs_triton.missing(31) == "") == (lacking(PUZZLE) == "")


def test_the_api_check_reads_triton_not_the_interpreters_stand_in_for_tl_range(monkeypatch):
    """Once a kernel has run in a process, Triton 3.5's interpreter leaves a function of (*args, **kwargs) in
    tl.range's place: the check must not read its signature (make versions failed puzzle 31 there on it)."""
    import triton.language as tl
    import triton.language.core as core

    from puzzles.running.interpreter_hooks import has_warp_specialized_range

    had = has_warp_specialized_range()

    def stand_in(*args, **kwargs):
        return range(*args)

    monkeypatch.setattr(core, "range", stand_in)
    monkeypatch.setattr(tl, "range", stand_in)
    assert has_warp_specialized_range() == had
