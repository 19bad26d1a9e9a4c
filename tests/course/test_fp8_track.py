"""Puzzle 32, FP8 scaled matmul: the reference and the right kernels in other styles pass; the inputs are float8
values cast from scaled floats (exactly representable) with a scale per row of x and of w (N x K); each slip is
named at the sizes where it shows (scales dividing, the accumulator rescaled in the K loop, the scales on swapped
axes); scaling each chunk is right; the puzzle compiles for sm_90 only and an older GPU is told so in words."""

from __future__ import annotations

import p32_fp8_scaled_matmul as p32
import pytest
import torch
from judging import grade

from puzzles.course import catalog, mistakes_fp8
from puzzles.running import gpu_worker
from puzzles.running.compile_check import targets_for

PUZZLE = catalog.get(32)


def test_the_reference_the_right_kernels_in_other_styles_and_the_slow_one_pass():
    for kernel in (PUZZLE.reference(), *p32.CORRECT, *p32.SLOW):
        result = grade(32, kernel, seed=1)
        assert result.passed, str(result)


def test_the_sizes_are_ragged_take_several_k_chunks_of_at_least_32_and_one_is_square():
    assert any(s["M"] % s["BM"] and s["N"] % s["BN"] and s["K"] % s["BK"] for s in PUZZLE.sizes)
    assert all(s["K"] > s["BK"] >= 32 for s in PUZZLE.sizes)  # fp8 tl.dot on sm_90 wants BK >= 32
    assert any(s["M"] == s["N"] for s in PUZZLE.sizes) and any(s["M"] != s["N"] for s in PUZZLE.sizes)


@pytest.mark.parametrize("index", range(4))
def test_the_inputs_are_float8_casts_of_scaled_floats_with_a_scale_per_row_of_x_and_of_w(index):
    sizes = PUZZLE.sizes[index]
    i = mistakes_fp8.quantized_inputs(sizes, index, torch.Generator().manual_seed(index))
    assert i["x"].dtype == i["w"].dtype == torch.float8_e4m3fn
    assert i["x_scale"].shape == (sizes["M"],) and i["w_scale"].shape == (sizes["N"],)
    assert i["x"].shape == (sizes["M"], sizes["K"]) and i["w"].shape == (sizes["N"], sizes["K"])  # w: a Linear's
    for name in ("x", "w"):
        values = i[name].float()
        assert torch.isfinite(values).all() and torch.equal(values.to(torch.float8_e4m3fn).float(), values)
        assert (values.abs().amax(1) == mistakes_fp8.FP8_MAX).all()  # each row spans the fp8 range
    scales = i["x_scale"]
    assert (scales > 0).all() and scales.max() / scales.min() > 3  # a scale on the wrong axis is far off


def test_scales_that_divide_are_named_at_every_size():
    result = grade(32, p32.fp8_scales_divide, seed=1)
    assert not result.passed
    assert all(o.status == "wrong" and "the scales divide the sum" in o.note for o in result.outcomes), str(result)


def test_an_accumulator_rescaled_in_the_k_loop_is_named_with_its_chunk_count():
    result = grade(32, p32.fp8_accumulator_rescaled_in_loop, seed=1)
    assert not result.passed
    for o in result.outcomes:
        assert o.status == "wrong" and "multiplied by the scales inside the K loop" in o.note, str(result)
    assert "K = 80 is 3 chunks of BK = 32, so the first is scaled 3 times" in result.outcomes[0].note


def test_scales_on_swapped_axes_are_named_where_m_is_n_and_read_out_of_bounds_elsewhere():
    result = grade(32, p32.fp8_scales_swapped, seed=1)
    assert not result.passed
    for o in result.outcomes:
        if o.sizes["M"] == o.sizes["N"]:
            assert o.status == "wrong" and "the scales are on the swapped axes" in o.note, str(result)
        else:
            assert o.status == "out of bounds", str(result)
    # N = 72 < M = 100: w_scale read at rows past its end; M = 48 < N = 80: x_scale at columns past its end.
    assert "load of w_scale[72] out of bounds" in str(result) and "load of x_scale[48] out of bounds" in str(result)


