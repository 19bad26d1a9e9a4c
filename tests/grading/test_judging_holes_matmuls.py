"""The judging holes of the matmul family and the later puzzles, closed in general (issue 21 and the red teams):
split-K's contract (each part reads only its own K chunks and adds with atomics; an exchange or a plain store mixed
with adds is a race) and puzzle 18's groups at sizes that are not powers of two; then (sections 8-11) a block
written as a number, a small term missing, puzzle 16's position in a band, and two blocks mixed up or one tile row
assumed. Each wrong kernel fails for its own reason and each correct variant (unlike the reference) passes. The
classes every puzzle shares (size rules, outputs in one buffer, masked loads without other=, messages, races,
float16): tests/grading/test_judging_holes.py."""

from __future__ import annotations

import p11_batched_matmul as p11
import p12_quantized_matmul as p12
import p16_grouped_tile_order as p16
import p17_splitk_matmul as p17
import p18_gptq_splitk as p18
import p21_multi_tensor_apply as p21
import pytest
from judging import SEEDS, grade, interpreted_only

from puzzles.course import catalog

# -- 1. puzzle 18's group where it does not divide the block (the size rules: tests/grading/test_judging_holes.py)


@pytest.mark.parametrize("seed", SEEDS)
def test_gptq_group_from_the_chunk_start_fails_where_the_group_does_not_divide_the_block(seed):
    result = grade(18, p18.gptq_group_per_chunk, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "wrong", str(result)
    assert failure.sizes["BK"] % failure.sizes["G"] != 0 and "elements wrong" in result.reason()
    assert all(o.passed for o in result.outcomes if o.sizes["BK"] % o.sizes["G"] == 0)  # right where G divides BK


@pytest.mark.parametrize("seed", SEEDS)
def test_gptq_in_rounds_passes(seed):
    result = grade(18, p18.gptq_in_rounds, seed)
    assert result.passed, str(result)


# -- 2. the split-K contract ------------------------------------------------------------------------------------


@interpreted_only
@pytest.mark.parametrize("seed", SEEDS)
def test_splitk_where_part_zero_stores_the_whole_product_breaks_the_contract(seed):
    result = grade(17, p17.splitk_part_zero_stores_all, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "split-K contract", str(result)
    assert "plain tl.store" in failure.reason() and "tl.atomic_add" in failure.reason()
    assert "tl.store(tile" in failure.error.source


@interpreted_only
@pytest.mark.parametrize("seed", SEEDS)
def test_splitk_where_part_zero_adds_the_whole_product_reads_the_other_parts_rows(seed):
    result = grade(17, p17.splitk_part_zero_adds_all, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "split-K contract", str(result)
    reason = failure.reason()
    assert "part 1 reads none of K" in reason and "part 0 reads" in reason and "⌊k / BK⌋ mod SPLIT_K = s" in reason
    assert "tl.load(a_ptr" in failure.error.source


@interpreted_only
@pytest.mark.parametrize("seed", SEEDS)
def test_gptq_where_part_zero_does_all_breaks_the_contract(seed):
    result = grade(18, p18.gptq_part_zero_does_all, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "split-K contract", str(result)
    assert "reads none of K" in failure.reason(), failure.reason()


@interpreted_only
@pytest.mark.parametrize("seed", SEEDS)
def test_splitk_mixing_exchange_and_add_is_an_order_dependent_race(seed):
    result = grade(17, p17.splitk_exchange_then_add, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "race", str(result)
    reason = failure.reason()
    assert "tl.atomic_xchg" in reason and "tl.atomic_add" in reason and "depends on the order" in reason
    # The interpreter refuses an exchange of floats (a GPU runs it): the verdict says so in words.
    assert "interpreter cannot run tl.atomic_xchg on fp32" in failure.note


@interpreted_only
@pytest.mark.parametrize("seed", SEEDS)
def test_splitk_mixing_a_plain_store_and_add_is_a_race(seed):
    result = grade(17, p17.splitk_store_then_add, seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "race", str(result)
    assert "plain tl.store" in failure.reason() and "tl.store(tile" in failure.error.source


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kernel", [p17.splitk_in_rounds, p17.splitk_contiguous], ids=lambda k: k.fn.__name__)
def test_splitk_in_rounds_or_contiguous_ranges_passes(seed, kernel):
    result = grade(17, kernel, seed)
    assert result.passed, str(result)


def test_splitk_in_contiguous_ranges_that_leave_the_last_part_idle_passes():
    """Ranges of cdiv(chunks, SPLIT_K) chunks run out before the last part when the chunks are few (9 chunks, 4
    parts: 3, 3, 3, 0): a split all the same, not one part doing another's work."""
    def idle(s):
        chunks = -(-s["K"] // s["BK"])
        return -(-chunks // s["SPLIT_K"]) * (s["SPLIT_K"] - 1) >= chunks
    assert any(idle(s) for s in catalog.get(17).sizes)
    result = grade(17, p17.splitk_contiguous, 1)
    assert result.passed, str(result)


@interpreted_only
def test_splitk_where_every_part_reads_all_of_k_breaks_the_contract():
    result = grade(17, p17.splitk_every_part_reads_all, 5)
    failure = result.first_failure
    assert failure is not None and failure.status == "split-K contract", str(result)
    assert "which part 0 (program (0, 0, 0)) also reads" in failure.reason(), failure.reason()
    assert "tl.load(a_ptr" in failure.error.source


# -- 8. a block written as a number where the kernel's argument belongs ------------------------------------------
# Closed in general by tests/course/test_catalog.py (every block takes two values across the graded sizes); these are
# the kernels that passed before, each now failing at the size whose block differs from its number.


@pytest.mark.parametrize(("number", "kernel", "status", "block"), [
    (11, p11.dot_kernel_rows_of_16, "unwritten", "B0=32"),
    (12, p12.quant_dot_kernel_columns_of_16, "unwritten", "B1=32"),
    (12, p12.quant_dot_kernel_one_shift_word_per_chunk, "wrong", "B_MID=128"),
    (17, p17.splitk_matmul_kernel_rows_of_16, "unwritten", "BM=32"),
    (18, p18.gptq_matmul_kernel_rows_of_16, "unwritten", "BM=32"),
], ids=["11-B0", "12-B1", "12-B_MID", "17-BM", "18-BM"])
def test_a_block_written_as_a_number_fails_where_the_sizes_use_another(number, kernel, status, block):
    result = grade(number, kernel, seed=3)
    failure = result.first_failure
    assert failure is not None and failure.status == status, str(result)
    assert block in str(result).splitlines()[0], str(result)


# -- 9. a formula a small term short, under a float32 tolerance --------------------------------------------------


@pytest.mark.parametrize("seed", range(1, 4))
def test_sgd_without_weight_decay_fails_and_the_note_names_a_missing_term(seed):
    """A formula a small term short is near-miss too: under puzzle 21's float32 tolerance it fails, and the
    verdict names the missing term (puzzle 21's likely slip; before it, the low-precision note asked about a
    missing term as well as about float16)."""
    result = grade(21, p21.sgd_kernel_without_weight_decay, seed=seed)
    failure = result.first_failure
    assert failure is not None and failure.status == "wrong" and "weight_decay=0.01" in str(result).splitlines()[0]
    assert "the weight decay is left out" in failure.note, failure.note


# -- 10. puzzle 16's position in a band (the fourth red team) ------------------------------------------------------


def _short_bands(sizes: dict) -> list[tuple[int, int]]:
    """(first program, rows) of the last band of tile rows, when it is shorter than GROUP_M."""
    tiles_m, tiles_n = -(-sizes["M"] // sizes["BM"]), -(-sizes["N"] // sizes["BN"])
    rows, group = tiles_m % sizes["GROUP_M"], sizes["GROUP_M"]
    return [((tiles_m // group) * group * tiles_n, rows)] if rows else []


def test_grouped_order_has_a_short_band_whose_first_program_its_height_does_not_divide():
    """`pid % rows` equals the position in the band `(pid % (GROUP_M * TN)) % rows` wherever `rows` divides the
    band's first program id: in every full band, in a one-row band and in a first band. One graded size must
    have a later short band of two rows or more that starts elsewhere."""
    bands = [b for s in catalog.get(16).sizes for b in _short_bands(s)]
    assert any(first > 0 and rows >= 2 and first % rows for first, rows in bands), bands


def test_grouped_order_with_the_position_taken_from_the_program_id_fails():
    result = grade(16, p16.grouped_order_kernel_position_from_pid)
    failure = result.first_failure
    assert failure is not None and failure.status == "wrong", str(result)
    first, rows = _short_bands(failure.sizes)[0]
    assert rows >= 2 and all(m.index[0] >= first for m in failure.mismatches), str(result)
    assert "GROUP_M=3" in str(result).splitlines()[0]


# -- 11. two blocks mixed up, or one tile row assumed (the fourth red team) ------------------------------------------
# Closed in general by tests/course/test_catalog.py (no two sizes equal in every graded size; each block's axis runs two
# programs or more where the block differs from each other block), and for puzzle 12 by a size of two 128-wide
# chunks (B_MID // 8 is 8 wherever B_MID is 64): these passed before.


@pytest.mark.parametrize(("number", "kernel", "status", "size"), [
    (11, p11.dot_kernel_steps_by_b0, "wrong", "B0=32 B1=16 B2=1 B_MID=64"),
    (12, p12.quant_dot_kernel_first_group_from_the_words_per_chunk, "wrong", "MID=256"),
    (17, p17.splitk_matmul_kernel_rows_from_bn, "wrong", "BM=32 BN=16"),
    (18, p18.gptq_matmul_kernel_one_tile_row, "unwritten", "M=40"),
], ids=["11-B0-for-B_MID", "12-group-from-words", "17-BN-for-BM", "18-one-tile-row"])
def test_mixed_up_blocks_and_a_single_tile_row_fail(number, kernel, status, size):
    result = grade(number, kernel, seed=4)
    failure = result.first_failure
    assert failure is not None and failure.status == status, str(result)
    assert size in str(result).splitlines()[0], str(result)
