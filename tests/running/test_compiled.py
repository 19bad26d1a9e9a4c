"""`puzzles.compiled()` and puzzle 23, on a CPU: what a kernel compiles to for sm_75, sm_80 and sm_90 (TTIR,
TTGIR, PTX, SASS and the learner's summary), the compile check's message for a kernel that does not compile,
and puzzle 23 graded on the width of its compiled loads and stores.

Every compile here goes through the compile check's processes and a cache shared by this module's tests: a
kernel compiled once (a reference at its canonical size, say) is read from it afterwards."""

from __future__ import annotations

import inspect
import linecache

import p02_constant_add_block as p02
import p23_read_the_compiled_code as p23
import pytest
from kernel_collections import kernel_named
from marked_lines import marked_line

from puzzles import compiled, test
from puzzles.course import catalog
from puzzles.running.compiled_code import Compiled, target_number
from puzzles.running.compiled_code.reading import files_placer, global_accesses, placer

TARGETS = ("sm_75", "sm_80", "sm_90")


# One compile cache for the module (each compile is a second or more on a CPU), not the user's.
pytestmark = pytest.mark.usefixtures("module_compile_cache")




# -- compiled() on the references --------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_a_reference_compiles_for_every_target_with_its_listings(target):
    p = catalog.get(2)
    code = compiled(p.reference(), puzzle=2, target=target)
    assert code.ok, code.summary()
    assert code.target == target_number(target) and code.sizes == p.canonical
    assert "tt.load" in code.ttir and "#ttg.blocked" in code.ttgir
    assert f".target {target}" in code.ptx and "ld.global" in code.ptx
    assert "LDG" in code.sass and "STG" in code.sass
    assert code.registers and code.num_warps == 4 and not code.spills
    # one 32-bit load and store per thread (N0 = 200 is no multiple of 16: the compiler proves no alignment)
    loads, stores = code.loads(), code.stores()
    assert [(a.bits, a.instruction) for a in loads] == [(32, "ld.global.b32")]
    assert [(a.bits, a.instruction) for a in stores] == [(32, "st.global.b32")]
    assert "tl.load(" in linecache.getline(loads[0].filename, loads[0].line)
    assert "tl.store(" in linecache.getline(stores[0].filename, stores[0].line)
    text = code.summary()
    assert f"compiled for {target}" in text and "load    32-bit  1 × ld.global.b32" in text and "tl.load(" in text


def test_the_matmul_reference_uses_the_tensor_cores_on_sm80_and_sm90():
    p = catalog.get(11)
    for target, kind in (("sm_80", "mma"), ("sm_90", "mma")):  # 16-row blocks: too small for Hopper's wgmma
        code = compiled(p.reference(), puzzle=11, target=target)
        assert [d.kind for d in code.dots] == [kind], code.summary()
        assert code.dots[0].line == marked_dot_line(p) and code.dots[0].inputs == "tf32"
    assert "wgmma, Hopper's own, takes larger blocks" in code.summary()
    # sm_75: Triton gives this tl.dot no tensor-core instruction
    code = compiled(p.reference(), puzzle=11, target="sm_75")
    assert [d.kind for d in code.dots] == ["fma"] and "fused multiply-adds" in code.summary()


def marked_dot_line(p) -> int:
    lines, first = inspect.getsourcelines(p.reference().fn)
    return next(first + i for i, text in enumerate(lines) if "tl.dot(" in text)


def test_a_large_enough_dot_on_sm90_becomes_wgmma_and_the_summary_says_so():
    p = catalog.get(11)
    code = compiled(p.reference(), puzzle=11, target="sm_90", nelem={"N0": 64, "N1": 64, "N2": 1, "MID": 64},
                    B={"B0": 64, "B1": 64, "B2": 1, "B_MID": 32})
    assert [d.kind for d in code.dots] == ["wgmma"] and "wgmma.mma_async" in code.ptx and "HGMMA" in code.sass
    text = code.summary()
    assert f"tl.dot at line {marked_dot_line(p)}: wgmma, Hopper's warp-group tensor-core instruction" in text
    assert "wgmma.mma_async m64n64k8, tf32 inputs, f32 sums" in text
    assert "bytes of shared memory per program" in text and "pipeline stages" in text


def test_a_kernel_that_spills_is_told_so_with_its_stack_and_spill_instructions():
    code = compiled(p02.add_mask2_kernel_many_live_values, puzzle=2, target="sm_80", nelem={"N0": 2048},
                    B={"B0": 2048}, maxnreg=24)
    assert code.ok and code.spills and code.registers <= 24
    assert code.resources.stack > 0 and code.resources.spill_stores > 0 and code.resources.spill_loads > 0
    text = code.summary()
    assert f"SPILLS: {code.resources.stack} bytes of stack per thread" in text
    assert f"{code.resources.spill_stores} spill stores and {code.resources.spill_loads} spill loads" in text
    assert "registers ran out" in text and "SPILLS" in code._repr_html_()