def test_w_read_as_k_by_n_is_named_at_every_size():
    """The kernel written for the layout w is not in (k * N + n): it reads within w's bytes, so no access check
    fires; the values are wrong and the slip says where w[n, k] is."""
    result = grade(32, p32.fp8_w_read_as_k_by_n, seed=1)
    assert not result.passed
    for o in result.outcomes:
        assert o.status == "wrong" and "w is read as if it were K x N" in o.note and "n * K + k" in o.note, str(result)


def test_per_tensor_scales_give_wrong_values_and_no_slip_of_another_kind():
    # The dividing slip overflows float16 to inf: an infinite slip must not match finite wrong values (rtol * inf).
    result = grade(32, p32.fp8_scale_vector_per_tensor, seed=1)
    assert not result.passed
    assert all(o.status == "wrong" and "slip gives" not in o.note for o in result.outcomes), str(result)


def test_the_slips_agree_with_the_spec_where_they_change_nothing():
    sizes = {"M": 20, "N": 20, "K": 24, "BM": 16, "BN": 16, "BK": 32}  # one K chunk: a rescaled accumulator is right
    i = mistakes_fp8.quantized_inputs(sizes, 0, torch.Generator().manual_seed(0))
    expected = PUZZLE.spec(i["x"], i["x_scale"], i["w"], i["w_scale"])
    torch.testing.assert_close(mistakes_fp8.accumulator_rescaled_each_chunk(i, sizes), expected, rtol=1e-3, atol=1e-3)
    assert mistakes_fp8.scales_on_swapped_axes(i, {**sizes, "N": 21}) is None


def test_the_compile_check_drops_targets_below_the_puzzles_oldest_gpu():
    assert PUZZLE.min_sm == 89 and targets_for(89) == (90,)
    assert targets_for(75) == (75, 80, 90) and targets_for(80) == (80, 90)


def test_the_reference_compiles_for_sm_90_with_no_note(tmp_path, monkeypatch):
    monkeypatch.setenv("PUZZLES_COMPILE_CACHE", str(tmp_path))
    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    result = grade(32, PUZZLE.reference(), seed=1, compile_check=True)
    assert result.passed and "not supported in this architecture" not in str(result), str(result)


def test_a_gpu_older_than_sm_89_is_told_the_puzzle_needs_one(monkeypatch):
    """The capability comes from what the GPU worker said when it loaded: asking torch.cuda would load CUDA in the
    notebook's own process, which a learner's faulting kernel must never share."""
    def no_cuda_here(*args):
        raise AssertionError("the notebook's process asked CUDA")

    monkeypatch.setattr(gpu_worker, "on_gpu", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", no_cuda_here)
    monkeypatch.setattr(torch.cuda, "get_device_name", no_cuda_here)
    monkeypatch.setattr(gpu_worker, "device_capability", lambda: 80)
    monkeypatch.setattr(gpu_worker, "device_name", lambda: "NVIDIA A100-SXM4-80GB")
    result = grade(32, PUZZLE.reference(), seed=1)
    assert not result.passed
    message = result.error.message
    assert result.error.kind == "setup" and "Traceback" not in str(result)
    assert "puzzle 32 needs a GPU of compute capability 8.9 or newer" in message and "sm_80" in message, message
    assert "A100" in message and "TRITON_INTERPRET=1" in message
    monkeypatch.setattr(gpu_worker, "device_capability", lambda: 90)
    assert gpu_worker.gpu_too_old(89, 32) == ""


def test_the_efficiency_report_predicts_for_a_hopper_and_is_off_with_a_reason_for_an_a100():
    hopper = grade(32, PUZZLE.reference(), seed=5, efficiency=True, gpu="H200")
    assert hopper.passed and hopper.efficiency is not None and hopper.efficiency.gpu == "H200", str(hopper)
    ampere = grade(32, PUZZLE.reference(), seed=5, efficiency=True, gpu="A100")
    assert ampere.passed and ampere.efficiency is None
    assert "the A100 (sm_80) cannot run this puzzle's kernel, which needs sm_89" in str(ampere), str(ampere)
