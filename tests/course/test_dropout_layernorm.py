"""Puzzles 24-26 of the training track (seeded dropout, layer norm forward and backward): each classic mistake
(a known-wrong kernel below) fails for its own reason, correct kernels in other styles pass, and the PyTorch
Philox of puzzle 24's spec draws what tl.rand draws (interpreted here, compiled on a GPU).

The references passing and the starters failing at every size: tests/grading/test_harness.py, for every puzzle;
compiled on a GPU: tests/running/test_gpu.py."""

from __future__ import annotations

import p24_seeded_dropout as p24
import p25_layernorm_forward as p25
import p26_layernorm_backward as p26
import pytest
import torch
import triton
import triton.language as tl

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog, philox
from puzzles.grading.result import SLIP_NOTE

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


def grade(number: int, kernel, **kwargs):
    return test(kernel, catalog.get(number).spec, quiet=True, seed=kwargs.pop("seed", 1234), **kwargs)


def assert_slip(result, words: str) -> None:
    assert not result.passed
    assert result.first_failure.status == "wrong", str(result)
    assert SLIP_NOTE in result.reason() and words in result.reason(), str(result)


# -- puzzle 24: tl.rand in PyTorch ------------------------------------------------------------------------


@triton.jit
def draw_kernel(seeds_ptr, offsets_ptr, uniform_ptr, words_ptr, N, B: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, B)
    offsets = tl.load(offsets_ptr + lanes, mask=lanes < N, other=0)
    seed = tl.load(seeds_ptr + row)
    tl.store(uniform_ptr + row * N + lanes, tl.rand(seed, offsets), mask=lanes < N)
    tl.store(words_ptr + row * N + lanes, tl.randint(seed, offsets), mask=lanes < N)


def test_the_pytorch_philox_draws_what_tl_rand_draws():
    """Bit for bit, for seeds across the int32 range (negative ones sign-extend into the key's high word) and
    offsets up to 2^31 - 1: interpreted on a CPU, compiled on a GPU."""
    device = "cuda" if on_gpu() else "cpu"
    seeds = torch.tensor([0, 1, -1, 7, 2**31 - 1, -2**31, 123456789, -987654321], dtype=torch.int32)
    offsets = torch.cat([torch.arange(200), torch.tensor([2**31 - 1, 2**31 - 2, 65535, 65536, 1 << 24])])
    offsets = offsets.to(torch.int32)
    n = offsets.numel()
    uniform = torch.empty(len(seeds), n, device=device)
    words = torch.empty(len(seeds), n, dtype=torch.int32, device=device)
    draw_kernel[(len(seeds),)](seeds.to(device), offsets.to(device), uniform, words, n, B=256)
    expected_words = philox.philox_words(seeds[:, None], offsets[None, :].to(torch.int64))
    as_int32 = torch.where(expected_words >= 1 << 31, expected_words - (1 << 32), expected_words).to(torch.int32)
    assert torch.equal(words.cpu(), as_int32)
    assert torch.equal(uniform.cpu(), philox.rand(seeds[:, None], offsets[None, :]))
    assert 0.0 <= float(uniform.min()) and float(uniform.max()) < 1.0


def test_the_uniform_numbers_look_uniform():
    u = philox.rand(42, torch.arange(100_000))
    assert abs(float(u.mean()) - 0.5) < 0.01 and abs(float((u < 0.25).float().mean()) - 0.25) < 0.01


# -- puzzle 24: wrong kernels ------------------------------------------------------------------------------


@pytest.mark.parametrize(("kernel", "words"), [
    (p24.dropout_flat_offsets, "drawn at the flat index row * N0 + column"),
    (p24.dropout_block_offsets, "drawn at tl.arange(0, B0), the lane within the block"),
    (p24.dropout_first_seed, "every row draws with seeds[0]"),
    (p24.dropout_one_seed_flat, "one seed for the whole matrix"),
    (p24.dropout_keep_below, "r < p"),
    (p24.dropout_not_rescaled, "not divided by 1 - p"),
], ids=lambda v: getattr(getattr(v, "fn", None), "__name__", ""))
def test_a_dropout_slip_is_named(kernel, words):
    assert_slip(grade(24, kernel), words)


@interpreted_only
def test_dropout_without_a_mask_runs_past_the_row():
    result = grade(24, p24.dropout_no_mask)
    assert result.first_failure.status == "out of bounds", str(result)
    assert result.first_failure.sizes["N0"] % result.first_failure.sizes["B0"] != 0


def test_dropout_in_another_style_passes():
    result = grade(24, p24.dropout_multiplied_by_inverse)
    assert result.passed, str(result)


def test_the_backward_is_the_forward_kernel_on_the_gradient():
    """dx = dropout_kernel(dz, seeds): the reference run on a gradient with the forward's seeds gives the
    gradient of the spec (torch's autograd through the spec's explicit mask)."""
    from puzzles.course.spec import call_spec

    p = catalog.get(24)
    sizes = p.canonical
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(sizes["N1"], sizes["N0"], generator=gen, requires_grad=True)
    seeds = torch.randint(-2**31, 2**31, (sizes["N1"],), generator=gen, dtype=torch.int64).to(torch.int32)
    dz = torch.rand(sizes["N1"], sizes["N0"], generator=gen)
    call_spec(p.spec, [x, seeds], sizes).backward(dz)
    assert torch.equal(x.grad, call_spec(p.spec, [dz, seeds], sizes))