def test_in_a_notebook_the_summary_shows_and_the_listings_fold_away():
    code = compiled(catalog.get(2).reference(), puzzle=2, target="sm_90")
    page = code._repr_html_()
    assert page.count("<details>") == 4 and "<summary>PTX" in page and "ld.global.b32" in page
    assert "(the listings: .ttir, .ttgir, .ptx, .sass)" in repr(code)


def test_an_unknown_target_is_refused_in_words():
    with pytest.raises(ValueError, match="'sm_75', 'sm_80', 'sm_90'"):
        compiled(catalog.get(2).reference(), puzzle=2, target="sm_100")


# -- kernels that do not compile -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "says"), [("add_mask2_kernel_lambda", "a lambda is not supported"),
                                            ("add_mask2_kernel_global", "Cannot access global variable OFFSET")])
def test_a_kernel_that_does_not_compile_gets_the_compile_checks_message(name, says):
    kernel = kernel_named(name)
    code = compiled(kernel, puzzle=2, target="sm_90")
    assert isinstance(code, Compiled) and not code.ok and code.ptx == ""
    assert says in code.error.message and code.error.line == marked_line(kernel, "BAD_LINE")
    text = code.summary()
    assert text.startswith(f"{name} would not compile for sm_90: ") and "BAD_LINE" in text
    assert "Traceback" not in text and "would not compile" in code._repr_html_()


def test_a_kernel_of_no_puzzle_is_asked_for_its_puzzle():
    code = compiled(p23.copy_rows_kernel_plain)  # its name is no puzzle's kernel name
    assert not code.ok and "compiled(copy_rows_kernel_plain, puzzle=N)" in code.summary()


def test_a_kernel_with_the_wrong_signature_gets_the_graders_message(load_kernel):
    kernel = load_kernel("@triton.jit\ndef add_mask2_kernel(x_ptr, N0, B0: tl.constexpr):\n    pass\n",
                         "add_mask2_kernel")
    code = compiled(kernel, puzzle=2)
    assert not code.ok and "Traceback" not in code.summary()


# -- test(..., compiled=True) ----------------------------------------------------------------------------------------


def test_test_shows_the_summary_under_the_verdict():
    result = test(catalog.get(2).reference(), puzzle=2, quiet=True, seed=1, compiled=True)
    assert result.passed and result.compiled is not None and result.compiled.target == 90
    text = str(result)
    assert text.index("PASSED") < text.index("add_mask2_kernel compiled for sm_90") and "ld.global.b32" in text
    assert "<details>" in result._repr_html_()
    other = test(catalog.get(2).reference(), puzzle=2, quiet=True, seed=1, compiled="sm_75")
    assert other.compiled.target == 75
    assert test(catalog.get(2).reference(), puzzle=2, quiet=True, seed=1).compiled is None


def test_test_compiled_names_a_kernel_that_does_not_compile():
    result = test(p02.add_mask2_kernel_lambda, puzzle=2, quiet=True, seed=1, compiled=True)
    assert not result.passed and not result.compiled.ok
    assert "add_mask2_kernel_lambda would not compile for sm_90" in str(result)


# -- puzzle 23: graded on the compiled code --------------------------------------------------------------------------


def test_puzzle_23s_reference_passes_and_is_told_each_access_and_its_width():
    result = test(catalog.get(23).reference(), puzzle=23, quiet=True, seed=1)
    assert result.passed, str(result)
    note = next(n for n in result.notes if n.startswith("compiled for sm_90"))
    assert "every global load and store is 128-bit" in note
    assert "the load at line" in note and "is 128-bit (2 × ld.global.v4.b32)" in note
    assert "the store at line" in note and "is 128-bit (2 × st.global.v4.b32)" in note


