"""How results read: the verdict table in JupyterLab, one-line reprs, units a learner can read."""

from __future__ import annotations

import re

import p02_constant_add_block as p02
import pytest

from puzzles import test
from puzzles.course import catalog
from puzzles.course.amounts import fmt_bytes, fmt_flops
from puzzles.course.notebooks import speed_text
from puzzles.grading.result import render_html

P2 = catalog.get(2)


@pytest.fixture(scope="module")
def failing():
    result = test(p02.add_mask2_kernel_no_mask, P2.spec, quiet=True)
    assert not result.passed and result.first_failure.trace is not None
    return result


def test_verdict_table_cells_are_left_aligned_and_sizes_do_not_wrap(failing):
    page = render_html(failing)
    cells = re.findall(r"<t[dh]( style=\"[^\"]*\")?>", page)
    assert cells and all("text-align:left" in style for style in cells)  # JupyterLab right-aligns by default
    sizes = re.search(r"<td([^>]*)><code>N0=", page)
    assert sizes and "white-space:nowrap" in sizes.group(1)


def test_reprs_are_one_short_line(failing):
    outcome = failing.first_failure
    for obj in (failing, outcome, outcome.trace, failing.outcomes):
        text = repr(obj) if obj is not failing.outcomes else repr(obj[0])
        assert "\n" not in text and len(text) <= 200, text
    assert repr(outcome).startswith("<SizeOutcome N0=") and "out of bounds" in repr(outcome)
    assert "tensor(" not in repr(outcome)  # no tensors, no trace dump
    assert repr(outcome.trace).startswith("<Trace grid=")
    for record in (outcome.invalid_accesses[0], outcome.trace.accesses[0]):  # no element arrays
        assert "\n" not in repr(record) and len(repr(record)) < 300, repr(record)


@pytest.mark.parametrize("number", [1, 3, 9, 15])
def test_small_puzzles_speed_sections_never_say_zero(number):
    text = speed_text(catalog.get(number))
    assert " 0 MB" not in text and " 0 GFLOP" not in text
    assert re.search(r"at least \d[\d.]* (B|KB|MB|GB) to move", text), text


def test_units():
    assert [fmt_bytes(n) for n in (0, 512, 4096, 33_554_432, 1_500_000_000)] == ["0 B", "512 B", "4.1 KB",
                                                                                  "33.6 MB", "1.5 GB"]
    assert [fmt_flops(n) for n in (200_000, 2_100_000, 134_217_728, 68_719_476_736)] == [
        "200 kFLOP", "2.1 MFLOP", "134 MFLOP", "68.7 GFLOP"]
