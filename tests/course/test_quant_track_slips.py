"""The quantization track's likely slips: a wrong output that a slip explains is told which slip
(puzzles/course/mistakes.py). The track's other tests: tests/course/test_quant_track.py."""

from __future__ import annotations

import p12_quantized_matmul as p12
import p13_pack_int4 as p13
import p14_unpack_int4 as p14
import p15_int8_gemv as p15
import p16_grouped_tile_order as p16
import p18_gptq_splitk as p18
import pytest
import torch
from judging import grade
from test_quant_track import out_of_bounds_on_a_ragged_block

from puzzles.course import catalog

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- a wrong output that a likely slip explains is told which slip (puzzles/course/mistakes.py) ------------------------


SLIPS = [
    (13, p13.pack_nibbles_reversed, "reverse order"),
    (13, p13.pack_without_nibble_mask, "without & 0xF"),
    (14, p14.unpack_masking_before_shifting, "masked in place"),
    (15, p15.gemv_without_scale, "scale is left out"),
    (16, p16.grouped_order_row_major, "row-major order"),
    (16, p16.grouped_order_full_last_band, "last band is taken as GROUP_M"),
    (16, p16.grouped_order_kernel_position_from_pid, "the program's position in its band"),
    (18, p18.gptq_without_plus_one, "without its + 1"),
    (18, p18.gptq_zeros_packed_along_k, "qzeros is packed along N"),
    (18, p18.gptq_group_of_64, "k // 64, a fixed size"),
    (18, p18.gptq_group_of_chunk_start, "g = k0 // G"),
]


@pytest.mark.parametrize("number, kernel, slip", SLIPS, ids=lambda x: getattr(getattr(x, "fn", None), "__name__", ""))
def test_a_likely_slip_is_named_in_the_verdict(number, kernel, slip):
    result = grade(number, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives" in result.reason() and slip in result.reason(), str(result)


@interpreted_only  # a shift of 32 bits or more fills with the sign bit in the interpreter; compiled, it is undefined
@pytest.mark.parametrize("kernel, slip", [(p12.quant_dot_weights_by_byte, "the weights are unpacked 8 bits apart"),
                                          (p12.quant_dot_all_by_byte,
                                           "the weights and the shifts are unpacked 8 bits")],
                         ids=["weights", "weights-and-shifts"])
def test_nibbles_unpacked_a_byte_apart_are_named(kernel, slip):
    result = grade(12, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives" in result.reason() and slip in result.reason(), str(result)
    assert grade(12, p12.quant_dot_by_nibble).passed  # the same kernel with 4 bits a nibble: no slip to name


def test_a_chunk_read_with_its_first_rows_group_names_the_rows_that_took_the_wrong_group():
    """g = k0 // G passes where G is a multiple of BK (sizes 1 and 2) and fails elsewhere: the verdict says which rows
    of which chunk took the wrong group, not only that 953 of 960 elements are wrong."""
    result = grade(18, p18.gptq_group_of_chunk_start)
    failure = result.first_failure
    assert failure.sizes == catalog.get(18).sizes[2] and failure.status == "wrong", str(result)
    rows = "chunk k0 = 0 (rows 0…63) took group 0 for its rows 32…63, which are in group 1"
    assert rows in failure.note, failure.note
    assert [o.status for o in result.outcomes[:2]] == ["passed", "passed"], str(result)


def test_a_wrong_output_that_no_slip_explains_names_none():
    result = grade(15, p15.gemv_weight_read_as_n_by_k)
    assert result.first_failure.status == "wrong" and "slip" not in str(result), str(result)
    assert "kept in float16" not in str(result), str(result)  # wrong by far, everywhere: not a rounding


@pytest.mark.parametrize("p", [p for p in catalog.all_puzzles() if p.likely_mistakes], ids=lambda p: p.id)
def test_every_likely_slip_gives_a_wrong_output_at_some_size(p):
    """A slip whose output is the spec's at every size could never be told apart: each one must differ somewhere
    (where it does not, e.g. puzzle 18's chunk taken as the group at BK = G, the verdict skips it)."""
    from puzzles.grading.cases import case_from_spec

    def same(a, b, case):
        return torch.equal(a, b) if not b.dtype.is_floating_point else torch.allclose(
            a.double(), b.double(), rtol=case.rtol, atol=case.atol)

    cases = [case_from_spec(p.spec, p, sizes, 1234, i) for i, sizes in enumerate(p.sizes)]
    for mistake in p.likely_mistakes:  # the sentence may end with what the slip did at that size
        differs = [not same(out, c.expected, c) for c in cases for text, out in c.mistaken
                   if text.startswith(mistake.text)]
        assert any(differs), f"puzzle {p.number}: '{mistake.text}' gives the right output at every size"


@interpreted_only
def test_gptq_without_k_mask():
    assert "out-of-bounds" in out_of_bounds_on_a_ragged_block(18, p18.gptq_without_k_mask, "K", "BK")


def test_gemv_with_tl_dot_is_rejected_where_the_statement_rules_it_out():
    result = grade(15, p15.gemv_with_tl_dot)
    assert not result.passed and result.error is not None and result.error.kind == "rule", str(result)
    assert "not to use tl.dot" in result.reason() and "tl.dot(rows" in result.error.source
    assert result.error.line == p15.gemv_with_tl_dot.fn.__code__.co_firstlineno + 9  # counted from the decorator
    assert not result.outcomes  # rejected before running