def test_puzzle_23_fails_a_right_copy_whose_loads_are_32_bit_and_says_what_to_change():
    kernel = p23.copy_rows_kernel_plain
    result = test(kernel, puzzle=23, quiet=True, seed=1)
    assert not result.passed
    assert all(o.status == "error" for o in result.outcomes), str(result)  # right values, every size fails
    error = result.first_failure.error
    load = marked_line(kernel, "LOAD_LINE")
    assert error.message.startswith(f"Puzzle 23 asks for 128-bit global loads and stores, and compiled for sm_90 "
                                    f"the load at line {load} is 32-bit (8 × ld.global.b32)")
    assert f"the store at line {marked_line(kernel, 'STORE_LINE')} is 32-bit" in error.message
    # what it misses, read from the compiled code, not the calls (tests/running/test_compiled_rule.py: each condition)
    assert f"- the load at line {load}: its address is computed from `S1`" in error.message
    assert "tl.max_constancy" not in error.message and "compiled(copy_rows_kernel, puzzle=23)" in error.message
    assert error.line == load and "LOAD_LINE" in error.source


def test_puzzle_23_passes_the_same_copy_with_the_hints():
    result = test(p23.copy_rows_kernel_hinted, puzzle=23, quiet=True, seed=1)
    assert result.passed, str(result)
    code = compiled(p23.copy_rows_kernel_hinted, puzzle=23)
    assert {(a.kind, a.bits, a.instruction) for a in code.accesses} == {
        ("load", 128, "ld.global.v4.b32"), ("store", 128, "st.global.v4.b32")}


@pytest.mark.parametrize(("name", "narrow"), [("copy_rows_kernel_rows_only", "load"),
                                              ("copy_rows_kernel_no_x_hint", "load")])
def test_puzzle_23_fails_a_copy_missing_one_hint_at_the_access_it_narrows(name, narrow):
    kernel = kernel_named(name)
    result = test(kernel, puzzle=23, quiet=True, seed=1)
    assert not result.passed
    message = result.first_failure.error.message
    line = marked_line(kernel, "LOAD_LINE" if narrow == "load" else "STORE_LINE")
    assert f"the {narrow} at line {line} is 32-bit" in message, message
    if name == "copy_rows_kernel_no_x_hint":  # its store has its hints: only the load is named
        assert "the store at line" not in message


def test_puzzle_23_judges_values_before_the_compiled_code():
    # 128-bit, but it reads x as if its rows were not padded: the padding it reads (the grader guards the bytes
    # between a strided view's elements) and the wrong values are the verdict, not the compiled code
    result = test(p23.copy_rows_kernel_contiguous, puzzle=23, quiet=True, seed=1)
    failure = result.first_failure
    assert not result.passed and failure.status == "out of bounds", str(result)
    assert "which is no element of x" in str(result) and "asks for 128-bit" not in str(result)


def test_puzzle_23_is_graded_on_its_compiled_code_with_the_compile_check_off():
    result = test(p23.copy_rows_kernel_plain, puzzle=23, quiet=True, seed=1, compile_check=False)
    assert not result.passed and "is 32-bit (8 × ld.global.b32)" in result.first_failure.error.message


def test_a_load_inside_a_library_function_is_credited_to_the_learners_line():
    ptx = "\n".join(['.file 1 "/me/cell.py"', '.file 2 "/lib/triton/language/standard.py"',
                     ".loc 1 7 3", "mov.u32 %r1, 0;", ".loc 2 263 15",
                     "@%p1 ld.global.v2.b32 { %r3, %r4 }, [ %rd1 + 0 ];",
                     ".loc 1 9 4", "st.global.b16 [ %rd2 + 0 ], { %rs1 };",
                     "cp.async.cg.shared.global [ %r7 + 0 ], [ %rd8 + 0 ], 0x10, %r8;"])
    found = [(a.kind, a.bits, a.line) for a in global_accesses(ptx, files_placer({"/me/cell.py"}))]
    assert found == [("load", 64, 7), ("store", 16, 9), ("async copy", 128, 9)]


def test_a_listing_compiled_under_another_file_name_is_placed_where_the_kernel_is_now():
    # Triton's cache and the compile check's are keyed by source: a re-run notebook cell (a new file name, the
    # kernel two lines lower) gets the listing compiled for the old cell, whose PTX names the old file and lines.
    ptx = "\n".join(['.file 1 "/tmp/ipykernel/111.py"', ".loc 1 12 3", "ld.global.b32 { %r1 }, [ %rd1 + 0 ];",
                     ".loc 1 13 3", "st.global.b32 [ %rd2 + 0 ], { %r1 };"])
    then = [{"name": "k", "filename": "/tmp/ipykernel/111.py", "first_line": 9, "def_line": 10, "lines": 5}]
    now = {"k": {"name": "k", "filename": "/tmp/ipykernel/222.py", "def_line": 12}}
    found = [(a.kind, a.filename, a.line) for a in global_accesses(ptx, placer(then, now))]
    assert found == [("load", "/tmp/ipykernel/222.py", 14), ("store", "/tmp/ipykernel/222.py", 15)]
