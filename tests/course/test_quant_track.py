"""The quantization track, puzzles 13-18: each reference passes at every size, each starter fails, and each
classic mistake (a known-wrong kernel below) is caught for its own reason."""

from __future__ import annotations

import p13_pack_int4 as p13
import p14_unpack_int4 as p14
import p15_int8_gemv as p15
import p16_grouped_tile_order as p16
import p17_splitk_matmul as p17
import p18_gptq_splitk as p18
import pytest
import torch
from judging import grade

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog
from puzzles.course.solution_source import starter_source

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

TRACK = [catalog.get(n) for n in range(13, 19)]
# The verdicts below rely on the interpreter's recording: compiled on a GPU, an out-of-bounds load goes unseen and a
# zero-initialised output cannot tell "never written" from "wrong" (tests/running/test_gpu.py covers the references
# there).
interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


# -- every reference passes, every starter fails -----------------------------------------------------------


@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_reference_passes_at_every_size(p):
    result = test(p.reference(), p.spec, quiet=True)
    assert result.passed, str(result)
    assert len(result.outcomes) == len(p.sizes)


@interpreted_only
@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_starter_fails(p, load_kernel):
    starter = load_kernel(starter_source(p), p.kernel_name)
    result = test(starter, p.spec, quiet=True)
    assert not result.passed
    assert result.first_failure.status == "unwritten", str(result)
    assert "never written" in result.reason()