# -- puzzle 25: layer norm forward -------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "words"), [
    ("UNBIASED", "divided by N - 1"),
    ("EPS_OUTSIDE", "eps is added after the square root"),
    ("PADDING_COUNTED", "the masked-off lanes of the last chunk count in the variance"),
    ("PADDED_COUNT", "divided by the padded width"),
    ("SWAPPED", "the weight and the bias are swapped"),
])
def test_a_layernorm_slip_is_named(flag, words):
    assert_slip(grade(25, p25.layernorm_slip(**{flag: True})), words)


def test_the_one_pass_variance_fails_on_rows_around_thirty():
    result = grade(25, p25.layernorm_slip(ONE_PASS=True))
    assert not result.passed
    failing = [o for o in result.outcomes if not o.passed]
    assert failing and all(o.status == "wrong" for o in failing), str(result)
    assert result.outcomes[3].status == "wrong"  # the shaped size: rows around 30


def test_layernorm_in_another_style_passes():
    result = grade(25, p25.layernorm_shifted_one_pass)
    assert result.passed, str(result)


@interpreted_only
def test_a_row_taken_as_one_block_leaves_the_rest_unwritten():
    result = grade(25, p25.layernorm_one_block)
    assert not result.passed and result.first_failure.status == "unwritten", str(result)


# -- puzzle 26: layer norm backward ------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "words"), [
    ("NO_MEANS", "dx lacks its two row means"),
    ("NO_WEIGHT", "dx uses dy where w · dy belongs"),
    ("BLOCK_COUNT", "divided by BN, the block's width"),
    ("DW_FROM_X", "dw sums dy · x"),
])
def test_a_layernorm_backward_slip_is_named(flag, words):
    assert_slip(grade(26, p26.layernorm_backward_variant(**{flag: True})), words)


@pytest.mark.parametrize("how", [2, 3], ids=["load-add-store", "plain-store"])
def test_partial_sums_added_without_atomics_are_a_race(how):
    """Right under the interpreter (its programs run one after another) for the load-add-store, wrong for the
    plain store; on a GPU both lose other programs' rows. Either way the verdict is a race at the plain store."""
    result = grade(26, p26.layernorm_backward_variant(SUM=how))
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "race", str(result)
    assert "plain tl.store" in failure.error.message and "tl.store(z_ptr + M * N + cols" in failure.error.source
    assert all(o.status == "race" for o in result.outcomes), str(result)  # every size runs several programs


def test_atomics_per_row_pass():
    assert grade(26, p26.layernorm_backward_variant(SUM=1)).passed


def test_layernorm_backward_as_one_tile_passes():
    assert grade(26, p26.layernorm_backward_tile).passed


@interpreted_only
def test_rows_past_m_are_out_of_bounds():
    result = grade(26, p26.layernorm_backward_no_row_mask)
    failure = result.first_failure
    assert failure.status == "out of bounds", str(result)
    assert failure.sizes["M"] % failure.sizes["BM"] != 0


def test_a_longer_row_takes_the_fast_layernorm_three_pass_path():
    # Rows longer than 8 chunks leave registers for three passes over x: sizes the catalog's do not reach.
    p = catalog.get(25)
    sizes = [{"M": 3, "N": 300, "eps": 1e-5, "BN": 32}, {"M": 2, "N": 257, "eps": 1e-3, "BN": 16}]
    result = test(p.fast_reference_kernel(), p.spec, sizes=sizes, quiet=True)
    assert result.passed, str(result)


def test_the_notebooks_autograd_wrapper_regenerates_the_mask_with_another_block():
    """Notebook 24's SeededDropout (forward launched with B0=1024, backward with B0=256) run with the reference:
    the forward is the spec's, and the gradient is zero exactly where the output is."""
    import re

    from puzzles.course.catalog.p24_seeded_dropout import BACKWARD_TEXT
    from solutions.p24_seeded_dropout import dropout_kernel

    code = re.search(r"```python\n(.*?)```", BACKWARD_TEXT, re.S).group(1)
    device = "cuda" if on_gpu() else "cpu"
    x = torch.rand(3, 1300, device=device, requires_grad=True)
    namespace = {"torch": torch, "triton": triton, "dropout_kernel": dropout_kernel, "x": x}
    exec(code, namespace)  # noqa: S102 - the notebook's own cell text
    y, seeds = namespace["y"], namespace["seeds"]
    expected = catalog.get(24).spec(x.detach().cpu(), seeds.cpu(), p=0.1)
    assert torch.allclose(y.detach().cpu(), expected, rtol=1e-5, atol=1e-6)
    y.backward(torch.rand_like(y) + 0.5)
    assert torch.equal(x.grad != 0, y.detach() != 0)
