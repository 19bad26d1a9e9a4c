"""The grader's hooks into Triton's interpreter are found, installed and effective on the running Triton.

The hooks are private internals located by what they receive (puzzles/running/interpreter_hooks.py); a hook
silently absent once judged correct kernels wrong (Triton 3.8 renamed the load that sees `other=`). Each test
here grades a kernel whose verdict depends on one hook. `make versions` runs this file under every supported
Triton."""

from __future__ import annotations

import p02_constant_add_block as p02
import pytest
import torch
import triton

from puzzles import test
from puzzles.course import catalog
from puzzles.running import compat, interpreter_hooks
from puzzles.running.interpreter import interpreted
from puzzles.running.recording import Recorder, Trace
from puzzles.submissions.kernel_body import kernel_body_error

pytestmark = pytest.mark.interpreter("grades under the interpreter, whose hooks are tested here")
descriptors = pytest.mark.skipif(not interpreter_hooks.has_tensor_descriptors(),
                                 reason=f"triton {triton.__version__}'s interpreter has no tensor descriptors")


def grade(number: int, kernel, sizes=None):
    p = catalog.get(number)
    return test(kernel, p.spec, sizes=sizes, quiet=True, seed=5, compile_check=False)


def one_lane_sizes() -> list[dict[str, int]]:
    return [{**s, "B0": 1} for s in catalog.get(2).sizes[:2]]


def test_every_hook_is_found_on_this_triton():
    assert interpreter_hooks.hooks_problem() is None
    hooks = interpreter_hooks.locate()
    assert set(hooks.builder_methods) == set(interpreter_hooks.BUILDER_METHODS)
    assert hooks.load_methods and hooks.patch_lang


def test_the_hooks_are_in_place_during_a_run_and_gone_after():
    from triton.runtime import interpreter

    hooks = interpreter_hooks.locate()
    builder = interpreter.interpreter_builder
    before = {name: getattr(builder, name) for name in hooks.builder_methods.values()}
    loads_before = {name: getattr(hooks.semantic_class, name) for name in hooks.load_methods}
    trace = Trace({}, (1, 1, 1))
    with Recorder([], {}, set(), trace, None):
        assert all(getattr(builder, name) != fn for name, fn in before.items())
        assert all(getattr(hooks.semantic_class, name) is not fn for name, fn in loads_before.items())
    assert {name: getattr(builder, name) for name in before} == before
    assert {name: getattr(hooks.semantic_class, name) for name in loads_before} == loads_before


def test_a_one_lane_load_with_other_zero_passes():
    result = grade(2, p02.add_reading_the_next_one, one_lane_sizes())
    assert result.passed, str(result)


def test_a_one_lane_masked_load_without_other_is_named():
    result = grade(2, p02.add_reading_the_next_one_without_other, one_lane_sizes())
    assert not result.passed and "masked loads without other=" in str(result), str(result)


def test_a_store_past_the_end_is_out_of_bounds():
    result = grade(2, p02.add_stored_without_mask)
    assert not result.passed and "store of z" in str(result) and "out of bounds" in str(result), str(result)


def test_atomics_are_checked():
    assert grade(2, p02.add_exchanged).passed
    result = grade(2, p02.add_exchanged_without_mask)
    assert not result.passed and "atomic of z" in str(result) and "out of bounds" in str(result), str(result)


@descriptors
@pytest.mark.parametrize(("kernel", "op"), [(p02.add_descriptor_past_x, "load of x"),
                                            (p02.add_descriptor_past_z, "store of z")])
def test_a_descriptor_past_its_tensor_is_out_of_bounds(kernel, op):
    result = grade(2, kernel)
    assert not result.passed and op in str(result) and "out of bounds" in str(result), str(result)


@descriptors
def test_outputs_a_descriptor_never_writes_are_judged():
    result = grade(2, p02.add_descriptor_first_block_only)
    assert not result.passed and "z[32]" in str(result), str(result)