@pytest.mark.parametrize("p", TRACK, ids=lambda p: p.id)
def test_a_size_is_ragged(p):
    """At least one size leaves a partial block (or a partial band of tiles, or a partial round of K chunks)."""
    def ragged(s):
        if p.number == 16:
            return -(-s["M"] // s["BM"]) % s["GROUP_M"] != 0
        pairs = [("N0", "B0"), ("N1", "B1"), ("K", "BK"), ("N", "BN"), ("M", "BM")]
        if any(n in s and b in s and s[n] % s[b] for n, b in pairs):
            return True
        return "SPLIT_K" in s and s["K"] % (s["BK"] * s["SPLIT_K"]) != 0
    assert any(ragged(s) for s in p.sizes[1:]) or ragged(p.sizes[0])


# -- the specs agree with each other and with the statements ------------------------------------------------


def test_pack_spec_bytes_are_the_two_per_byte_form():
    from puzzles.course.catalog.p13_pack_int4 import int4_values, pack_int4_spec

    x = torch.randint(-128, 128, (3, 16), dtype=torch.int8)
    q = (int4_values(x) + 8).to(torch.uint8)
    assert int(q.min()) >= 0 and int(q.max()) <= 15
    two_per_byte = q[:, 0::2] | (q[:, 1::2] << 4)
    assert torch.equal(pack_int4_spec(x).view(torch.uint8), two_per_byte)
    small = torch.tensor([[-8, -1, 0, 7, 1, 2, 3, 4]], dtype=torch.int8)
    assert pack_int4_spec(small).item() == 0xC_B_A_9_F_8_7_0 - 2**32


def test_unpack_inverts_pack_on_the_transposed_layout():
    from puzzles.course.catalog.p13_pack_int4 import int4_values, pack_int4_spec
    from puzzles.course.catalog.p14_unpack_int4 import unpack_int4_spec

    x = torch.randint(-128, 128, (5, 24), dtype=torch.int8)  # 5 columns of K = 24
    qweight = pack_int4_spec(x).T.contiguous()  # packed along K: K/8 x N
    assert torch.equal(unpack_int4_spec(qweight), int4_values(x).T.to(torch.int8))


def test_grouped_order_spec_is_a_permutation_matching_swizzle2d_docs():
    from puzzles.course.catalog.p16_grouped_tile_order import grouped_order_spec

    # tl.swizzle2d's docstring example: a 4 x 4 grid in groups of 2.
    tiles = grouped_order_spec(M=4, N=4, BM=1, BN=1, GROUP_M=2)
    pid_of = torch.empty(4, 4, dtype=torch.int64)
    pid_of[tiles[:, 0].long(), tiles[:, 1].long()] = torch.arange(16)
    assert pid_of.tolist() == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    tiles = grouped_order_spec(M=7, N=5, BM=1, BN=1, GROUP_M=3)  # a short last band
    assert len({tuple(t) for t in tiles.tolist()}) == 35 and int(tiles[:, 0].max()) == 6


def test_gptq_spec_follows_the_statement_element_by_element():
    from puzzles.course.catalog.p18_gptq_splitk import gptq_matmul_spec

    g, k_size, n_size = 8, 16, 8
    a = torch.randn(2, k_size).half()
    qweight = torch.randint(-(2**31), 2**31, (k_size // 8, n_size), dtype=torch.int64).to(torch.int32)
    scales = torch.rand(k_size // g, n_size).half()
    qzeros = torch.randint(-(2**31), 2**31, (k_size // g, n_size // 8), dtype=torch.int64).to(torch.int32)
    w = torch.empty(k_size, n_size)
    for k in range(k_size):
        for n in range(n_size):
            q = (int(qweight[k // 8, n]) >> 4 * (k % 8)) & 0xF
            zero = (int(qzeros[k // g, n // 8]) >> 4 * (n % 8)) & 0xF
            w[k, n] = (q - (zero + 1)) * float(scales[k // g, n])
    torch.testing.assert_close(gptq_matmul_spec(a, qweight, scales, qzeros), (a.float() @ w).half())


# -- known-wrong kernels, one classic mistake each --------------------------------------------------------


def _size(result):
    return result.first_failure.sizes


def _wrong_at_the_canonical_size(number, kernel):
    """The mistake gives wrong values already at the puzzle's own size (not an error)."""
    result = grade(number, kernel)
    assert result.first_failure.status == "wrong", str(result)
    assert _size(result) == catalog.get(number).canonical and "elements wrong" in result.reason()


def out_of_bounds_on_a_ragged_block(number, kernel, dim, block):
    """A missing mask: the first failing size has a ragged last block along `dim`; the reason."""
    result = grade(number, kernel)
    assert result.first_failure.status == "out of bounds", str(result)
    assert _size(result)[dim] % _size(result)[block] != 0  # the canonical size has no ragged block
    return result.reason()


@pytest.mark.parametrize("kernel", [p13.pack_nibbles_reversed, p13.pack_without_nibble_mask],
                         ids=lambda k: k.fn.__name__)
def test_pack_mistakes_give_wrong_words(kernel):
    _wrong_at_the_canonical_size(13, kernel)


@interpreted_only
def test_pack_without_word_mask_runs_out_of_bounds_on_a_ragged_row():
    reason = out_of_bounds_on_a_ragged_block(13, p13.pack_without_word_mask, "N1", "B1")
    assert "out-of-bounds" in reason and "of x[" in reason


def test_unpack_masking_before_shifting_breaks_the_top_nibble():
    result = grade(14, p14.unpack_masking_before_shifting)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    # Only nibble 7 holds the sign bit: the rows k with k % 8 == 7 come out 16 too small when it is set.
    assert all(m.index[0] % 8 == 7 and m.got == m.expected - 16 for m in failure.mismatches)


def test_unpack_along_the_wrong_axis():
    result = grade(14, p14.unpack_along_n)
    assert result.first_failure.status == "wrong", str(result)
    assert "elements wrong" in result.reason()


@interpreted_only
def test_gemv_without_k_mask_reads_past_the_vector():
    assert "load of x[" in out_of_bounds_on_a_ragged_block(15, p15.gemv_without_k_mask, "K", "BK")


def test_gemv_with_the_transposed_layout():
    result = grade(15, p15.gemv_weight_read_as_n_by_k)
    assert result.first_failure.status == "wrong", str(result)


def test_grouped_order_that_ignores_the_group_size():
    result = grade(16, p16.grouped_order_row_major)
    assert result.first_failure.status == "wrong", str(result)
    assert result.first_failure.mismatches[0].index == (1, 0)  # program 1 goes down, not right


def test_grouped_order_that_assumes_a_full_last_band():
    result = grade(16, p16.grouped_order_full_last_band)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    tiles_m = -(-failure.sizes["M"] // failure.sizes["BM"])
    assert tiles_m % failure.sizes["GROUP_M"] != 0
    first_in_last_band = (tiles_m // failure.sizes["GROUP_M"]) * failure.sizes["GROUP_M"] * -(
        -failure.sizes["N"] // failure.sizes["BN"])
    assert all(m.index[0] >= first_in_last_band for m in failure.mismatches)


def test_grouped_order_with_swizzle2d_passes():
    assert grade(16, p16.grouped_order_swizzle2d).passed


@interpreted_only
def test_splitk_without_k_mask():
    result = grade(17, p17.splitk_without_k_mask)
    assert result.first_failure.status == "out of bounds", str(result)
    size = _size(result)
    assert size["K"] % (size["BK"] * size["SPLIT_K"]) != 0 and "out-of-bounds" in result.reason()


@pytest.mark.parametrize("kernel", [p17.splitk_store_instead_of_add, p17.splitk_load_add_store],
                         ids=lambda k: k.fn.__name__)
def test_splitk_plain_stores_into_a_shared_tile_are_a_race(kernel):
    result = grade(17, kernel)
    failure = result.first_failure
    if on_gpu() and failure.status == "wrong":
        # Compiled, the race gives wrong sums; naming it needs the interpreter pass, which an
        # older Triton (3.6) cannot run on this kernel's loop: the verdict says so.
        assert "access check under Triton's interpreter could not run" in failure.stdout
        return
    assert failure.status == "race", str(result)
    assert "tl.atomic_add" in failure.reason() and "tl.store" in failure.error.source


def test_splitk_where_every_part_reduces_all_of_k():
    result = grade(17, p17.splitk_every_part_takes_all_of_k)
    failure = result.first_failure
    assert failure.status == "wrong", str(result)
    m = failure.mismatches[0]
    assert m.got == pytest.approx(failure.sizes["SPLIT_K"] * m.expected, rel=1e-3)


@pytest.mark.parametrize("kernel", [p18.gptq_without_plus_one, p18.gptq_zeros_packed_along_k],
                         ids=lambda k: k.fn.__name__)
def test_gptq_zero_point_mistakes(kernel):
    _wrong_at_the_canonical_size(18, kernel)
