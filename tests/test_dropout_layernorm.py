"""Puzzles 24-26 of the training track (seeded dropout, layer norm forward and backward): each classic mistake
(a known-wrong kernel below) fails for its own reason, correct kernels in other styles pass, and the PyTorch
Philox of puzzle 24's spec draws what tl.rand draws (interpreted here, compiled on a GPU).

The references passing and the starters failing at every size: tests/test_harness.py, for every puzzle;
compiled on a GPU: tests/test_gpu.py."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from puzzles import on_gpu, test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog, philox
from puzzles.grading.result import SLIP_NOTE

interpreted_only = pytest.mark.skipif(on_gpu(), reason="needs the interpreter's recorded accesses")


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


@triton.jit
def dropout_flat_offsets(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), row * N0 + cols)  # the flat index
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_block_offsets(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), tl.arange(0, B0))  # the lane, not the column
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_first_seed(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr), cols)  # seeds[0] for every row
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_one_seed_flat(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    flat = row * N0 + cols
    x = tl.load(x_ptr + flat, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr), flat)  # the 1-D kernel's draw, over the matrix
    tl.store(z_ptr + flat, tl.where(r > p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_keep_below(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r < p, x / (1 - p), 0.0), mask=cols < N0)


@triton.jit
def dropout_not_rescaled(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x, 0.0), mask=cols < N0)


@triton.jit
def dropout_no_mask(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0))


@triton.jit
def dropout_multiplied_by_inverse(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    """Right in another style: offsets in int64, the scale as one reciprocal multiplied in."""
    row = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0).to(tl.int64) * B0 + tl.arange(0, B0)
    keep_scale = 1.0 / (1.0 - p)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    tl.store(z_ptr + row * N0 + cols, x * tl.where(r > p, keep_scale, 0.0), mask=cols < N0)


@pytest.mark.parametrize(("kernel", "words"), [
    (dropout_flat_offsets, "drawn at the flat index row * N0 + column"),
    (dropout_block_offsets, "drawn at tl.arange(0, B0), the lane within the block"),
    (dropout_first_seed, "every row draws with seeds[0]"),
    (dropout_one_seed_flat, "one seed for the whole matrix"),
    (dropout_keep_below, "r < p"),
    (dropout_not_rescaled, "not divided by 1 - p"),
], ids=lambda v: getattr(getattr(v, "fn", None), "__name__", ""))
def test_a_dropout_slip_is_named(kernel, words):
    assert_slip(grade(24, kernel), words)


@interpreted_only
def test_dropout_without_a_mask_runs_past_the_row():
    result = grade(24, dropout_no_mask)
    assert result.first_failure.status == "out of bounds", str(result)
    assert result.first_failure.sizes["N0"] % result.first_failure.sizes["B0"] != 0


def test_dropout_in_another_style_passes():
    result = grade(24, dropout_multiplied_by_inverse)
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


@triton.jit
def layernorm_with(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr, UNBIASED: tl.constexpr,
                   EPS_OUTSIDE: tl.constexpr, PADDING_COUNTED: tl.constexpr, PADDED_COUNT: tl.constexpr,
                   SWAPPED: tl.constexpr, ONE_PASS: tl.constexpr):
    """The reference with one slip switched on (each test below binds one flag through a wrapper kernel)."""
    row = tl.program_id(0)
    count = tl.cdiv(N, BN) * BN if PADDED_COUNT else N
    acc = tl.zeros([BN], dtype=tl.float32)
    squares = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        acc += x
        squares += x * x
    mean = tl.sum(acc, axis=0) / count
    if ONE_PASS:
        var = tl.sum(squares, axis=0) / count - mean * mean
    else:
        acc = tl.zeros([BN], dtype=tl.float32)
        for n0 in range(0, N, BN):
            cols = n0 + tl.arange(0, BN)
            x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
            centred = x - mean if PADDING_COUNTED else tl.where(cols < N, x - mean, 0.0)
            acc += centred * centred
        var = tl.sum(acc, axis=0) / (N - 1 if UNBIASED else count)
    rstd = 1 / (tl.sqrt(var) + eps) if EPS_OUTSIDE else 1 / tl.sqrt(var + eps)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        z = (x - mean) * rstd * b + w if SWAPPED else (x - mean) * rstd * w + b
        tl.store(z_ptr + row * N + cols, z, mask=cols < N)


def layernorm_slip(**flag):
    """A kernel with the puzzle's signature whose flags are set by @triton.heuristics (which the grader
    applies as Triton does)."""
    flags = {name: flag.get(name, False) for name in
             ("UNBIASED", "EPS_OUTSIDE", "PADDING_COUNTED", "PADDED_COUNT", "SWAPPED", "ONE_PASS")}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in flags.items()})(layernorm_with)


@pytest.mark.parametrize(("flag", "words"), [
    ("UNBIASED", "divided by N - 1"),
    ("EPS_OUTSIDE", "eps is added after the square root"),
    ("PADDING_COUNTED", "the masked-off lanes of the last chunk count in the variance"),
    ("PADDED_COUNT", "divided by the padded width"),
    ("SWAPPED", "the weight and the bias are swapped"),
])
def test_a_layernorm_slip_is_named(flag, words):
    assert_slip(grade(25, layernorm_slip(**{flag: True})), words)


def test_the_one_pass_variance_fails_on_rows_around_thirty():
    result = grade(25, layernorm_slip(ONE_PASS=True))
    assert not result.passed
    failing = [o for o in result.outcomes if not o.passed]
    assert failing and all(o.status == "wrong" for o in failing), str(result)
    assert result.outcomes[3].status == "wrong"  # the shaped size: rows around 30


@triton.jit
def layernorm_shifted_one_pass(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """Right in another style: one pass over the row for both statistics, on values shifted by the row's first
    element (close to the mean, so nothing cancels), then the output pass."""
    row = tl.program_id(0)
    shift = tl.load(x_ptr + row * N)
    total = tl.zeros([BN], dtype=tl.float32)
    squares = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        d = tl.where(cols < N, tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0) - shift, 0.0)
        total += d
        squares += d * d
    mean_d = tl.sum(total, axis=0) / N
    rstd = tl.rsqrt(tl.sum(squares, axis=0) / N - mean_d * mean_d + eps)
    mean = shift + mean_d
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        tl.store(z_ptr + row * N + cols, (x - mean) * rstd * w + b, mask=cols < N)


def test_layernorm_in_another_style_passes():
    result = grade(25, layernorm_shifted_one_pass)
    assert result.passed, str(result)


@triton.jit
def layernorm_one_block(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)  # the row taken as one block: past BN it is never read
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(cols < N, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(z_ptr + row * N + cols, centred * rstd * w + b, mask=cols < N)


@interpreted_only
def test_a_row_taken_as_one_block_leaves_the_rest_unwritten():
    result = grade(25, layernorm_one_block)
    assert not result.passed and result.first_failure.status == "unwritten", str(result)
