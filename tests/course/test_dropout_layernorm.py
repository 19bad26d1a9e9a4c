"""Puzzles 24-26 of the training track (seeded dropout, layer norm forward and backward): each classic mistake
(a known-wrong kernel below) fails for its own reason, correct kernels in other styles pass, and the PyTorch
Philox of puzzle 24's spec draws what tl.rand draws (interpreted here, compiled on a GPU).

The references passing and the starters failing at every size: tests/grading/test_harness.py, for every puzzle;
compiled on a GPU: tests/running/test_gpu.py."""

from __future__ import annotations

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


# -- puzzle 26: layer norm backward ------------------------------------------------------------------------


@triton.jit
def layernorm_backward_with(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                            BN: tl.constexpr, SUM: tl.constexpr, NO_MEANS: tl.constexpr, NO_WEIGHT: tl.constexpr,
                            BLOCK_COUNT: tl.constexpr, DW_FROM_X: tl.constexpr):
    """The reference with one change switched on. SUM says how the programs' partial dw and db reach z:
    0 one atomic per column after the loop (the reference), 1 an atomic per row inside the loop (right, slower),
    2 a load, an add and a plain store (a race), 3 a plain store of the partial sums (a race: the last wins)."""
    cols = tl.arange(0, BN)
    col_in = cols < N
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    count = BN if BLOCK_COUNT else N
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row, mask=row < M, other=0.0)
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = dy if NO_WEIGHT else w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / count
        c2 = tl.sum(wdy, axis=0) / count
        dx = wdy * rstd if NO_MEANS else (wdy - (xhat * c1 + c2)) * rstd
        tl.store(z_ptr + row * N + cols, dx, mask=mask)
        dw_row = dy * x if DW_FROM_X else dy * xhat
        if SUM == 1:
            tl.atomic_add(z_ptr + M * N + cols, dw_row, mask=mask)
            tl.atomic_add(z_ptr + (M + 1) * N + cols, dy, mask=mask)
        dw += dw_row
        db += dy
    if SUM == 0:
        tl.atomic_add(z_ptr + M * N + cols, dw, mask=col_in)
        tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=col_in)
    elif SUM == 2:
        old_dw = tl.load(z_ptr + M * N + cols, mask=col_in, other=0.0)
        old_db = tl.load(z_ptr + (M + 1) * N + cols, mask=col_in, other=0.0)
        tl.store(z_ptr + M * N + cols, old_dw + dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, old_db + db, mask=col_in)
    elif SUM == 3:
        tl.store(z_ptr + M * N + cols, dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, db, mask=col_in)


def layernorm_backward_variant(**flag):
    flags = {"SUM": 0, "NO_MEANS": False, "NO_WEIGHT": False, "BLOCK_COUNT": False, "DW_FROM_X": False, **flag}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in flags.items()})(
        layernorm_backward_with)


@pytest.mark.parametrize(("flag", "words"), [
    ("NO_MEANS", "dx lacks its two row means"),
    ("NO_WEIGHT", "dx uses dy where w · dy belongs"),
    ("BLOCK_COUNT", "divided by BN, the block's width"),
    ("DW_FROM_X", "dw sums dy · x"),
])
def test_a_layernorm_backward_slip_is_named(flag, words):
    assert_slip(grade(26, layernorm_backward_variant(**{flag: True})), words)


@pytest.mark.parametrize("how", [2, 3], ids=["load-add-store", "plain-store"])
def test_partial_sums_added_without_atomics_are_a_race(how):
    """Right under the interpreter (its programs run one after another) for the load-add-store, wrong for the
    plain store; on a GPU both lose other programs' rows. Either way the verdict is a race at the plain store."""
    result = grade(26, layernorm_backward_variant(SUM=how))
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "race", str(result)
    assert "plain tl.store" in failure.error.message and "tl.store(z_ptr + M * N + cols" in failure.error.source
    assert all(o.status == "race" for o in result.outcomes), str(result)  # every size runs several programs


def test_atomics_per_row_pass():
    assert grade(26, layernorm_backward_variant(SUM=1)).passed


@triton.jit
def layernorm_backward_tile(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                            BN: tl.constexpr):
    """Right in another style: the program's BM rows as one BM × BN tile, its partial dw and db summed down
    the tile (tl.sum over axis 0) and added with one atomic per column."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tile = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + tile, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + tile, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    mean = tl.load(mean_ptr + rows, mask=rows < M, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
    xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    wdy = w[None, :] * dy
    c1 = tl.sum(xhat * wdy, axis=1) / N
    c2 = tl.sum(wdy, axis=1) / N
    tl.store(z_ptr + tile, (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None], mask=mask)
    tl.atomic_add(z_ptr + M * N + cols, tl.sum(dy * xhat, axis=0), mask=cols < N)
    tl.atomic_add(z_ptr + (M + 1) * N + cols, tl.sum(dy, axis=0), mask=cols < N)


def test_layernorm_backward_as_one_tile_passes():
    assert grade(26, layernorm_backward_tile).passed


@triton.jit
def layernorm_backward_no_row_mask(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                                   BN: tl.constexpr):
    cols = tl.arange(0, BN)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    for r in range(BM):
        row = tl.program_id(0) * BM + r  # rows past M are read too: M need not be a multiple of BM
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
        wdy = w * dy
        dx = (wdy - (xhat * tl.sum(xhat * wdy, axis=0) / N + tl.sum(wdy, axis=0) / N)) * tl.load(rstd_ptr + row)
        tl.store(z_ptr + row * N + cols, dx, mask=mask)
        dw += dy * xhat
        db += dy
    tl.atomic_add(z_ptr + M * N + cols, dw, mask=cols < N)
    tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=cols < N)


@interpreted_only
def test_rows_past_m_are_out_of_bounds():
    result = grade(26, layernorm_backward_no_row_mask)
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
