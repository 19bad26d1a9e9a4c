"""The autograder: references pass, starters fail, and each known mistake fails for its own reason."""

from __future__ import annotations

import html
import time

import p01_constant_add as p01
import p02_constant_add_block as p02
import p04_outer_vector_add_block as p04
import p05_fused_outer_multiply as p05
import p08_long_softmax as p08
import p09_simple_flash_attention as p09
import pytest
import torch
from triton_features import skip_if_lacking

from puzzles import test
from puzzles.course import catalog
from puzzles.course.solution_source import starter_source
from puzzles.grading.inputs import build_arena, poison_, random_tensor, unwritten_mask
from puzzles.grading.job import size_list, unknown_sizes_note

# Debugging and the in-process interpreter path exist only where kernels are interpreted; on a GPU
# tests/running/test_gpu.py grades the same kernels compiled.
interpreted_only = pytest.mark.interpreter("runs the interpreter in-process")

ALL = catalog.all_puzzles()


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_reference_passes_at_every_size(p):
    skip_if_lacking(p)
    result = test(p.reference(), p.spec, quiet=True)
    assert result.passed, str(result)
    expected = [dict(s) for s in p.sizes]
    if p.autotune:  # every size under every config, the config's meta-parameters in the sizes
        expected = [{**s, **c.kwargs, "num_warps": c.num_warps} for c in p.reference().configs for s in p.sizes]
        # then under two configs of the grader's own (puzzles/grading/configs.py), at every size too
        assert [o.sizes for o in result.outcomes[: len(expected)]] == expected
        assert len(result.outcomes) == len(expected) + 2 * len(p.sizes)
        expected = [o.sizes for o in result.outcomes]
    assert [o.sizes for o in result.outcomes] == expected
    assert len(p.sizes) >= 3


@pytest.mark.parametrize("p", ALL, ids=lambda p: p.id)
def test_starter_fails(p, load_kernel):
    skip_if_lacking(p)
    starter = load_kernel(starter_source(p), p.kernel_name)
    result = test(starter, p.spec, quiet=True)
    assert not result.passed
    assert result.first_failure.status in {"unwritten", "wrong"}, str(result)


def _grade(kernel, number, **kwargs):
    """Without the compile check unless asked (its verdicts: tests/running/test_compile_check.py; the judging is the
    same)."""
    kwargs.setdefault("compile_check", False)
    return test(kernel, catalog.get(number).spec, quiet=True, **kwargs)


def test_missing_mask_is_out_of_bounds_with_program_element_and_line():
    result = _grade(p02.add_mask2_kernel_no_mask, 2)
    failure = result.first_failure
    assert failure.status == "out of bounds"
    first = failure.invalid_accesses[0]
    assert (first.op, first.tensor, first.element, first.program) == ("load", "x", 200, (6, 0, 0))
    assert first.count == 24 and "tl.load(x_ptr + offsets)" in first.source
    assert any(a.op == "store" and a.tensor == "z" for a in failure.invalid_accesses)
    # The size that is a multiple of the block passes: the verdict is per size.
    assert [o.passed for o in result.outcomes] == [False, False, False, True]


def test_hard_coded_size_fails_at_other_sizes():
    result = _grade(p02.add_mask2_kernel_hard_coded, 2)
    assert result.outcomes[0].passed  # right at the canonical size only
    assert {o.status for o in result.outcomes[1:]} <= {"out of bounds", "unwritten"}
    assert not result.passed


def test_unwritten_tail_is_reported_as_never_written():
    failure = _grade(p02.add_mask2_kernel_unwritten_tail, 2).first_failure
    assert failure.status == "unwritten"
    assert failure.unwritten_count == 8 and failure.unwritten[0] == (192,)
    assert failure.mismatch_count == 0


def test_off_by_one_block_offset_leaves_the_first_block_unwritten():
    failure = _grade(p02.add_mask2_kernel_off_by_one, 2).first_failure
    assert failure.status == "unwritten" and failure.unwritten[0] == (0,)


def test_swapped_strides_give_wrong_values_with_coordinates():
    failure = _grade(p04.add_vec_block_kernel_swapped, 4).first_failure
    assert failure.status == "wrong"
    m = failure.mismatches[0]
    assert len(m.index) == 2 and m.expected != pytest.approx(m.got)


