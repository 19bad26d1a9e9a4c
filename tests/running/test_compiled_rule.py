"""Puzzle 23's rule, by condition: every blocking the statement allows can pass (2-D tiles; one row at a time
with the launch's warps carried by the kernel; a pointer promised in bytes), and each narrow load or store is
told which of the compiler's conditions it misses, read from its compiled code: the elements each thread holds,
the alignment of its address (an argument the compiler knows nothing of, a promise on an argument that Triton
drops, a pointer's promise counted in bytes), the mask's constancy across a vector. On a CPU the values run
under the interpreter and the rule reads the sm_90 compile; on a GPU the same kernels run compiled."""

from __future__ import annotations

import inspect

import p23_read_the_compiled_code as p23
import pytest
from marked_lines import marked_line

from puzzles import compiled, test
from puzzles.course import catalog
from puzzles.running.compiled_code.reading import files_placer
from puzzles.running.compiled_code.vector_width import memory_ops

# One compile cache for the module (each compile is a second or more on a CPU), not the user's.
pytestmark = pytest.mark.usefixtures("module_compile_cache")




def reasons_of(kernel) -> str:
    result = test(kernel, puzzle=23, quiet=True, seed=1)
    assert not result.passed, str(result)
    assert all(o.status == "error" for o in result.outcomes), str(result)  # right values, the code fails
    message = result.first_failure.error.message
    assert "Why, read from the compiled code (4 warps, 128 threads per program):" in message, message
    return message


def bullet(message: str, kind: str, line: int) -> str:
    return next(text for text in message.splitlines() if text.startswith(f"- the {kind} at line {line}: "))


@pytest.mark.parametrize("kernel", [catalog.get(23).reference(), p23.copy_rows_kernel_hinted,
                                    p23.copy_rows_kernel_row_loop_one_warp, p23.copy_rows_kernel_pointer_hint_bytes],
                         ids=["reference_tiles", "hinted_tiles", "row_loop_one_warp", "pointer_in_bytes"])
def test_every_blocking_the_statement_allows_can_pass(kernel):
    result = test(kernel, puzzle=23, quiet=True, seed=1)
    assert result.passed, str(result)
    assert any("every global load and store is 128-bit" in n for n in result.notes), result.notes


def test_the_row_loop_is_128_bit_with_one_warp_and_32_bit_with_four():
    four = compiled(p23.copy_rows_kernel_row_loop, puzzle=23)
    one = compiled(p23.copy_rows_kernel_row_loop, puzzle=23, num_warps=1)
    assert four.num_warps == 4 and {a.bits for a in four.accesses} == {32}
    assert one.num_warps == 1 and {a.bits for a in one.accesses} == {128}
    carried = compiled(p23.copy_rows_kernel_row_loop_one_warp, puzzle=23)  # its config's num_warps
    assert carried.num_warps == 1 and {a.bits for a in carried.accesses} == {128}


def test_elements_per_thread_a_one_row_block_over_four_warps():
    kernel = p23.copy_rows_kernel_row_loop
    message = reasons_of(kernel)
    load = bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    assert "each thread holds 1 of its block's 128 elements (128 over 128 threads)" in load
    assert "moves 4 adjacent 32-bit elements of one thread" in load
    assert "address" not in load and "mask" not in load  # its promises are all there: the verdict says no more


def test_alignment_and_the_mask_of_a_copy_without_promises():
    kernel = p23.copy_rows_kernel_plain
    message = reasons_of(kernel)
    load = bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    store = bullet(message, "store", marked_line(kernel, "STORE_LINE"))
    assert "its address is computed from `S1`, an integer argument the compiler knows nothing of" in load
    assert "each group of 4 starts at a multiple of 16 bytes" in load
    assert "its address is computed from `N0`" in store and "`S1`" not in store
    for text in (load, store):
        assert "its mask compares indices with `N0`" in text and "`N1`" not in text  # rows do not split a vector
        assert "each thread holds" not in text
    # the conditions, not the calls that meet them (the hints have those)
    assert "tl.max_constancy" not in message and "tl.multiple_of" not in message


def test_the_mask_alone_where_the_rows_are_promised():
    kernel = p23.copy_rows_kernel_rows_only
    message = reasons_of(kernel)
    load = bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    assert "its mask compares indices with `N0`" in load and "address" not in load


def test_a_promise_on_an_argument_is_named_as_dropped():
    kernel = p23.copy_rows_kernel_argument_hint
    message = reasons_of(kernel)
    load = bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    promised = marked_line(kernel, "S1 = tl.multiple_of(S1, 4)")
    assert "its address is computed from `S1`" in load
    assert f"line {promised} gives tl.multiple_of the argument `S1` itself, and Triton keeps no promise" in load
    store = bullet(message, "store", marked_line(kernel, "STORE_LINE"))
    assert f"line {promised + 1} gives tl.multiple_of the argument `N0` itself" in store
    assert "mask" not in load  # its mask's promise is there


def test_a_pointer_promised_in_elements_is_told_it_counts_bytes():
    kernel = p23.copy_rows_kernel_pointer_hint
    message = reasons_of(kernel)
    load = bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    promised = marked_line(kernel, "x_rows = tl.multiple_of(")
    assert f"line {promised} promises a pointer that is a multiple of 4: on a pointer tl.multiple_of counts " \
           "bytes (4 bytes: 1 32-bit element), and 4 at once need a multiple of 16 bytes" in load
    assert "integer argument" not in load


def test_one_missing_promise_names_only_the_access_it_narrows():
    kernel = p23.copy_rows_kernel_no_x_hint
    message = reasons_of(kernel)
    assert "its address is computed from `S1`" in bullet(message, "load", marked_line(kernel, "LOAD_LINE"))
    assert "- the store at line" not in message


def test_the_ttgir_reading_follows_the_mask_through_expand_dims_and_stops_at_promises():
    code = compiled(p23.copy_rows_kernel_hinted, puzzle=23)
    ops = memory_ops(code.ttgir, files_placer({p23.__file__}))
    assert [(m.kind, m.shape, m.per_thread, m.share, m.threads) for m in ops] == [
        ("load", (8, 128), 4, 8, 128), ("store", (8, 128), 4, 8, 128)]
    for op in ops:
        assert op.unknown_in_address == () and op.unknown_in_mask == () and op.masked
        assert [value for _, value in op.offset_hints] == [4] and [value for _, value in op.mask_hints] == [4]


def test_an_access_in_a_helper_is_told_at_the_helpers_line():
    kernel = p23.copy_rows_kernel_helper
    result = test(kernel, puzzle=23, quiet=True, seed=1)
    message = result.first_failure.error.message
    lines, first = inspect.getsourcelines(p23._copy_one_row.fn)
    load = next(first + i for i, text in enumerate(lines) if "HELPER_LOAD" in text)
    text = bullet(message, "load", load)
    assert "each thread holds 1 of its block's 128 elements" in text and "`S1`" in text and "`N0`" in text
