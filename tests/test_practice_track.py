"""Puzzles 19-21, the practitioner's lessons (strides, autotuning, multi-tensor apply): each reference passes,
each starter fails, and each classic mistake (a known-wrong kernel below) is caught for its own reason."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl

from puzzles import catalog, on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.solution_source import starter_source

TRACK = [catalog.get(n) for n in range(19, len(catalog.PUZZLES) + 1)]
interpreted_only = pytest.mark.skipif(on_gpu(), reason="needs the interpreter's recorded accesses")


def grade(number: int, kernel, **kwargs):
    return test(kernel, catalog.get(number).spec, quiet=True, seed=kwargs.pop("seed", 1234), **kwargs)


@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_reference_passes_at_every_size(p):
    result = test(p.reference(), p.spec, quiet=True)
    assert result.passed, str(result)


@interpreted_only
@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_starter_fails(p, load_kernel):
    result = test(load_kernel(starter_source(p), p.kernel_name), p.spec, quiet=True)
    assert not result.passed and "never written" in result.reason(), str(result)


# -- puzzle 19: strides ------------------------------------------------------------------------------------


@triton.jit
def grey_kernel_contiguous(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    pixel = x_ptr + j[:, None] * (3 * N0) + i[None, :] * 3  # assumes a packed N1 x N0 x 3 image
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + 1, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


@triton.jit
def grey_kernel_no_row_mask(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (i[None, :] < N0) & (j[:, None] >= 0)  # the columns are masked, the rows are not
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + SC, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2 * SC, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


def test_grey_is_graded_on_non_contiguous_views():
    from puzzles.layouts import storage_numel

    p = catalog.get(19)
    gaps = []
    for s in p.sizes:
        assert (s["S1"], s["S0"], s["SC"]) != (3 * s["N0"], 3, 1)  # never the packed layout
        gaps.append(storage_numel((s["N1"], s["N0"], 3), (s["S1"], s["S0"], s["SC"])) > 3 * s["N0"] * s["N1"])
    assert any(gaps) and not all(gaps)  # crops and padded rows leave gaps; a plain permute does not


def test_grey_assuming_a_contiguous_image_is_wrong():
    result = grade(19, grey_kernel_contiguous)
    assert not result.passed
    assert result.first_failure.status in ("wrong", "out of bounds"), str(result)
    assert all(not o.passed for o in result.outcomes)  # every layout the grader uses catches it


@interpreted_only
def test_grey_without_a_row_mask_reads_past_the_image():
    result = grade(19, grey_kernel_no_row_mask)
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "out of bounds", str(result)
    assert failure.sizes["N1"] % failure.sizes["B1"] != 0
    assert any(a.tensor in ("x", "z") for a in failure.invalid_accesses)