def test_missing_relu_fails_because_inputs_are_centred_on_zero():
    failure = _grade(p05.mul_relu_block_kernel_no_relu, 5).first_failure
    assert failure.status == "wrong" and failure.mismatches[0].expected == 0


def test_unstable_softmax_fails_on_large_inputs():
    result = _grade(p08.softmax_kernel_unstable, 8)
    assert result.outcomes[0].passed and result.outcomes[-1].status == "wrong"


def test_exception_inside_the_kernel_points_at_the_learners_line():
    failure = _grade(p02.add_mask2_kernel_raises, 2).first_failure
    assert failure.status == "error"
    assert "power of 2" in failure.error.message
    assert "tl.arange(0, B0 + 1)" in failure.error.source
    assert "harness" not in str(failure.error.describe())


@pytest.mark.parametrize("isolate", [True, False], ids=["child", "in-process"])
def test_endless_loop_is_stopped_and_the_process_survives(isolate):
    started = time.perf_counter()
    result = _grade(p02.add_mask2_kernel_forever, 2, timeout=1.5, isolate=isolate)
    assert time.perf_counter() - started < 10
    assert result.outcomes[0].status == "timeout"
    reason = result.outcomes[0].reason()
    assert "time limit of 1.5 s at N0=200 B0=32" in reason and "timeout=" in reason
    assert "i = i * 1" in reason or "while i < 1" in reason  # the line the kernel was on
    assert all(o.status == "not run" for o in result.outcomes[1:])
    assert _grade(catalog.get(2).reference(), 2).passed  # still usable afterwards


def test_out_of_bounds_writes_in_process_are_blocked_not_performed():
    # Without the child process the guard alone must keep memory intact.
    before = torch.arange(10)
    result = _grade(p02.add_mask2_kernel_no_mask, 2, isolate=False)
    assert result.first_failure.status == "out of bounds"
    assert torch.equal(before, torch.arange(10))


def test_wrong_signature_names_the_parameter_and_the_expected_signature():
    result = _grade(p02.add_mask2_kernel_wrong_signature, 2)
    assert result.error.kind == "signature"
    assert "'N'" in result.error.message
    assert "add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr)" in result.error.message


@pytest.mark.parametrize(("number", "body", "says"), [
    (1, "    offsets = tl.arange(0, N0)\n", "a block size declared `B0: tl.constexpr`"),
    (1, "    offsets = tl.arange(0, 24)\n", "a block's length must be a power of two"),
    (2, "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n    offsets = offsets + tl.arange(0, 2 * B0)\n",
     "x[:, None] for a column"),
    (2, "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n    first = offsets[0]\n",
     "a block has no element access by position"),
    (2, "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n    offsets = torch.maximum(offsets, 0)\n",
     "torch's functions work on torch tensors, not on a kernel's blocks"),
])
def test_tritons_usual_errors_say_what_to_write_instead(load_kernel, number, body, says):
    name = catalog.get(number).kernel_name
    source = (f"@triton.jit\ndef {name}(x_ptr, z_ptr, N0, B0: tl.constexpr):\n{body}"
              "    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)\n")
    result = _grade(load_kernel(source, name), number, compile_check=False)
    failure = result.first_failure
    assert failure.status == "error" and says in failure.error.message, str(result)
    # Each explanation once: the table's other sizes do not repeat it.
    assert str(result).count(says) == 1 and result._repr_html_().count(html.escape(says)) == 1, str(result)


