"""benchmarks/compile_baseline.py's table, from made-up rows on a CPU: the library column (issue 52), the bar the
speed goal is judged against (the fastest of eager torch, torch.compile and the library op where the goal counts
it) and the verdicts the markdown and the exit status give."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from compile_baseline import Row, markdown  # noqa: E402


def row(**times) -> Row:
    base = {"number": 28, "title": "Attention backward", "size": "T=8192, D=64", "reference_us": 3000.0,
            "fast_reference_us": 1264.0, "eager_us": 9000.0, "compiled_us": 2500.0, "floor_us": 300.0,
            "bound": "memory", "reference_error": 1e-4, "fast_reference_error": 1e-4, "notes": "",
            "library": "F.scaled_dot_product_attention backward (float32), float32", "library_us": 1993.0,
            "library_error": 1e-6, "library_in_goal": True}
    return Row(**{**base, **times})


def test_the_bar_is_the_fastest_a_user_would_run_and_the_best_reference_is_judged_against_it():
    ahead = row()
    assert ahead.bar_us == 1993.0 and ahead.best_vs_library == pytest.approx(1264 / 1993)
    assert not ahead.slower_than_bar and not ahead.slower_than_compiled
    behind = row(library_us=632.0)
    assert behind.bar_us == 632.0 and behind.slower_than_bar and not behind.slower_than_compiled
    # The goal's library_note: shown, but not the bar.
    noted = row(library_us=632.0, library_in_goal=False)
    assert noted.bar_us == 2500.0 and not noted.slower_than_bar
    # A goal of 2x: the bar's time halved.
    assert row(vs_bar=2.0).slower_than_bar


def test_the_markdown_has_the_library_column():
    text = markdown([row(), row(number=11, title="Batched matrix multiply", library_us=375.0,
                                fast_reference_us=826.0, library_in_goal=False, library="torch.bmm, float32"),
                     row(number=1, title="Constant add", library="", library_us=None, library_error=None)], "head")
    lines = text.splitlines()
    assert "| library op | library us |" in lines[1] and "best / library" in lines[1]
    assert "| F.scaled_dot_product_attention backward (float32), float32 | 1993.0 |" in lines[3]
    assert "| 0.63x |" in lines[3] and "1.0e-06 |" in lines[3]
    assert "| 2.20x (no goal) |" in lines[4]
    assert "| — | — |" in lines[5]  # no library op
