"""bfloat16 under Triton's interpreter, as a GPU computes it (puzzles/running/bfloat16.py): the rounding to bfloat16
bit for bit as torch's, over random and edge values; a kernel's casts, arithmetic, comparisons, reductions, loads and
stores and `tl.dot` of bfloat16 tiles against torch; the fixes undone after each launch; a correct bfloat16 kernel
of puzzles 11 and 28 graded by `test()` passes and a wrong one fails for its own reason; and where the fixes could
not be installed, the verdict names the interpreter, never a slip of the learner's."""

from __future__ import annotations

import contextlib

import numpy as np
import p11_batched_matmul as p11
import p28_attention_backward as p28
import pytest
import torch
import triton
import triton.language as tl

from puzzles import print_if, sandboxed, test  # conftest imports puzzles first: the interpreter is on first
from puzzles.course import catalog
from puzzles.grading.result import SLIP_NOTE
from puzzles.running import bfloat16
from puzzles.running.interpreter import memoized_plain_launches

interpreted_only = pytest.mark.interpreter("checks Triton's CPU interpreter")


def torch_bits(values: np.ndarray) -> np.ndarray:
    """torch's own rounding to bfloat16, as 16-bit patterns."""
    return torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def assert_same_bfloat16(got: np.ndarray, want: np.ndarray) -> None:
    """Equal patterns, where NaN need only stay NaN."""
    got_nan, want_nan = np.isnan(bfloat16.widen(got)), np.isnan(bfloat16.widen(want))
    np.testing.assert_array_equal(got_nan, want_nan)
    np.testing.assert_array_equal(got[~got_nan], want[~want_nan])


# Patterns of float32 at the edges: zeros, the smallest and largest subnormals, ties between two bfloat16 values
# with an even and with an odd kept half (and just either side of them), the largest float32 and bfloat16,
# the tie just past the largest bfloat16 (to infinity), infinities and NaNs (quiet, signalling, negative).
F32_EDGES = np.array([
    0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x0000FFFF, 0x007FFFFF, 0x00800000, 0x807F8000,
    0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0xBF808000, 0xBF818000, 0x3F7F8000, 0x4B7F8000,
    0x7F7FFFFF, 0x7F7F0000, 0x7F7F7FFF, 0x7F7F8000, 0xFF7F8000, 0x7F800000, 0xFF800000,
    0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0xFFC00001, 0x7FFFFFFF,
], dtype=np.uint32).view(np.float32)


def random_float32(count: int, seed: int) -> np.ndarray:
    """Every kind of float32: uniformly random bit patterns (NaNs, subnormals and all exponents among them)."""
    return np.random.default_rng(seed).integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)


# -- the rounding, against torch --------------------------------------------------------------------------------


def test_float32_rounds_to_nearest_even_as_torch_rounds():
    for values in (F32_EDGES, random_float32(200_000, 1), np.random.default_rng(2).standard_normal(50_000, np.float32)):
        assert_same_bfloat16(bfloat16.round_to_bfloat16(values), torch_bits(values))
    # A tie rounds to the even neighbour, past one away from zero; beyond the largest bfloat16 is infinity.
    just_past = np.nextafter(np.float32(1.00390625), np.float32(2))
    assert bfloat16.widen(bfloat16.round_to_bfloat16(np.float32([1.00390625, 1.01171875, just_past])))\
        .tolist() == [1.0, 1.015625, 1.0078125]
    assert np.isinf(bfloat16.widen(bfloat16.round_to_bfloat16(np.float32([3.4e38, -3.4e38])))).all()
    assert np.isnan(bfloat16.widen(bfloat16.round_to_bfloat16(np.float32([np.nan, -np.nan])))).all()


def test_float64_and_float16_round_as_torch_rounds():
    rng = np.random.default_rng(3)
    with np.errstate(invalid="ignore"):  # a signalling NaN, widened
        edges = F32_EDGES.astype(np.float64)
    doubles = np.concatenate([
        rng.standard_normal(20_000) * 10.0 ** rng.integers(-45, 40, 20_000),
        edges, [1e300, -1e300, 1e-300, 5e-324, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.3, -0.1],
    ])
    assert_same_bfloat16(bfloat16.round_to_bfloat16(doubles), torch_bits(doubles))
    for x in (3.3, -0.1, 1 + 2 ** -8, 1e39, 2.0 ** -133):  # torch.tensor(x), a Python float, as the issue says
        assert bfloat16.round_to_bfloat16(np.float64(x)) == torch.tensor(x).to(torch.bfloat16).view(torch.int16)\
            .numpy().view(np.uint16)
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)  # every float16
    assert_same_bfloat16(bfloat16.round_to_bfloat16(halves), torch_bits(halves))


