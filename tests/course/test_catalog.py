"""One source of truth: every puzzle's record, reference, starter and notebook agree."""

from __future__ import annotations

import inspect
import re

import pytest
import torch

from puzzles.course import catalog
from puzzles.course.solution_source import kernel_signature, reference_source, solution_line_count, starter_source
from puzzles.course.spec import spec_signature

ALL = catalog.all_puzzles()


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_signature_follows_the_course_convention(p):
    inputs, _ = spec_signature(p.spec)
    params = [q.strip().split(":")[0] for q in kernel_signature(p).split("(", 1)[1].rstrip(")").split(",")]
    # A tensor-list puzzle (21) passes tables of the lists instead of the spec's inputs.
    names = list(p.tensor_lists.pointers) if p.tensor_lists else [t.name for t in inputs]
    pointers = params[: len(names) + 1]
    assert all(name.endswith("_ptr") for name in pointers), pointers
    assert [name[: -len("_ptr")] for name in pointers[:-1]] == names
    sizes = params[len(names) + 1 :]
    for s in p.sizes:
        assert set(sizes) <= set(s), f"{p.id}: the kernel takes {sizes}, a size gives {sorted(s)}"


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_reference_starter_and_markers(p):
    starter, reference = starter_source(p), reference_source(p)
    assert "Finish me (about" in starter and "BEGIN SOLUTION" not in reference
    assert starter != reference and solution_line_count(p) >= 1
    assert starter.splitlines()[:2] == reference.splitlines()[:2]  # same decorator and signature


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_statement_sizes_and_hints(p):
    assert p.statement.strip() and len(p.hints) >= 2 and p.title
    assert p.spec.__doc__, "the spec's docstring states the formula"
    assert len({tuple(sorted(s.items())) for s in p.sizes}) == len(p.sizes) >= 3
    for name in p.unused_sizes:
        assert name in p.statement and "not used" in p.statement


def test_puzzle_numbers_are_contiguous():
    assert sorted(catalog.PUZZLES) == list(range(1, len(catalog.PUZZLES) + 1))


# Blocks a statement fixes (puzzle 11: "B2 is always 1"): there is no other value to grade.
FIXED_BLOCKS = {11: {"B2"}}


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_every_block_takes_two_values_across_the_graded_sizes(p):
    """A kernel that writes a block as a number where its argument belongs (`tl.arange(0, 16)` for `BM`, one
    shift word per `B_MID` chunk as if it were 64) is right wherever the sizes use that number: so each
    `tl.constexpr` of the kernel takes two values at least (the autotuned puzzle's come from the configs,
    which the grader runs, with two of its own)."""
    blocks = re.findall(r"(\w+)\s*:\s*tl\.constexpr", kernel_signature(p))
    for name in blocks:
        if name in FIXED_BLOCKS.get(p.number, set()) or name in (p.autotune or {}):
            continue
        values = {sizes[name] for sizes in p.sizes}
        assert len(values) >= 2, f"puzzle {p.number}: every graded size has {name} = {values.pop()}"


# Sizes a statement ties (puzzles 1 and 3: one program covers the vector, N0 = B0).
TIED_BY_STATEMENT = {1: {("N0", "B0")}, 3: {("N0", "B0"), ("N1", "B1")}}


def _tied(p, a: str, b: str) -> bool:
    return (a, b) in TIED_BY_STATEMENT.get(p.number, set()) or (b, a) in TIED_BY_STATEMENT.get(p.number, set())


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_no_two_sizes_are_equal_in_every_graded_size(p):
    """Two sizes equal in every graded size can be swapped in a kernel unseen (`tl.arange(0, B0)` where
    `B_MID` belongs), and test() takes them for a rule: given one, it sets the other to match."""
    keys = list(p.canonical)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if not _tied(p, a, b):
                assert any(s.get(a) != s.get(b) for s in p.sizes), f"puzzle {p.number}: {a} = {b} in every size"


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_each_blocks_axis_runs_several_programs_where_the_block_differs_from_each_other_block(p):
    """`m = tl.program_id(0) * BN + tl.arange(0, BM)` is right wherever axis 0 runs one program or BM = BN. So for
    each block that sets a grid axis (a block of 1, or twice the block, changes that axis) and each other
    `tl.constexpr`, some size runs two programs or more on the axis with the two blocks different."""
    blocks = re.findall(r"(\w+)\s*:\s*tl\.constexpr", kernel_signature(p))
    for block in blocks:
        if block in (p.autotune or {}) or any(_tied(p, block, k) for k in p.canonical):
            continue
        for other in blocks:
            if other == block:
                continue
            axes_seen = set()
            for s in p.sizes:
                grid = p.grid(s)
                probes = [p.grid({**s, block: value}) for value in (1, 2 * s[block])]  # the axis it sets changes
                axes = {a for a in range(len(grid)) for probe in probes if grid[a] != probe[a]}
                axes_seen |= axes
                if any(grid[a] >= 2 for a in axes) and s[block] != s[other]:
                    break
            else:
                assert not axes_seen, (f"puzzle {p.number}: no size runs two programs on the axis of {block} "
                                       f"with {block} != {other}")


