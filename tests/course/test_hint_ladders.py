"""Puzzles 22-28 give hints as a ladder (issue 48): the idea, then the shape of the code, then one key line. The
whole kernel is the reference's job: together the hints reproduce at most two of its lines. The other ways
that puzzle 26's and puzzle 28's statements allow pass the grader."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import p26_layernorm_backward as p26
import p28_attention_backward as p28
import pytest

from puzzles import test
from puzzles.course import catalog

LADDERS = range(22, 29)
RUNGS = ("The idea", "The shape", "One key line")
# Lines of the reference that the hints may spell out, all of them together: the key line (and, say, its twin).
MOST_REFERENCE_LINES = 2
_ASSIGNMENT = re.compile(r"^[\w\s,\[\]:]+?\s*(?:[-+*/]?=)\s*(?!=)(.+)$")


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def solution_lines(number: int) -> list[str]:
    """The reference's lines between its markers, without comments, long enough to say something."""
    source = Path(importlib.import_module(catalog.get(number).solution_module).__file__).read_text()
    body = source.split("# BEGIN SOLUTION", 1)[1].split("# END SOLUTION", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in body.splitlines()]
    return [line for line in lines if len(squeezed(line)) >= 16]


def reproduced(number: int) -> list[str]:
    """The reference's lines that the hints spell out: the line, or the right-hand side of an assignment."""
    hints = squeezed(" ".join(catalog.get(number).hints).replace("`", ""))
    found = []
    for line in solution_lines(number):
        assignment = _ASSIGNMENT.match(line)
        value = assignment.group(1) if assignment else ""
        if squeezed(line) in hints or (len(squeezed(value)) >= 16 and squeezed(value) in hints):
            found.append(line)
    return found


@pytest.mark.parametrize("number", LADDERS)
def test_the_hints_are_a_ladder_idea_shape_key_line(number):
    hints = catalog.get(number).hints
    assert [h.split(":", 1)[0].split(",", 1)[0] for h in hints] == list(RUNGS), hints


@pytest.mark.parametrize("number", LADDERS)
def test_the_hints_leave_the_kernel_to_the_learner(number):
    lines = reproduced(number)
    assert len(lines) <= MOST_REFERENCE_LINES, f"puzzle {number}'s hints spell out {len(lines)} lines: {lines}"


def test_the_check_sees_a_hint_that_copies_the_reference():
    # the check itself: puzzle 22's reference pasted into a hint is found, line by line
    p = catalog.get(22)
    copied = "\n".join(solution_lines(22))
    assert len(solution_lines(22)) > MOST_REFERENCE_LINES
    original = p.hints
    object.__setattr__(p, "hints", (*original, f"`{copied}`"))
    try:
        assert len(reproduced(22)) == len(solution_lines(22))
    finally:
        object.__setattr__(p, "hints", original)


@pytest.mark.parametrize(("number", "kernel"), [(26, p26.layernorm_backward_kernel_one_program_sums),
                                                (28, p28.attention_backward_kernel_two_walks)],
                         ids=["26_one_program_sums", "28_two_walks"])
def test_the_other_way_each_statement_names_passes(number, kernel):
    result = test(kernel, puzzle=number, quiet=True, seed=1)
    assert result.passed, str(result)