def test_rounding_toward_zero_and_widening():
    values = np.concatenate([F32_EDGES, random_float32(10_000, 4)])
    bits = bfloat16.truncate_to_bfloat16(values)
    ordinary = ~np.isnan(values)
    np.testing.assert_array_equal(bits[ordinary], (values.view(np.uint32)[ordinary] >> 16).astype(np.uint16))
    assert np.isnan(bfloat16.widen(bits[~ordinary])).all()
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    wide = bfloat16.widen(every)
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide, torch.from_numpy(every.view(np.int16)).view(torch.bfloat16).float().numpy())


# -- a kernel's bfloat16, against torch ---------------------------------------------------------------------------


@triton.jit
def casts_kernel(f32_ptr, f64_ptr, f16_ptr, i32_ptr, bits_ptr, from_f32_ptr, from_f64_ptr, from_f16_ptr,
                 from_i32_ptr, toward_zero_ptr, copy_ptr, back_ptr, to_int_ptr, N, B: tl.constexpr):
    at = tl.program_id(0) * B + tl.arange(0, B)
    inside = at < N
    tl.store(from_f32_ptr + at, tl.load(f32_ptr + at, mask=inside).to(tl.bfloat16), mask=inside)
    tl.store(from_f64_ptr + at, tl.load(f64_ptr + at, mask=inside).to(tl.bfloat16), mask=inside)
    tl.store(from_f16_ptr + at, tl.load(f16_ptr + at, mask=inside).to(tl.bfloat16), mask=inside)
    tl.store(from_i32_ptr + at, tl.load(i32_ptr + at, mask=inside).to(tl.bfloat16), mask=inside)
    f = tl.load(f32_ptr + at, mask=inside)
    tl.store(toward_zero_ptr + at, f.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=inside)
    b = tl.load(bits_ptr + at, mask=inside)  # a bfloat16 tensor: loaded and stored as it is
    tl.store(copy_ptr + at, b, mask=inside)
    tl.store(back_ptr + at, b.to(tl.float32), mask=inside)
    tl.store(to_int_ptr + at, tl.where(b == b, b, 0.0).to(tl.int32), mask=inside)


def launch(kernel, grid, *args, **kwargs) -> None:
    """A plain launch, patched as the course patches every launch of the interpreter (and, as grading does, without
    NumPy's warnings: an infinity converted to an integer is the kernel's business)."""
    with memoized_plain_launches(), np.errstate(all="ignore"):
        kernel[grid](*args, **kwargs)


@interpreted_only
def test_a_kernels_casts_round_as_torch_and_bfloat16_tensors_load_and_store_unchanged():
    f32 = torch.from_numpy(np.concatenate([F32_EDGES, random_float32(4000, 5)]))
    n = f32.numel()
    f64 = torch.from_numpy(np.random.default_rng(6).standard_normal(n) * 10.0 ** np.random.default_rng(7)
                           .integers(-40, 40, n))
    f16 = torch.randn(n, generator=torch.Generator().manual_seed(8)).half() * 100
    i32 = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(9))
    bits = torch.arange(n, dtype=torch.int32).mul(16411).remainder(1 << 16).to(torch.int16).view(torch.bfloat16)
    outs = [torch.empty(n, dtype=torch.bfloat16) for _ in range(6)]
    outs += [torch.empty(n), torch.empty(n, dtype=torch.int32)]
    launch(casts_kernel, (triton.cdiv(n, 256),), f32, f64, f16, i32, bits, *outs, n, B=256)
    from_f32, from_f64, from_f16, from_i32, toward_zero, copy, back, to_int = outs

    def patterns(t: torch.Tensor) -> np.ndarray:
        return t.view(torch.int16).numpy().view(np.uint16)

    for got, source in ((from_f32, f32), (from_f64, f64), (from_f16, f16), (from_i32, i32)):
        assert_same_bfloat16(patterns(got), patterns(source.to(torch.bfloat16)))
    assert_same_bfloat16(patterns(toward_zero), bfloat16.truncate_to_bfloat16(f32.numpy()))
    np.testing.assert_array_equal(patterns(copy), patterns(bits))  # every pattern, NaN payloads too
    torch.testing.assert_close(back, bits.float(), equal_nan=True, rtol=0, atol=0)
    finite = bits.float().isfinite() & (bits.float().abs() < 2 ** 31)
    assert torch.equal(to_int[finite], bits.float()[finite].to(torch.int32))


