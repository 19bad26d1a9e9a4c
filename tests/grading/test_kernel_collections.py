"""The tests' kernels, one collection per puzzle (tests/kernels/pNN_<slug>.py; a package where it outgrew one file):
nothing else lives in tests/kernels/, every puzzle has its collection with at least one right answer in another
style, and every kernel in it takes its puzzle's signature, so that a kernel fails, where it fails, for the reason
its test names and never for being called wrongly. A kernel whose wrong signature is the point is listed in its
collection's `SIGNATURE_MISTAKES` (and must fail the signature step); a kernel never graded itself (a helper, or a
kernel whose flags a wrapper sets) in its `BUILDING_BLOCKS`. A forbidden call is a rule, not a signature: the
rules' own tests (tests/submissions/test_rules.py) judge those."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_collections import all_collections, modules_of

from puzzles.course import catalog
from puzzles.grading.job import make_job
from puzzles.grading.signature import check_kernel
from puzzles.running.kernel import kernel_file, own_jit_function

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
COLLECTIONS = all_collections()


def kernels_of(module) -> list[tuple[str, object]]:
    """The module's own kernels, less its helpers (`_name`, or listed in `BUILDING_BLOCKS`)."""
    blocks = {kernel_name(k) for k in getattr(module, "BUILDING_BLOCKS", ())}
    return [(name, value) for name, value in vars(module).items()
            if own_jit_function(value) is not None and not name.startswith("_") and name not in blocks
            and kernel_file(value) == module.__file__]


def kernel_name(kernel) -> str:
    return own_jit_function(kernel).__name__


KERNELS_BY_PUZZLE = [pytest.param(number, name, kernel, id=f"{number}-{name}")
                     for number, collection in COLLECTIONS.items() for module in modules_of(collection)
                     for name, kernel in kernels_of(module)]


def test_tests_kernels_holds_one_collection_per_puzzle_and_nothing_else():
    ids = {f"p{p.id}" for p in catalog.all_puzzles()}
    entries = {p.stem if p.suffix == ".py" else p.name for p in KERNELS.iterdir() if p.name != "__pycache__"}
    assert entries == ids


def test_every_puzzle_has_a_right_answer_in_another_style():
    assert [number for number, module in COLLECTIONS.items() if not getattr(module, "CORRECT", ())] == []


@pytest.mark.parametrize(("number", "name", "kernel"), KERNELS_BY_PUZZLE)
def test_each_kernel_takes_its_puzzles_signature(number, name, kernel):
    problem = check_kernel(make_job(kernel, None, number))
    wrong_signature = problem is not None and problem.kind == "signature"
    if name in getattr(COLLECTIONS[number], "SIGNATURE_MISTAKES", ()):
        assert wrong_signature, f"{name} is listed as a signature mistake but takes the signature"
    else:
        assert not wrong_signature, problem.message