def test_the_compilers_words_for_the_same_mistakes_get_the_same_advice_and_a_line(load_kernel):
    """On a GPU the kernel is compiled, not interpreted: Triton's compiler words these mistakes differently, and
    its "Unsupported function referenced" names no line; the learner still gets the advice and the line."""
    from puzzles.running.errors import error_from_exception, triton_error_hint

    assert "no element access by position" in triton_error_hint(
        "CompilationError: unsupported tensor index: constexpr[0]", "    first = offsets[0]\n")
    # A pointer indexed like an array, in Triton 3.6's compiler's words (the GPU machines) and the interpreter's.
    pointer_index = "    x = x_ptr[offsets]\n"
    assert triton_error_hint("Did you forget to add @triton.jit ? (`_semantic` argument must be provided outside of "
                             "JIT functions.)", pointer_index) == triton_error_hint(
        "TypeError: 'int' object is not iterable", pointer_index) != ""
    name = catalog.get(2).kernel_name
    source = (f"@triton.jit\ndef {name}(x_ptr, z_ptr, N0, B0: tl.constexpr):\n"
              "    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)\n"
              "    offsets = torch.maximum(offsets, 0)\n"
              "    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)\n")
    kernel = load_kernel(source, name)
    error = error_from_exception(
        RuntimeError("Unsupported function referenced: <built-in method maximum of type object at 0x7f5b8073e180>"),
        kernel)
    assert "torch's functions work on torch tensors, not on a kernel's blocks" in error.message
    assert "torch.maximum(offsets, 0)" in error.source and error.line is not None
    # At another block size the compiler calls torch.maximum on a block instead: the same advice, so the
    # verdict's table says it once.
    other = "CompilationError: TypeError(\"maximum(): argument 'input' (position 1) must be Tensor, not tensor\")"
    assert triton_error_hint(other, error.source) == triton_error_hint(error.message, error.source)


def test_a_kernel_graded_against_another_puzzles_spec_is_told_so():
    # Puzzle 2's kernel graded with puzzle 1's spec (copied from the wrong notebook): it may even pass there.
    result = test(catalog.get(2).reference(), catalog.get(1).spec, quiet=True)
    assert "add_mask2_kernel is the kernel of puzzle 2" in str(result)
    assert "test(add_mask2_kernel, add2_spec, ...)" in str(result)
    assert not any("kernel of puzzle" in n for n in _grade(catalog.get(2).reference(), 2).notes)


def test_block_size_must_be_constexpr(load_kernel):
    kernel = load_kernel("@triton.jit\ndef add_kernel(x_ptr, z_ptr, N0, B0):\n    pass\n", "add_kernel")
    result = _grade(kernel, 1)
    assert result.error.kind == "signature" and "B0: tl.constexpr" in result.error.message


def test_a_plain_function_is_not_a_kernel():
    result = _grade(p01.add_kernel_not_jitted, 1)
    assert result.error.kind == "signature" and "@triton.jit" in result.error.message
    assert "<function" not in str(result) and "add_kernel_not_jitted" in result.kernel
    assert "expected: add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr)" in result.error.message


@pytest.mark.parametrize(("kernel", "number", "says"), [
    (p02.add_mask2_kernel_no_size, 2, "no parameter N0"),
    (p02.add_mask2_kernel_no_output, 2, "N0 where the pointer z_ptr belongs"),
    (p01.add_kernel_swapped_pointers, 1, "(z_ptr, x_ptr)"),
    (p01.add_kernel_not_jitted, 1, "@triton.jit"),
], ids=["missing-size", "missing-output", "swapped-pointers", "not-jitted"])
def test_each_signature_mistake_gets_the_expected_signature(kernel, number, says):
    result = _grade(kernel, number)
    assert result.error is not None and result.error.kind == "signature", str(result)
    assert says in result.error.message
    assert "expected: " + catalog.get(number).expected_signature() in result.error.message
    assert "Error" not in result.error.message  # never an exception from inside Triton


def test_lite_signature_variant_without_unused_sizes_passes(load_kernel):
    # Pass only the sizes a kernel declares: a kernel without N1 still runs for puzzle 7.
    source = """
@triton.jit
def sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)
"""
    assert _grade(load_kernel(source, "sum_kernel"), 7).passed


def test_kernel_output_is_captured_per_size(load_kernel):
    source = """
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    print("hello from the kernel")
"""
    result = _grade(load_kernel(source, "add_kernel"), 1)
    assert "hello from the kernel" in result.outcomes[0].stdout
    assert "kernel printed" in str(result)


def test_store_into_an_input_is_reported(load_kernel):
    source = """
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)
    tl.store(x_ptr + offsets, x + 10.0)
    tl.store(z_ptr + offsets, x + 10.0)
"""
    result = _grade(load_kernel(source, "add_kernel"), 1)
    failure = result.first_failure
    assert failure.status == "store into input"  # in bounds: named for what it is
    assert "writes into an input" in failure.invalid_accesses[0].describe()
    assert "stores into its input x" in failure.reason() and "out-of-bounds" not in failure.reason()
    assert "out of bounds" not in str(result)


