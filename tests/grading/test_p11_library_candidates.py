"""Puzzle 11's fast-reference candidates against cuBLAS's TF32 bmm (benchmarks/p11_library.py, issue 52): each
has the puzzle's signature and grid, so `test()` grades it as any answer, at every size of the catalog, here on a
CPU (the grouped order and the swapped operands included); the lead times them on an H200."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from puzzles import test
from puzzles.course import catalog
from puzzles.running.kernel import unwrap_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import p11_library  # noqa: E402


@pytest.mark.parametrize("name", sorted(p11_library.CANDIDATES))
def test_each_candidate_is_a_drop_in_answer_that_passes(name):
    p = catalog.get(11)
    kernel, configs = p11_library.CANDIDATES[name]
    reference = unwrap_kernel(p.reference())
    assert list(inspect.signature(unwrap_kernel(kernel)).parameters) == list(inspect.signature(reference).parameters)
    result = test(kernel, p.spec, quiet=True)
    assert result.passed, str(result)
    assert configs and all(b0 >= 16 and b1 >= 16 and bk >= 16 for b0, b1, bk, _, _ in configs)


def test_bfloat16_tiles_are_no_candidate_they_fail_the_tolerance_for_their_rounding():
    result = test(p11_library.REJECTED["bf16"], catalog.get(11).spec, quiet=True)
    assert not result.passed and "the error that float16 or bfloat16 arithmetic makes" in str(result)


def test_the_candidates_include_the_searchs_best_and_tf32_with_the_operands_swapped():
    assert (128, 256, 64, 8, 3) in p11_library.CANDIDATES["fp16"][1]  # 0.482 ms in the search
    assert {"tf32", "tf32_swapped", "tf32_swapped_grouped"} <= set(p11_library.CANDIDATES)
    # Float32 tiles: 128 x 256 x 64 at 3 stages does not fit in shared memory (the search): not a TF32 candidate.
    assert (128, 256, 64, 8, 3) not in p11_library.CANDIDATES["tf32"][1]


def test_the_table_is_fastest_first_against_cublas_tf32():
    rows = [(0.5, "fp16", (128, 256, 64, 8, 3), 1e-3), (0.9, "tf32", (128, 128, 32, 8, 3), 2e-4)]
    text = p11_library.markdown(rows[::-1], 2.7, 0.406, "head")
    lines = text.splitlines()
    at = lines.index("| ms | vs cuBLAS TF32 | candidate | B0 x B1 x B_MID | warps | stages | max error / max |z| |")
    assert lines[at + 2].startswith("| 0.500 | 1.23 | fp16 | 128 x 256 x 64 | 8 | 3 |")
    assert "| torch.bmm, TF32 allowed (cuBLAS: the library op, the bar) | 0.406 |" in text
