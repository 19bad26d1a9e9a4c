"""The quantization track's likely slips: a wrong output that a slip explains is told which slip
(puzzles/course/mistakes.py). The track's other tests: tests/course/test_quant_track.py."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
import wrong_kernels_matmuls as wrong_matmuls
from judging import grade
from test_quant_track import (  # the track's kernels, written once there
    gemv_weight_read_as_n_by_k,
    gptq_group_of_64,
    gptq_group_of_chunk_start,
    gptq_without_k_mask,
    gptq_without_plus_one,
    gptq_zeros_packed_along_k,
    grouped_order_full_last_band,
    grouped_order_row_major,
    out_of_bounds_on_a_ragged_block,
    pack_nibbles_reversed,
    pack_without_nibble_mask,
    quant_dot_all_by_byte,
    quant_dot_by_nibble,
    quant_dot_weights_by_byte,
    unpack_masking_before_shifting,
)

from puzzles.course import catalog

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- a wrong output that a likely slip explains is told which slip (puzzles/course/mistakes.py) ------------------------

@triton.jit
def gemv_without_scale(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    tl.store(z_ptr + n, acc.to(tl.float16), mask=n < N)  # the per-column scale forgotten


SLIPS = [
    (13, pack_nibbles_reversed, "reverse order"),
    (13, pack_without_nibble_mask, "without & 0xF"),
    (14, unpack_masking_before_shifting, "masked in place"),
    (15, gemv_without_scale, "scale is left out"),
    (16, grouped_order_row_major, "row-major order"),
    (16, grouped_order_full_last_band, "last band is taken as GROUP_M"),
    (16, wrong_matmuls.grouped_order_kernel_position_from_pid, "the program's position in its band"),
    (18, gptq_without_plus_one, "without its + 1"),
    (18, gptq_zeros_packed_along_k, "qzeros is packed along N"),
    (18, gptq_group_of_64, "k // 64, a fixed size"),
    (18, gptq_group_of_chunk_start, "g = k0 // G"),
]


@pytest.mark.parametrize("number, kernel, slip", SLIPS, ids=lambda x: getattr(getattr(x, "fn", None), "__name__", ""))
def test_a_likely_slip_is_named_in_the_verdict(number, kernel, slip):
    result = grade(number, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives" in result.reason() and slip in result.reason(), str(result)


@interpreted_only  # a shift of 32 bits or more fills with the sign bit in the interpreter; compiled, it is undefined
@pytest.mark.parametrize("kernel, slip", [(quant_dot_weights_by_byte, "the weights are unpacked 8 bits apart"),
                                          (quant_dot_all_by_byte, "the weights and the shifts are unpacked 8 bits")],
                         ids=["weights", "weights-and-shifts"])
def test_nibbles_unpacked_a_byte_apart_are_named(kernel, slip):
    result = grade(12, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert "the output is what this slip gives" in result.reason() and slip in result.reason(), str(result)
    assert grade(12, quant_dot_by_nibble).passed  # the same kernel with 4 bits a nibble: no slip to name


def test_a_chunk_read_with_its_first_rows_group_names_the_rows_that_took_the_wrong_group():
    """g = k0 // G passes where G is a multiple of BK (sizes 1 and 2) and fails elsewhere: the verdict says which rows
    of which chunk took the wrong group, not only that 953 of 960 elements are wrong."""
    result = grade(18, gptq_group_of_chunk_start)
    failure = result.first_failure
    assert failure.sizes == catalog.get(18).sizes[2] and failure.status == "wrong", str(result)
    rows = "chunk k0 = 0 (rows 0…63) took group 0 for its rows 32…63, which are in group 1"
    assert rows in failure.note, failure.note
    assert [o.status for o in result.outcomes[:2]] == ["passed", "passed"], str(result)


def test_a_wrong_output_that_no_slip_explains_names_none():
    result = grade(15, gemv_weight_read_as_n_by_k)
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
    assert "out-of-bounds" in out_of_bounds_on_a_ragged_block(18, gptq_without_k_mask, "K", "BK")


@triton.jit
def gemv_with_tl_dot(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
        rows = tl.zeros([16, BK], dtype=tl.float16) + x[None, :]  # the vector padded to 16 rows
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc = tl.dot(rows, w.to(tl.float16), acc)
    tl.store(z_ptr + n, (tl.sum(acc, axis=0) / 16 * tl.load(scale_ptr)).to(tl.float16), mask=n < N)


def test_gemv_with_tl_dot_is_rejected_where_the_statement_rules_it_out():
    result = grade(15, gemv_with_tl_dot)
    assert not result.passed and result.error is not None and result.error.kind == "rule", str(result)
    assert "not to use tl.dot" in result.reason() and "tl.dot(rows" in result.error.source
    assert result.error.line == gemv_with_tl_dot.fn.__code__.co_firstlineno + 9  # counted from the decorator
    assert not result.outcomes  # rejected before running
