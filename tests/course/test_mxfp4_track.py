"""Puzzle 33, block-scaled MXFP4 matmul: the format (puzzles/course/mxfp4.py) bit-exact on hand-written bytes; the
reference and a right kernel in another style pass; each slip is named for the kernel that makes it; tl.dot_scaled
runs where the interpreter has it and is refused in words (its line, the Triton it needs) where it has not, while
the puzzle's own path runs everywhere."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import p33_mxfp4_matmul as p33
import pytest
import torch
from judging import grade, interpreted_only

from puzzles import on_gpu, test
from puzzles.course import catalog, mistakes_mxfp4, mxfp4
from puzzles.grading.job import make_job
from puzzles.running.compile_check.settings import targets_for
from puzzles.running.interpreter_hooks import interprets_dot_scaled

PUZZLE = catalog.get(33)

# (value, code): every e2m1 code, and the ties, which round to the even code (mantissa bit 0), in blocks whose
# largest value is in [4, 8) so that their scale is 2^0.
E2M1_CASES = [
    (0.0, 0x0), (0.5, 0x1), (1.0, 0x2), (1.5, 0x3), (2.0, 0x4), (3.0, 0x5), (4.0, 0x6), (6.0, 0x7),
    (-0.5, 0x9), (-1.0, 0xA), (-1.5, 0xB), (-2.0, 0xC), (-3.0, 0xD), (-4.0, 0xE), (-6.0, 0xF),
    (0.25, 0x0), (0.75, 0x2), (1.25, 0x2), (1.75, 0x4), (2.5, 0x4), (3.5, 0x6), (5.0, 0x6),  # ties to even
    (7.9, 0x7), (-7.9, 0xF), (-0.1, 0x8),  # saturated at ±6; a small negative rounds to −0
    (0.3, 0x1), (2.6, 0x5), (-4.9, 0xE),
]


def test_the_quantizer_packs_hand_written_values_into_the_bytes_written_by_hand():
    values = torch.tensor([v for v, _ in E2M1_CASES] + [0.0] * (32 - len(E2M1_CASES)))
    w, scale = mxfp4.quantize(values[:, None])
    assert scale.tolist() == [[127]]  # the largest, 7.9, is in [4, 8): 2^(2 − 2)
    codes = [c for _, c in E2M1_CASES] + [0] * (32 - len(E2M1_CASES))
    expected = [codes[2 * j] | codes[2 * j + 1] << 4 for j in range(16)]  # the even row in the low nibble
    assert w[:, 0].tolist() == expected
    assert expected[:4] == [0x10, 0x32, 0x54, 0x76]


def test_each_blocks_scale_is_its_largest_exponent_less_two_and_a_zero_block_gets_one():
    column = torch.zeros(96, 2)
    column[0:32, 0] = 6.0 * 2.0 ** -3  # largest 0.75: ⌊log2⌋ = −1, scale 2^−3
    column[5, 0] = -0.5 * 2.0 ** -3
    column[32:64, 0] = 100.0  # ⌊log2 100⌋ = 6: scale 2^4, 100 / 16 = 6.25 -> 6
    column[64:96, 1] = 1.0  # ⌊log2 1⌋ = 0: scale 2^−2, 1 / 0.25 = 4
    w, scale = mxfp4.quantize(column)
    assert scale.tolist() == [[124, 127], [131, 127], [127, 125]]  # zero blocks: 127
    assert w[0, 0] == 0x77 and w[2, 0] == 0x97  # rows 4, 5: 6 then −0.5 (low nibble 7, high nibble 9)
    assert w[16, 0] == 0x77 and w[40, 1] == 0x66 and w[40, 0] == 0
    dequantized = mxfp4.dequantize(w, scale)
    assert dequantized[:32, 0].tolist() == column[:32, 0].tolist()  # on the grid: exact
    assert dequantized[32:64, 0].unique().tolist() == [96.0]


def test_the_spec_decodes_hand_written_bytes_and_scales_bit_for_bit():
    w = torch.zeros(16, 2, dtype=torch.uint8)  # K = 32: one block
    w[0] = torch.tensor([0x21, 0xF9], dtype=torch.uint8)  # column 0: rows 0, 1 = 0.5, 1; column 1: −0.5, −6
    w[15] = torch.tensor([0x07, 0x80], dtype=torch.uint8)  # column 0: rows 30, 31 = 6, 0; column 1: 0, −0
    scale = torch.tensor([[128, 120]], dtype=torch.uint8)  # 2^1 and 2^−7
    expected = torch.zeros(32, 2)
    expected[0, 0], expected[1, 0], expected[30, 0] = 1.0, 2.0, 12.0
    expected[0, 1], expected[1, 1] = -0.5 / 128, -6.0 / 128
    assert torch.equal(mxfp4.dequantize(w, scale), expected)
    x = torch.eye(32, dtype=torch.float16)[:3]
    assert torch.equal(PUZZLE.spec(x, w, scale), expected[:3])
    assert mxfp4.E2M1_VALUES[8].item() == 0.0 and torch.signbit(mxfp4.E2M1_VALUES[8])


def test_quantized_grid_values_come_back_exact_and_others_close():
    gen = torch.Generator().manual_seed(3)
    weights = torch.randn(128, 16, generator=gen)
    w, scale = mxfp4.quantize(weights)
    assert torch.equal(mxfp4.quantize(mxfp4.dequantize(w, scale))[0], w)
    unit = torch.exp2(scale.float() - 127).repeat_interleave(32, dim=0)
    # within half of the coarsest step (4 to 6: 2 units), or saturated from below 8 units to 6
    assert ((mxfp4.dequantize(w, scale) - weights).abs() < 2 * unit).all()


def test_the_graded_weights_use_every_code_and_scales_that_differ_between_blocks_and_columns():
    for index, sizes in enumerate(PUZZLE.sizes):
        drawn = mxfp4.graded_weights(sizes, index, torch.Generator().manual_seed(index))
        assert drawn["w"].shape == (sizes["K"] // 2, sizes["N"]) and drawn["scale"].shape == (sizes["K"] // 32,
                                                                                                sizes["N"])
        assert (drawn["scale"] != mxfp4.NAN_SCALE).all() and len(drawn["scale"].unique()) > 3
        assert len(mxfp4.nibbles_along_k(drawn["w"]).unique()) == 16


def test_every_size_has_whole_blocks_and_ragged_tiles():
    assert all(s["K"] % 32 == 0 and s["BK"] % 32 == 0 for s in PUZZLE.sizes)
    assert any(s["M"] % s["BM"] for s in PUZZLE.sizes) and any(s["N"] % s["BN"] for s in PUZZLE.sizes)
    assert any(s["K"] % s["BK"] for s in PUZZLE.sizes)


@interpreted_only
def test_the_reference_and_a_right_kernel_in_another_style_pass():
    for kernel in (PUZZLE.reference(), *p33.CORRECT, *p33.SLOW):
        result = grade(33, kernel, seed=1)
        assert result.passed, str(result)


@interpreted_only
@pytest.mark.parametrize("kernel", [*p33.FAST_LEVERS, *p33.FAST_SETTINGS], ids=lambda k: k.__name__)
def test_the_fast_references_changes_alone_and_its_other_settings_pass_at_every_size(kernel):
    """What benchmarks/p33_variants.py times on a GPU is right first: each change of the fast reference alone, and
    the fast reference with other trips, stages and decodes (subnormal float16 into tl.dot, a tl.gather table)."""
    result = grade(33, kernel, seed=1)
    assert result.passed, str(result)
    assert len(result.outcomes) == len(PUZZLE.sizes)


def test_the_fast_reference_decodes_every_code_at_every_scale_bit_for_bit():
    """One weight per column of x's identity: z is W itself, each of the 16 codes in both nibbles times scales from
    2^-7 to 2^8 (the teaching kernel's float16 weights overflow past 2^15; the fast one scales float32 sums). On a GPU
    the kernel runs compiled there: the tensor cores' sums of the decoded codes checked bit for bit too."""
    fast = PUZZLE.fast_reference_kernel()
    device = "cuda" if on_gpu() else "cpu"
    k_size, n_size = 64, 16
    x = torch.eye(k_size, dtype=torch.float16)[:16]
    scale = torch.arange(120, 136, dtype=torch.uint8).repeat(k_size // 32, 1)
    for code in range(16):
        w = torch.full((k_size // 2, n_size), code | (15 - code) << 4, dtype=torch.uint8)
        z = torch.empty(16, n_size, device=device)
        fast[(1, 1)](x.to(device), w.to(device), scale.to(device), z, 16, n_size, k_size, BM=16, BN=16, BK=32)
        assert torch.equal(z.cpu(), PUZZLE.spec(x, w, scale)), code


@interpreted_only
@pytest.mark.parametrize(("kernel", "slip"), [
    (p33.mxfp4_nibbles_swapped, "the nibbles are swapped"),
    (p33.mxfp4_scale_without_bias, "the scale is taken as 2^s"),
    (p33.mxfp4_sign_ignored, "the sign bit is ignored"),
    (p33.mxfp4_scales_n_major, "the scales are read as if stored N × K/32"),
])
def test_each_slip_is_named_at_every_size(kernel, slip):
    result = grade(33, kernel, seed=1)
    assert not result.passed
    for outcome in result.outcomes:
        assert outcome.status == "wrong" and slip in outcome.note, str(result)
        assert sum(m.text in outcome.note for m in PUZZLE.likely_mistakes) == 1, outcome.note  # that one only


def test_the_slips_differ_from_the_spec_and_from_each_other_at_every_size():
    for index, sizes in enumerate(PUZZLE.sizes):
        gen = torch.Generator().manual_seed(index)
        inputs = {"x": (torch.rand(sizes["M"], sizes["K"], generator=gen) - 0.5).half(),
                  **mxfp4.graded_weights(sizes, index, gen)}
        right = PUZZLE.spec(inputs["x"], inputs["w"], inputs["scale"])
        outputs = [m.output(inputs, sizes) for m in PUZZLE.likely_mistakes]
        for mistake, output in zip(PUZZLE.likely_mistakes, outputs, strict=True):
            assert not torch.allclose(output, right, rtol=1e-3, atol=1e-3, equal_nan=True), mistake.text
        for a in range(len(outputs)):
            for b in range(a + 1, len(outputs)):
                assert not torch.allclose(outputs[a], outputs[b], rtol=1e-3, atol=1e-3, equal_nan=True)
    assert mistakes_mxfp4.scale_without_bias(inputs, sizes).isnan().any()  # float16 overflow: inf − inf


@interpreted_only
def test_rows_past_k_loaded_unmasked_are_out_of_bounds_where_k_is_no_multiple_of_bk():
    result = grade(33, p33.mxfp4_k_unmasked, seed=1)
    for outcome in result.outcomes:
        ragged = outcome.sizes["K"] % outcome.sizes["BK"] != 0
        assert outcome.status == ("out of bounds" if ragged else "passed"), str(result)


@interpreted_only
def test_dot_scaled_runs_where_the_interpreter_has_it_and_is_refused_in_words_where_not():
    result = grade(33, p33.mxfp4_dot_scaled, seed=1)
    if interprets_dot_scaled():
        assert result.passed, str(result)  # its scales BN × BK/32: the puzzle's K/32 × N read transposed
        return
    assert not result.passed and not result.outcomes and result.error.kind == "setup", str(result)
    message = result.error.message
    assert "mxfp4_dot_scaled calls tl.dot_scaled" in message and "from triton 3.8 on" in message, message
    assert "tl.dot_scaled(x, None" in result.error.source and "Traceback" not in str(result)


@interpreted_only
@pytest.mark.skipif(not interprets_dot_scaled(), reason="this Triton's interpreter does not run tl.dot_scaled (3.8 on)")
def test_dot_scaled_given_the_scales_as_stored_is_told_their_layout_at_its_line():
    result = grade(33, p33.mxfp4_dot_scaled_scales_as_stored, seed=1)
    assert not result.passed
    for outcome in result.outcomes:
        assert outcome.status == "error" and "BN × BK/32 for the right one" in outcome.error.message, str(result)
        assert "SCALES_AS_STORED" in outcome.error.source


def test_only_a_kernel_that_calls_dot_scaled_is_refused_where_the_interpreter_lacks_it():
    absent = dataclasses.replace(PUZZLE.needs_triton, present=lambda: False)
    lacking = dataclasses.replace(PUZZLE, needs_triton=absent)
    refused = test(p33.mxfp4_dot_scaled, PUZZLE.spec, puzzle=lacking, quiet=True, seed=1, compile_check=False)
    assert not refused.passed and "needs tl.dot_scaled" in refused.error.message, str(refused)
    assert refused.error.line is not None
    graded = test(PUZZLE.reference(), PUZZLE.spec, puzzle=lacking, quiet=True, seed=1, compile_check=False)
    assert graded.passed, str(graded)


def test_a_kernel_calling_dot_scaled_is_compiled_for_sm_90_alone_and_the_others_for_every_target():
    # Triton 3.7.1 and 3.9.0 both fail in ptxas on tl.dot_scaled's sm_80 code (an internal codegen error), and
    # Hopper has no e2m1 instruction anyway: the check compiles such a kernel for sm_90 only.
    assert make_job(p33.mxfp4_dot_scaled, None, 33).compile_min_sm == 90 and targets_for(90) == (90,)
    assert make_job(PUZZLE.reference(), None, 33).compile_min_sm == 75 and targets_for(75) == (75, 80, 90)


@interpreted_only
def test_the_variants_benchmark_launches_every_variant_as_the_gpu_will_and_checks_it_against_the_spec(monkeypatch):
    """benchmarks/p33_variants.py runs on a GPU the lead has and this machine has not: here each of its rows is
    launched as it launches them (its grid, BN, BK and warps), under the interpreter at a ragged size, timing
    stubbed; every right kernel's error is float32 rounding, and one the interpreter cannot run (tl.dot_scaled
    before 3.8) is a row that says so while the others are still run."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    variants = importlib.import_module("p33_variants")
    monkeypatch.setattr(variants, "timed", lambda run: (run(), 1.0)[1])
    benchmarked = {kernel for _, kernel, _ in variants.VARIANTS}
    assert {*p33.FAST_LEVERS, *p33.FAST_SETTINGS, PUZZLE.reference(), PUZZLE.fast_reference_kernel()} <= benchmarked
    sizes = {"M": 20, "N": 136, "K": 544, "BM": 16, "BN": 64, "BK": 256}  # K: 2 chunks and 4 blocks of a third
    gen = torch.Generator().manual_seed(2)
    inputs = {"x": (torch.rand(sizes["M"], sizes["K"], generator=gen) - 0.5).half(),
              **mxfp4.graded_weights(sizes, 0, gen)}
    want = PUZZLE.spec(inputs["x"], inputs["w"], inputs["scale"])
    for name, kernel, changes in variants.VARIANTS:
        what, us, error = variants.time_variant(kernel, changes, inputs, sizes, want)
        if kernel is p33.mxfp4_dot_scaled and not interprets_dot_scaled():
            assert error is None and us == float("inf") and "did not run" in variants.table_row(
                (name, what, us, error), 1.0, 1.0, 1.0), what
            continue
        assert error is not None and error < variants.TOLERANCE, (name, what, error)
        assert f"BN {changes.get('BN', 64)}," in what and f"{changes.get('num_warps', 4)} warps" in what
    wrong = variants.table_row(("w", "", 2.0, float("nan")), 4.0, 8.0, 1.0)
    assert wrong == "| w |  | 2.0 | 2.00 | 4.00 | 2.0 | nan WRONG |"