# -- the language patch the launcher applies is the one the grader undoes --------------------------------------------
def test_the_launcher_calls_the_patch_function_found(monkeypatch):
    from triton.runtime import interpreter

    name = interpreter_hooks.locate().patch_lang
    original, calls = getattr(interpreter, name), []
    monkeypatch.setattr(interpreter, name, lambda fn: calls.append(fn) or original(fn))
    x = torch.zeros(4)
    interpreted(p02.add_stored_without_mask)[(1,)](x, x, 4, B0=4)
    assert calls and torch.equal(x, torch.full((4,), 10.0))
    # Triton 3.5 leaves that launch's patches in place (tl.arange is the interpreter's then): the kernel-body rules
    # still take them for Triton's own.
    assert kernel_body_error(catalog.get(2).reference()) is None


# -- a Triton where a hook is missing is refused in words --------------------------------------------------------------
def test_grading_stops_where_a_hook_is_missing(monkeypatch):
    monkeypatch.setattr(interpreter_hooks, "LOAD_WITH_OTHER", ("pointer_never_named_so",))
    interpreter_hooks.locate.cache_clear()
    try:
        result = grade(2, catalog.get(2).reference())
        text = str(result)
    finally:
        monkeypatch.undo()
        interpreter_hooks.locate.cache_clear()
    assert not result.passed and result.error.kind == "setup", text
    assert f"triton {triton.__version__}" in text and compat.SUPPORTED in text and compat.INSTALL in text, text
    assert "the language layer's load taking (ptr, mask, other, ...)" in text, text


def create_masked_load_elsewhere(self, ptrs, mask):
    return _interpreter.load(ptrs.data, mask.data)  # noqa: F821 - only its source is read


def test_a_builder_method_reaching_memory_around_the_checked_ones_is_refused(monkeypatch):
    from triton.runtime import interpreter

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_masked_load_elsewhere", create_masked_load_elsewhere,
                        raising=False)
    interpreter_hooks.locate.cache_clear()
    try:
        problem = interpreter_hooks.hooks_problem()
    finally:
        monkeypatch.undo()
        interpreter_hooks.locate.cache_clear()
    assert problem and "reach memory around the checked ones: create_masked_load_elsewhere" in problem, problem


def test_a_block_pointer_gets_its_replacement_or_passes():
    result = grade(2, p02.add_block_pointer_advanced)
    if interpreter_hooks.has_block_pointers():
        assert result.passed, str(result)
        return
    text, error = str(result), result.first_failure.error
    assert not result.passed and error.line is not None and "make_block_ptr" in error.source, text
    assert "tl.make_tensor_descriptor(x_ptr, shape=" in text and "NotImplementedError" not in text, text


@pytest.mark.parametrize("message", [
    "NotImplementedError: Block pointers have been removed in favor of the tensor descriptor API",
    "AttributeError: module 'triton.language' has no attribute 'advance'"])
def test_triton_39s_block_pointer_errors_are_told_what_replaces_them(message, monkeypatch):
    from puzzles.running import errors

    monkeypatch.setattr(interpreter_hooks, "has_block_pointers", lambda: False)
    assert errors.uses_removed_block_pointers(message)
    assert "tl.make_tensor_descriptor" in errors.block_pointers_removed()
    # The advice for a descriptor's unaligned strides offers block pointers only where they exist.
    assert "make_block_ptr" not in errors.descriptor_strides()
    monkeypatch.setattr(interpreter_hooks, "has_block_pointers", lambda: True)
    assert "make_block_ptr" in errors.descriptor_strides()


def test_doctor_says_what_this_triton_runs(monkeypatch):
    from puzzles.cli import doctor

    (ok, runs), (hooks_ok, hooks) = doctor.what_triton_supports()
    assert ok and hooks_ok and f"triton {triton.__version__}" in runs, runs
    blocks = "yes" if interpreter_hooks.has_block_pointers() else "no (removed in 3.9"
    assert f"block pointers (tl.make_block_ptr) {blocks}" in runs and "tensor descriptors" in runs, runs
    assert "tl.dot_scaled under the interpreter" in runs and "triton-viz" in runs, runs
    monkeypatch.setattr(interpreter_hooks, "hooks_problem", lambda: "the grader cannot check kernels on triton x")
    assert doctor.what_triton_supports()[-1] == (False, "the grader cannot check kernels on triton x")


def test_a_name_of_ones_own_called_advance_is_not_taken_for_a_block_pointer(monkeypatch):
    from puzzles.running import errors

    monkeypatch.setattr(interpreter_hooks, "has_block_pointers", lambda: False)
    assert not errors.uses_removed_block_pointers("NameError: name 'advance' is not defined")