@triton.jit
def arithmetic_kernel(x_ptr, y_ptr, sum_ptr, diff_ptr, prod_ptr, quot_ptr, max_ptr, min_ptr, neg_ptr, less_ptr,
                      pick_ptr, const_ptr, fma_ptr, row_sum_ptr, row_max_ptr, exp_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    at = r[:, None] * N + r[None, :]
    x = tl.load(x_ptr + at)
    y = tl.load(y_ptr + at)
    tl.store(sum_ptr + at, x + y)
    tl.store(diff_ptr + at, x - y * 0.5)
    tl.store(prod_ptr + at, x * y)
    tl.store(quot_ptr + at, x / y)  # in float32: Triton divides bfloat16 there
    tl.store(max_ptr + at, tl.maximum(x, y))
    tl.store(min_ptr + at, tl.minimum(x, y))
    tl.store(neg_ptr + at, -x)
    tl.store(less_ptr + at, (x < y).to(tl.int32))
    tl.store(pick_ptr + at, tl.where(x > 0, x, y))
    tl.store(const_ptr + at, tl.full((N, N), 3.3, tl.bfloat16) + x)
    tl.store(fma_ptr + at, tl.fma(x, y, x))
    tl.store(row_sum_ptr + r, tl.sum(x, axis=1))
    tl.store(row_max_ptr + r, tl.max(x, axis=1))
    tl.store(exp_ptr + at, tl.exp(x.to(tl.float32)).to(tl.bfloat16))


@interpreted_only
def test_elementwise_arithmetic_comparisons_and_reductions_on_bfloat16_blocks_are_a_gpus():
    n, gen = 32, torch.Generator().manual_seed(10)
    x, y = (torch.randn(n, n, generator=gen).to(torch.bfloat16) for _ in range(2))
    b = torch.bfloat16
    shapes = [(b, (n, n))] * 3 + [(torch.float32, (n, n))] + [(b, (n, n))] * 3 + [(torch.int32, (n, n))] \
        + [(b, (n, n))] * 3 + [(b, (n,))] * 2 + [(b, (n, n))]
    outs = [torch.empty(shape, dtype=dtype) for dtype, shape in shapes]
    launch(arithmetic_kernel, (1,), x, y, *outs, N=n)
    (total, diff, prod, quot, high, low, neg, less, pick, const, fma, row_sum, row_max, exp) = outs
    # torch computes bfloat16 elementwise in float32 and rounds once, as a GPU does.
    for got, want in ((total, x + y), (diff, x - y * 0.5), (prod, x * y), (quot, x.float() / y.float()),
                      (high, torch.maximum(x, y)), (low, torch.minimum(x, y)), (neg, -x),
                      (less, (x < y).int()), (pick, torch.where(x > 0, x, y)),
                      (const, torch.tensor(3.3).to(b) + x), (fma, (x.double() * y.double() + x.double()).float().to(b)),
                      (row_max, x.max(1).values), (exp, torch.exp(x.float()).to(b))):
        assert torch.equal(got, want)
    # A GPU adds bfloat16 partial sums, each rounded to bfloat16: on an H200, each thread its 8 values in turn,
    # then the threads by halves (this very sum matched bit for bit); a few roundings off the float32 sum.
    partial = x.view(n, n // 8, 8)
    in_turn = partial[..., 0]
    for i in range(1, 8):
        in_turn = in_turn + partial[..., i]
    while in_turn.shape[-1] > 1:
        in_turn = in_turn[..., :in_turn.shape[-1] // 2] + in_turn[..., in_turn.shape[-1] // 2:]
    assert torch.equal(row_sum, in_turn[..., 0])
    assert ((row_sum.double() - x.double().sum(1)).abs() <= 4 * 2.0 ** -8 * x.double().abs().sum(1)).all()


@triton.jit
def bf16_exp_kernel(x_ptr, z_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(z_ptr + r, tl.exp(tl.load(x_ptr + r)))


@interpreted_only
def test_math_on_bfloat16_is_refused_as_a_gpus_compiler_refuses_it():
    with pytest.raises(Exception, match=r"Expected dtype \['fp32', 'fp64'\] but got bf16"):
        launch(bf16_exp_kernel, (1,), torch.ones(16, dtype=torch.bfloat16), torch.empty(16, dtype=torch.bfloat16),
               N=16)


@triton.jit
def bf16_dot_kernel(x_ptr, y_ptr, z_ptr, acc_z_ptr, doubled_ptr, M: tl.constexpr, K: tl.constexpr,
                    N: tl.constexpr):
    m, k, n = tl.arange(0, M), tl.arange(0, K), tl.arange(0, N)
    x = tl.load(x_ptr + m[:, None] * K + k[None, :]).to(tl.bfloat16)  # float32 tiles rounded to bfloat16
    y = tl.load(y_ptr + k[:, None] * N + n[None, :]).to(tl.bfloat16)
    tl.store(z_ptr + m[:, None] * N + n[None, :], tl.dot(x, y))
    acc = tl.full((M, N), 0.25, tl.float32)
    acc = tl.dot(x, y, acc=acc)
    acc += tl.dot(x, y)
    tl.store(acc_z_ptr + m[:, None] * N + n[None, :], acc)
    both = tl.dot(tl.reshape(tl.join(x, x), (M, K * 2)), tl.reshape(tl.join(y.T, y.T), (N, K * 2)).T)
    tl.store(doubled_ptr + m[:, None] * N + n[None, :], both)  # K twice over: joined, reshaped


@interpreted_only
def test_dot_of_bfloat16_tiles_multiplies_their_values_in_float32():
    gen = torch.Generator().manual_seed(11)
    x, y = torch.randn(16, 32, generator=gen), torch.randn(32, 64, generator=gen)
    z, acc_z, both = (torch.empty(16, 64) for _ in range(3))
    launch(bf16_dot_kernel, (1,), x, y, z, acc_z, both, M=16, K=32, N=64)
    product = x.to(torch.bfloat16).double() @ y.to(torch.bfloat16).double()  # the rounded operands, exactly
    torch.testing.assert_close(z.double(), product, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(acc_z.double(), 2 * product + 0.25, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(both.double(), 2 * product, rtol=1e-6, atol=1e-5)
    assert not torch.allclose(z, x @ y, rtol=0, atol=1e-4)  # the operands were rounded, as on a GPU


@interpreted_only
def test_the_fixes_are_undone_after_each_launch_and_hold_on_this_triton():
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    assert bfloat16.interpreter_limit() is None
    launch(bf16_dot_kernel, (1,), torch.ones(16, 16), torch.ones(16, 16), *(torch.empty(16, 16) for _ in range(3)),
           M=16, K=16, N=16)
    for name in ("binary_op", "unary_op", "ternary_op", "cast_impl", "create_dot", "create_fp_to_fp", "get_bf16",
                 "create_atomic_rmw"):
        assert name not in vars(builder), name
    assert interpreter.ReduceOps.sum.__qualname__.startswith("ReduceOps")
    with bfloat16.as_on_a_gpu():
        assert "create_dot" in vars(builder)
    assert "create_dot" not in vars(builder)


@triton.jit
def bf16_print_and_atomic_kernel(x_ptr, z_ptr, pairs_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    print_if("values", x, pid_0=0)
    print("plain", x)
    tl.device_print("device", x)
    tl.atomic_add(z_ptr + r, x)
    tl.atomic_add(pairs_ptr + r % 2, x)  # lanes that share an element each add


@interpreted_only
def test_bfloat16_prints_as_numbers_and_adds_atomically(capsys):
    x = torch.tensor([0.5, 1.25, -3.0, 2.0], dtype=torch.bfloat16)
    z, pairs = torch.ones(4, dtype=torch.bfloat16), torch.zeros(2, dtype=torch.bfloat16)
    before = (tl.core.tensor.__repr__, tl.core.tensor.__str__)
    launch(bf16_print_and_atomic_kernel, (2,), x, z, pairs, N=4)
    printed = capsys.readouterr().out
    for where in ("values", "plain", "device"):
        assert any(where in line and "1.25" in line and "-3." in line for line in printed.splitlines()), printed
    assert "16128" not in printed  # 0.5's pattern
    assert (tl.core.tensor.__repr__, tl.core.tensor.__str__) == before
    assert torch.equal(z, 1 + x + x)
    assert torch.equal(pairs, torch.tensor([0.5 - 3.0 + 0.5 - 3.0, 1.25 + 2.0 + 1.25 + 2.0], dtype=torch.bfloat16))


@triton.jit
def sandboxed_kernel(x_ptr, z_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(z_ptr + r, tl.load(x_ptr + r).to(tl.bfloat16) * 3.0)


@interpreted_only
def test_a_sandboxed_launch_computes_bfloat16_as_a_gpu():
    x, z = torch.randn(64, generator=torch.Generator().manual_seed(12)), torch.empty(64, dtype=torch.bfloat16)
    sandboxed(sandboxed_kernel)[(1,)](x, z, N=64)
    assert torch.equal(z, x.to(torch.bfloat16) * 3.0)


# -- graded by test() ---------------------------------------------------------------------------------------------


def grade(number: int, kernel, seed: int = 1234):
    return test(kernel, catalog.get(number).spec, quiet=True, seed=seed, compile_check=False)


@interpreted_only
@pytest.mark.parametrize("seed", [1234, 7])
def test_bfloat16_tiles_into_tl_dot_pass_puzzle_28(seed):
    """Its tolerance (1e-2, for TF32 on a GPU) allows bfloat16 tiles: they used about half of it here."""
    result = grade(28, p28.attention_backward_bf16, seed)
    assert result.passed, result.first_failure


@interpreted_only
def test_bfloat16_tiles_fall_outside_puzzle_11s_tolerance_as_bfloat16_rounding_not_as_a_slip():
    """Puzzle 11's sums of 64 products of bfloat16 operands (8 bits) land up to about 1.4e-2 off, past its TF32
    tolerance, on a GPU too: the verdict names the rounding of a lower precision, and nothing else."""
    failure = grade(11, p11.dot_kernel_bf16).first_failure
    assert failure is not None and failure.status == "wrong"
    assert "the error that float16 or bfloat16 arithmetic makes" in failure.note, failure.note
    assert "whole number" not in failure.note and SLIP_NOTE not in failure.note


@interpreted_only
def test_a_wrong_bfloat16_kernel_still_fails_for_its_own_reason():
    result = grade(28, p28.attention_backward_bf16_without_delta)
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "wrong" and SLIP_NOTE in failure.note and "rowsum(dO * O)" in failure.note, failure.note
    assert "whole number" not in failure.note
    swapped = grade(11, p11.dot_kernel_bf16_swapped)
    assert not swapped.passed and "whole number" not in swapped.first_failure.note


@interpreted_only
def test_where_the_fixes_cannot_be_installed_the_verdict_names_the_interpreter(monkeypatch):
    """A Triton whose interpreter the fixes do not reach: bfloat16 computed on raw patterns again, which made
    puzzle 28's verdict "every wrong element is a whole number... converted to an integer type?"."""
    limit = "this kernel computes in bfloat16, which Triton's CPU interpreter gets wrong (test)"
    monkeypatch.setattr(bfloat16, "as_on_a_gpu", contextlib.nullcontext)
    monkeypatch.setattr(bfloat16, "interpreter_limit", lambda: limit)
    result = grade(28, p28.attention_backward_bf16)
    assert not result.passed
    assert limit in result.first_failure.note and "whole number" not in result.first_failure.note
    assert SLIP_NOTE not in result.first_failure.note
    # A float32 kernel is judged as before: the interpreter computes it right.
    from solutions.p28_attention_backward import attention_backward_kernel

    assert grade(28, attention_backward_kernel).passed
