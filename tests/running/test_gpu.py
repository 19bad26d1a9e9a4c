"""On a CUDA GPU: kernels compile and are graded for real; speed is reported. Skipped without a GPU."""

from __future__ import annotations

import p02_constant_add_block as p02
import p08_long_softmax as p08
import p09_simple_flash_attention as p09
import pytest
import torch

from puzzles import test
from puzzles.course import catalog

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("p", catalog.all_puzzles(), ids=lambda p: p.id)
def test_reference_compiles_and_passes(p):
    result = test(p.reference(), p.spec, quiet=True)
    assert result.passed, str(result)
    assert "compiled" in result.device


def test_missing_mask_is_reported_with_program_and_line():
    result = test(p02.add_mask2_kernel_no_mask, catalog.get(2).spec, quiet=True)
    failure = result.first_failure
    assert failure.status == "out of bounds"
    first = failure.invalid_accesses[0]
    assert (first.op, first.tensor, first.element, first.program) == ("load", "x", 200, (6, 0, 0))


def test_guard_zones_alone_catch_a_wild_store():
    result = test(p02.add_mask2_kernel_no_mask, catalog.get(2).spec, quiet=True, record=False)
    failure = result.first_failure
    assert failure.status == "out of bounds" and "outside z" in failure.reason()


def test_compile_error_points_at_the_line(load_kernel):
    kernel = load_kernel("""
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0 + 1)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets))
""", "add_kernel")
    failure = test(kernel, catalog.get(1).spec, quiet=True).first_failure
    assert failure.status == "error" and "power of 2" in failure.error.message.lower() + failure.error.describe()


@pytest.mark.parametrize("number", [2, 8, 11])
def test_speed_is_reported_against_the_device_limits(number):
    p = catalog.get(number)
    result = test(p.reference(), p.spec, quiet=True, perf=True)
    report = result.perf
    assert report is not None and report.ms > 0 and report.torch_ms > 0
    assert 0 < report.roofline_fraction <= 1.2, report.text()
    assert "roofline" in str(result)
    torch.cuda.synchronize()


def test_an_endless_loop_the_compiler_removed_still_fails_with_a_timeout():
    # The compiled loop `i = 0; while i < 1: i = i * 1` has no effect and is removed; only the
    # interpreter's access check runs it, forever: that timeout is the verdict, at one size.
    result = test(p02.add_mask2_kernel_forever, catalog.get(2).spec, quiet=True, timeout=2)
    assert not result.passed
    first = result.outcomes[0]
    assert first.status == "timeout" and "timeout=" in first.reason() and "N0=200" in first.reason()
    assert all(o.status == "not run" for o in result.outcomes[1:])
    assert result.seconds < 30


@pytest.mark.parametrize(("kernel", "number"), [
    (p08.softmax_kernel_masked_zero, 8),
    (p08.softmax_kernel_unstable, 8),
    (p08.softmax_kernel_no_rescale, 8),
    (p09.flashatt_kernel_no_rescale, 9),
    (p09.flashatt_kernel_no_maximum, 9),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_known_bugs_fail_compiled_at_every_seed(kernel, number):
    # The shaped inputs of puzzles 8 and 9 (puzzles/course/bug_inputs.py) must catch these compiled too.
    for seed in range(1000, 1010):
        result = test(kernel, catalog.get(number).spec, quiet=True, seed=seed)
        assert not result.passed, f"seed {seed} passed"
        assert result.first_failure.status == "wrong", str(result)