def test_same_seed_same_inputs_and_failures():
    a = _grade(p04.add_vec_block_kernel_swapped, 4, seed=1234)
    b = _grade(p04.add_vec_block_kernel_swapped, 4, seed=1234)
    assert a.seed == b.seed == 1234
    assert a.first_failure.mismatches == b.first_failure.mismatches
    assert "seed=1234" in str(a)


def test_nelem_and_block_override_the_canonical_size():
    p = catalog.get(2)
    result = test(p.reference(), p.spec, nelem={"N0": 77}, B={"B0": 8}, quiet=True)
    assert result.outcomes[0].sizes == {"N0": 77, "B0": 8} and result.passed
    assert not any("not a size" in n for n in result.notes)


def test_a_grading_cell_with_edited_sizes_still_grades_every_canonical_size():
    """Puzzle 19's cell edited to another size: the crop layout (S0=3, SC=1, the first canonical size) is still
    graded, each canonical size with its own inputs, and the cell's size is graded first."""
    p = catalog.get(19)
    edited = {"N0": 25, "N1": 7}
    result = test(p.reference(), p.spec, nelem=edited, quiet=True, seed=5)
    graded = [o.sizes for o in result.outcomes]
    assert graded == [{**p.canonical, **edited}, *p.sizes], graded
    assert result.passed and not result.partial and str(result).startswith("PASSED Puzzle 19"), str(result)
    plain = test(p.reference(), p.spec, quiet=True, seed=5)  # the same inputs at the canonical sizes
    assert all(torch.equal(a.expected, b.expected) for a, b in zip(result.outcomes[1:], plain.outcomes, strict=True))
    assert size_list(p, {"N0": 20}, None, None) == list(p.sizes)  # the canonical value itself: no extra size


def test_sizes_given_on_purpose_are_said_not_to_be_a_pass_of_the_puzzle():
    p = catalog.get(19)
    result = test(p.reference(), p.spec, sizes=[p.sizes[1]], quiet=True)
    assert result.passed and [o.sizes for o in result.outcomes] == [p.sizes[1]]
    assert "not a pass of puzzle 19" in result.partial and "S0=3 SC=1" in result.partial, result.partial
    assert str(result).startswith("PASSED ONLY THE SIZES GIVEN") and "not a pass of puzzle 19" in str(result)
    assert "Passed only the sizes given" in result._repr_html_()
    assert not test(p.reference(), p.spec, sizes=list(p.sizes), quiet=True).partial  # every size: a pass


def test_a_size_name_the_puzzle_does_not_have_is_named():
    p = catalog.get(2)
    result = test(p.reference(), p.spec, nelem={"n0": 77}, quiet=True)  # a typo: n0 for N0
    assert "n0 is not a size of puzzle 2, so it changed nothing; its sizes are N0, B0" in result.notes
    # Puzzle 21's lists may be longer than its sizes' (L6 for a seventh tensor): no note for those.
    p21 = catalog.get(21)
    assert unknown_sizes_note(p21, {"K": 7, "L6": 5}, None) is None


def test_unknown_spec_is_tested_at_the_given_size(load_kernel):
    from jaxtyping import Float32
    from torch import Tensor

    def double_spec(x: Float32[Tensor, "N0"]) -> Float32[Tensor, "N0"]:
        return x * 2

    source = """
@triton.jit
def double_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    o = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + o, tl.load(x_ptr + o, mask=o < N0) * 2, mask=o < N0)
"""
    result = test(load_kernel(source, "double_kernel"), double_spec, nelem={"N0": 50}, B={"B0": 16}, quiet=True)
    assert result.passed and len(result.outcomes) == 1


def test_a_spec_that_breaks_its_own_annotation_is_reported(load_kernel):
    from jaxtyping import Float32
    from torch import Tensor

    def bad_spec(x: Float32[Tensor, "N0"]) -> Float32[Tensor, "N0"]:
        return x.double()

    kernel = load_kernel("@triton.jit\ndef k(x_ptr, z_ptr, N0, B0: tl.constexpr):\n    pass\n", "k")
    result = test(kernel, bad_spec, nelem={"N0": 8}, B={"B0": 8}, quiet=True)
    assert result.error.kind == "spec" and "float64" in result.error.message