@pytest.mark.parametrize("number", [2, 4, 5, 6, 7, 8, 9, 10, 11])
def test_a_size_that_is_not_a_multiple_of_its_block_is_tested(number):
    p = catalog.get(number)
    assert any(s[f"N{0}"] % s["B0"] or s.get("T", 0) % s.get("B1", 1) or s.get("MID", 0) % s.get("B_MID", 1)
               for s in p.sizes)


def test_known_defects_of_earlier_courses_are_fixed():
    # 9: B1 exists and every block is a power of two.
    assert "B1" in kernel_signature(catalog.get(9))
    for p in ALL:
        for s in p.sizes:
            for name, value in s.items():
                if name.startswith("B") or name in ("KH", "KW"):
                    assert value & (value - 1) == 0, f"{p.id}: {name}={value} is not a power of two"
    # 11: rectangular shapes with MID different from N0 and N1.
    assert any(s["MID"] not in (s["N0"], s["N1"]) and s["N0"] != s["N1"] for s in catalog.get(11).sizes)
    # 6: x and dz are N1 x N0.
    inputs, _ = spec_signature(catalog.get(6).spec)
    assert [t.dims for t in inputs] == [("N1", "N0"), ("N1",), ("N1", "N0")]
    # 12: group size stated, and MID varies (more than one shift word per row).
    assert "GROUP = 8" in catalog.get(12).statement and any(s["MID"] > 64 for s in catalog.get(12).sizes)


def test_specs_are_plain_functions_of_their_inputs():
    for p in ALL:
        params = inspect.signature(p.spec).parameters.values()
        tensors = [q.name for q in params if q.kind is not q.KEYWORD_ONLY]
        assert tensors == p.input_names
        # Keyword-only arguments are sizes the spec needs; every one must be a size.
        assert all(q.name in p.canonical for q in params if q.kind is q.KEYWORD_ONLY)


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_spec_runs_on_any_device(p):
    # The GPU benchmark runs each spec on CUDA tensors; a spec that makes a CPU tensor fails
    # there. Meta tensors catch that here: mixing them with CPU tensors raises.
    from puzzles.course.spec import call_spec
    from puzzles.grading.inputs import draw_inputs

    inputs, out = draw_inputs(p.spec, p.canonical, seed=0, device="meta")
    result = call_spec(p.spec, inputs, p.canonical)
    assert result.shape == out.shape and result.dtype == out.dtype
    if inputs:  # a spec of sizes alone (puzzle 16) has no device to follow
        assert result.device.type == "meta"


def test_readme_lists_every_puzzle():
    from puzzles.course.solution_source import ROOT

    readme = (ROOT / "README.md").read_text()
    for p in ALL:
        row = f"| {p.number:02d} | [{p.title}](notebooks/{p.id}.ipynb) | `{p.kernel_name}` |"
        assert row in readme, f"README.md lacks the row: {row}"


TIGHT = [p for p in catalog.all_puzzles() if p.rtol <= 1e-4]


@pytest.mark.parametrize("p", TIGHT, ids=lambda p: p.id)
def test_a_tight_tolerance_leaves_a_float32_kernel_ten_times_room(p):
    """Where a puzzle's tolerance is tight enough to fail float16 arithmetic, the exact answer (the spec in
    float64, rounded once to the output's type: what a GPU's fused multiply-adds and any other summation
    order in float32 approach) passes a tenth of it at every graded size and five seeds."""
    import dataclasses

    from puzzles.course.spec import call_spec
    from puzzles.grading.cases import case_from_spec
    from puzzles.grading.judging import values_close
    from puzzles.grading.tensor_lists import TensorLists

    checked = 0
    for index, sizes in enumerate(p.sizes):
        for seed in range(5):
            case = case_from_spec(p.spec, p, sizes, seed, index)
            if case.contiguous_expected is not None:  # strided inputs: the arena holds their storage, not views
                continue
            if p.tensor_lists is not None:  # one allocation per tensor: the spec takes each list end to end
                count = len(TensorLists.lengths(sizes))
                inputs = [torch.cat([case.arena.tensors[f"{name}[{k}]"] for k in range(count)])
                          for name in p.tensor_lists.lists]
            else:
                inputs = [case.arena.tensors[name] for name in case.input_names]
            exact = call_spec(p.spec, [t.double() if t.is_floating_point() else t for t in inputs], sizes)
            tenth = dataclasses.replace(case, rtol=case.rtol / 10, atol=case.atol / 10)
            assert values_close(exact.to(case.expected.dtype), case.expected, tenth).all(), (sizes, seed)
            checked += 1
    if not checked:
        pytest.skip("strided inputs: checked by the float32 variants of tests/grading/test_judging_holes.py")


def test_a_spec_cell_keeps_its_constants_together():
    """Constants one after another stay on consecutive lines (puzzle 12's FPINT and GROUP); a function still
    has two blank lines before it."""
    from puzzles.course.notebooks import spec_source

    source = spec_source(catalog.get(12))
    assert "FPINT = 8  # 4-bit values per int32 word\nGROUP = 8" in source, source
    assert "\n\n\ndef unpack_nibbles(" in source and "\n\n\ndef quant_dot_spec(" in source, source
