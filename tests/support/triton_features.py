"""Tests of a puzzle whose kernels need a Triton API (Puzzle.needs_triton, every kernel of it: not a `call` that
only some kernels make) are skipped, with the verdict's own sentence, on a supported Triton that lacks it
(puzzle 31 on 3.5: its tl.range has no warp_specialize); the refusal itself is tested by faking the absence."""

from __future__ import annotations

import pytest

from puzzles.course.puzzle import Puzzle


def lacking(p: Puzzle) -> str:
    """Why the installed Triton cannot run `p`'s kernels ("" where it can)."""
    need = p.needs_triton
    return need.missing(p.number) if need is not None and not need.call else ""


def skip_if_lacking(p: Puzzle) -> None:
    why = lacking(p)
    if why:
        pytest.skip(why)


def marks_for(p: Puzzle) -> tuple:
    """A parametrize mark that skips `p`'s case where the installed Triton lacks its API."""
    why = lacking(p)
    return (pytest.mark.skip(reason=why),) if why else ()