def test_result_renders_as_text_and_html():
    result = _grade(p02.add_mask2_kernel_no_mask, 2)
    text, page = str(result), result._repr_html_()
    assert "NOT YET" in text and "program (6, 0, 0)" in text
    assert "Not yet" in page and "<svg" in page and "x[200]" in page
    good = _grade(catalog.get(2).reference(), 2)
    assert "PASSED" in str(good) and "Passed" in good._repr_html_() and bool(good)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int8, torch.uint8])
def test_inputs_and_poison_for_every_dtype(dtype):
    gen = torch.Generator().manual_seed(0)
    t = random_tensor((4096,), dtype, gen)
    assert t.dtype == dtype
    if dtype.is_floating_point:
        assert t.min() < 0 < t.max() and t.abs().max() <= 1
    else:
        info = torch.iinfo(dtype)
        assert t.min() <= info.min + (info.max - info.min) // 16 and t.max() >= info.max - (info.max - info.min) // 16
    arena = build_arena({"z": ((3, 5), dtype)})
    assert unwritten_mask(poison_(arena.tensors["z"])).all()


def test_int32_words_fill_the_top_nibble():
    words = random_tensor((4096,), torch.int32, torch.Generator().manual_seed(1))
    top = (words >> 28) & 0xF
    assert set(top.tolist()) == set(range(16))


def test_arena_keeps_guard_zones_between_tensors():
    arena = build_arena({"x": ((100,), torch.float32), "z": ((100,), torch.float32)})
    (x0, x1, _), (z0, _, _) = arena.regions()
    assert z0 - x1 >= 8 * 400  # an overshoot by up to 8 tensors (an index scaled by 8 nibbles) stays in x's guard


def test_an_interpreted_run_leaves_tritons_language_as_it_found_it():
    # On a GPU the guarded interpreter pass runs in the same process as compiled kernels: any
    # patch it left behind would break the next compilation.
    import triton.language as tl

    def snapshot():
        # Effective attributes (inherited ones included): what compiled code will look up.
        return {(id(obj), name): getattr(obj, name) for obj in (tl, tl.core, tl.math, tl.core.tensor)
                for name in dir(obj) if name != "__annotations__"}

    before = snapshot()
    for number in (7, 8, 9):  # kernels that call nested @jit functions (tl.sum, tl.max)
        assert _grade(catalog.get(number).reference(), number, isolate=False).passed
    assert snapshot() == before


def test_signature_errors_point_at_the_def_under_a_multi_line_decorator(load_kernel):
    kernel = load_kernel("""
@triton.autotune(
    configs=[triton.Config({}, num_warps=4)],
    key=[],
)
@triton.jit
def add_kernel(x_ptr, z_ptr, N, B0: tl.constexpr):
    pass
""", "add_kernel")
    error = _grade(kernel, 1).error
    assert error.kind == "signature" and error.source.startswith("def add_kernel(")


def test_custom_size_derives_the_dependent_block_from_the_puzzles_rule():
    p = catalog.get(1)  # B0 = N0
    result = test(p.reference(), p.spec, nelem={"N0": 64}, quiet=True)
    assert result.passed, str(result)
    assert result.outcomes[0].sizes == {"N0": 64, "B0": 64}


@pytest.mark.parametrize(("nelem", "B", "says"), [
    ({"N0": 64}, {"B0": 32}, "needs B0 = N0"),
    ({"N0": 50}, None, "power of two"),
])
def test_custom_sizes_that_break_the_rule_are_named(nelem, B, says):
    p = catalog.get(1)
    result = test(p.reference(), p.spec, nelem=nelem, B=B, quiet=True)
    assert result.error is not None and result.error.kind == "sizes" and says in result.error.message


def test_out_of_bounds_in_a_matrix_is_given_as_coordinates(load_kernel):
    source = """
@triton.jit
def add_vec_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=i[None, :] < N0)
"""
    failure = _grade(load_kernel(source, "add_vec_block_kernel"), 4).first_failure
    assert failure.status == "out of bounds"
    assert "store of z[90, 0] (z is 90×100)" in failure.invalid_accesses[0].describe()


def test_transposed_output_is_named():
    result = _grade(p04.add_vec_block_kernel_swapped, 4)
    assert result.first_failure.transposed
    assert "transposed" in result.first_failure.reason()
    assert not _grade(p05.mul_relu_block_kernel_no_relu, 5).first_failure.transposed


def test_reproduce_seed_is_the_seed_of_the_failing_size():
    result = _grade(p02.add_mask2_kernel_hard_coded, 2, seed=500)
    failure = result.first_failure
    assert result.outcomes.index(failure) > 0  # a later size fails
    assert f"reproduce with seed={failure.seed}" in str(result)
    again = _grade(p02.add_mask2_kernel_hard_coded, 2, seed=failure.seed)
    assert again.first_failure.sizes == failure.sizes and again.first_failure.reason() == failure.reason()


@pytest.mark.parametrize(("kernel", "number", "index"), [
    (p08.softmax_kernel_masked_zero, 8, 3),  # masked lanes loaded as 0 inflate every row's sum
    (p08.softmax_kernel_unstable, 8, 3),  # no max subtraction: exp overflows on the ±100 rows
    (p08.softmax_kernel_no_rescale, 8, 3),  # running sum not rescaled: the growing rows are off
    (p09.flashatt_kernel_no_rescale, 9, 3),  # accumulator not rescaled: keys grow along the row
    (p09.flashatt_kernel_no_maximum, 9, 3),  # no max subtraction: exp overflows on the scaled queries
], ids=lambda v: getattr(v, "__name__", str(v)))
@interpreted_only
def test_known_bugs_fail_at_every_seed(kernel, number, index):
    # The verdict must not depend on the seed: the puzzle's size `index` fails each of these at
    # 50 seeds. Only that size runs, without recording accesses, to keep the test fast.
    from puzzles.grading.cases import case_from_spec
    from puzzles.grading.job import make_job
    from puzzles.grading.judging import judge_run
    from puzzles.grading.runs import run_interpreted
    from puzzles.grading.signature import bind_arguments

    p = catalog.get(number)
    args_for = bind_arguments(make_job(kernel, p.spec, None))
    for seed in range(1000, 1050):
        case = case_from_spec(p.spec, p, p.sizes[index], seed, index)
        outcome = judge_run(case, run_interpreted(kernel, args_for, case, record=False), None)
        assert outcome.status == "wrong", f"seed {seed}: {outcome.reason()}"


def test_a_softmax_row_that_is_all_slightly_off_is_wrong_in_every_element():
    # Per-row tolerance: every element of the affected rows is reported, not the few largest.
    failure = _grade(p08.softmax_kernel_masked_zero, 8, seed=3).first_failure
    rows_wrong = failure.status_map.any(axis=1)
    assert failure.status == "wrong"
    assert (failure.status_map[rows_wrong] == 1).all()
    assert "4 of 4 rows wrong, by up to" in failure.reason()


def test_int32_offsets_wrap_as_on_a_gpu(load_kernel):
    # Compiled without debug=True, a 32-bit offset that overflows wraps; the grader's interpreter
    # (overflow check off, see puzzles/running/recording.py) wraps too, and the wild load is named.
    source = """
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0) + 2147483647
    offsets = offsets + 1
    tl.store(z_ptr + tl.arange(0, B0), tl.load(x_ptr + offsets) + 10.0)
"""
    failure = _grade(load_kernel(source, "add_kernel"), 1).first_failure
    assert failure.status == "out of bounds", failure.reason()
    assert failure.invalid_accesses[0].op == "load"


def test_warming_the_interpreter_leaves_triton_as_it_was(monkeypatch):
    """run_in_child's warm-up launch (so that each child does not import what the interpreter loads lazily)
    undoes its language patches: a kernel compiled later in this process sees Triton untouched."""
    import triton.language as tl
    from triton.runtime.jit import JITFunction

    from puzzles.running import interpreter as execution

    names = ("load", "store", "arange", "program_id", "sum", "where")
    before = {n: getattr(tl, n) for n in names}, JITFunction.__call__
    monkeypatch.setattr(execution, "_interpreter_warm", False)
    cuda_was_initialized = torch.cuda.is_initialized()
    execution.warm_interpreter()
    assert execution._interpreter_warm
    # On a GPU machine too: the warm-up runs on the CPU and leaves CUDA alone (the notebook process never starts it).
    assert torch.cuda.is_initialized() == cuda_was_initialized
    assert ({n: getattr(tl, n) for n in names}, JITFunction.__call__) == before
    assert test(catalog.get(2).reference(), catalog.get(2).spec, quiet=True).passed
