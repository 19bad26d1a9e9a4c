"""Puzzles 19-21, the practitioner's lessons (strides, autotuning, multi-tensor apply): each reference passes,
each starter fails, and each classic mistake (a known-wrong kernel below) is caught for its own reason."""

from __future__ import annotations

import p19_colour_to_grey as p19
import p20_autotune as p20
import p21_multi_tensor_apply as p21
import pytest

from puzzles import test  # conftest imports puzzles first: the interpreter is on before triton loads
from puzzles.course import catalog

pytestmark = pytest.mark.usefixtures("memoized_launches")  # tests/conftest.py

interpreted_only = pytest.mark.interpreter("needs the interpreter's recorded accesses")


def grade(number: int, kernel, **kwargs):
    return test(kernel, catalog.get(number).spec, quiet=True, seed=kwargs.pop("seed", 1234), **kwargs)


# The references passing and the starters failing: tests/grading/test_harness.py, for every puzzle.


# -- puzzle 19: strides ------------------------------------------------------------------------------------


def test_grey_is_graded_on_non_contiguous_views():
    from puzzles.grading.layouts import storage_numel

    p = catalog.get(19)
    gaps = []
    for s in p.sizes:
        assert (s["S1"], s["S0"], s["SC"]) != (3 * s["N0"], 3, 1)  # never the packed layout
        gaps.append(storage_numel((s["N1"], s["N0"], 3), (s["S1"], s["S0"], s["SC"])) > 3 * s["N0"] * s["N1"])
    assert any(gaps) and not all(gaps)  # crops and padded rows leave gaps; a plain permute does not


def test_grey_assuming_a_contiguous_image_is_wrong():
    result = grade(19, p19.grey_kernel_contiguous)
    assert not result.passed
    assert result.first_failure.status in ("wrong", "out of bounds"), str(result)
    assert all(not o.passed for o in result.outcomes)  # every layout the grader uses catches it


@interpreted_only
def test_grey_without_a_row_mask_reads_past_the_image():
    result = grade(19, p19.grey_kernel_no_row_mask)
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "out of bounds", str(result)
    assert failure.sizes["N1"] % failure.sizes["B1"] != 0
    assert any(a.tensor in ("x", "z") for a in failure.invalid_accesses)


# -- puzzle 20: autotuning -----------------------------------------------------------------------------


def test_autotuned_reference_is_graded_under_every_config():
    p = catalog.get(20)
    result = test(p.reference(), p.spec, quiet=True)
    configs = p.reference().configs
    # Each of its configs, then two of the grader's own (issue 21), at every size.
    assert len(result.outcomes) == (len(configs) + 2) * len(p.sizes)
    assert {o.sizes["B0"] for o in result.outcomes[: len(configs) * len(p.sizes)]} == {c.kwargs["B0"] for c in configs}
    assert sum(n.startswith("config ") and n.endswith("passed") for n in result.notes) == len(configs)
    assert sum(n.startswith("grader's config ") and n.endswith("passed") for n in result.notes) == 2


def test_a_kernel_right_under_one_config_fails_naming_the_others():
    result = grade(20, p20.silu_mul_kernel_one_config)
    assert not result.passed
    by_config = {n.split(":")[0]: n for n in result.notes if n.startswith("config ")}
    assert "passed" in by_config["config 2 of 3 (B0=128, num_warps=2)"]
    assert "FAILED" in by_config["config 1 of 3 (B0=32, num_warps=1)"]
    assert "FAILED" in by_config["config 3 of 3 (B0=1024, num_warps=4)"]
    assert "B0=32 num_warps=1" in result.reason()  # the first failure names its config


@pytest.mark.interpreter("the starter's never-written output is the interpreter's recording")
def test_the_starter_verdict_says_its_reason_once(load_kernel):
    """The starter writes nothing under each of its 3 configs at 3 sizes: one reason, then "the same as above"
    (the element counts are the sizes'), and each config's note counts its rows instead of repeating it."""
    from puzzles.course.solution_source import starter_source
    from puzzles.grading.result import SAME_AS_ABOVE

    p = catalog.get(20)
    result = grade(20, load_kernel(starter_source(p), p.kernel_name))
    text = str(result)
    assert text.count("wrote nothing") == 1, text
    assert text.count(SAME_AS_ABOVE) == len(result.outcomes), text
    config_notes = [n for n in result.notes if n.startswith("config ")]
    assert len(config_notes) == 3 and all("FAILED at 3 of its 3 sizes" in n for n in config_notes), text


def test_a_plain_jit_kernel_is_refused_for_the_autotuning_puzzle():
    result = grade(20, p20.silu_mul_kernel_not_autotuned)
    assert not result.passed and result.error.kind == "rule" and "@triton.autotune" in result.reason()


# -- puzzle 21: multi-tensor apply -------------------------------------------------------------------------


def test_each_tensor_of_each_list_is_its_own_guarded_allocation():
    from puzzles.course.tensor_lists import chunk_map

    p = catalog.get(21)
    for s in p.sizes:
        lengths = [s[f"L{k}"] for k in range(s["K"])]
        assert len(set(lengths)) >= 3 and s["T"] == sum(lengths)
        assert any(n % s["B0"] for n in lengths)  # a partial last chunk somewhere
        assert chunk_map(lengths, s["B0"]).shape == (s["C"], 2)
    result = test(p.reference(), p.spec, quiet=True)
    trace = result.outcomes[0].trace
    # Outputs too are allocations of their own; z_ptr is the first output tensor, no region of its own.
    assert {"addresses", "numels", "chunks", "params[0]", "grads[3]", "moms[2]", "params_out[0]", "moms_out[3]"} <= set(
        trace.tensors)


@interpreted_only
def test_sgd_with_the_chunk_offset_from_the_program_id_misses_the_later_tensors():
    result = grade(21, p21.sgd_kernel_offset_from_pid)
    assert not result.passed
    failure = result.first_failure
    # Program ids run across the whole list: past the first tensor, every lane is masked off by
    # that tensor's size, and its new values are never written.
    assert failure.status == "unwritten", str(result)
    assert failure.unwritten[0] == (0, failure.sizes["L0"])  # the first element of the second tensor
    # The kernel sees tensors, not z: the verdict says which tensor's element that is.
    assert f"z[0, {failure.sizes['L0']}] is params_out[1][0]" in failure.reason()


@interpreted_only
def test_sgd_without_masking_the_last_chunk_runs_past_its_tensor():
    result = grade(21, p21.sgd_kernel_last_chunk_unmasked)
    assert not result.passed
    failure = result.first_failure
    assert failure.status == "out of bounds", str(result)
    first = failure.invalid_accesses[0]
    name, k = first.tensor.split("[")[0], int(first.tensor.split("[")[1].rstrip("]"))
    assert name == "params" and first.element == failure.sizes[f"L{k}"]  # just past that tensor's end


def test_tables_for_real_tensors_point_at_them():
    import torch

    from puzzles.grading.tensor_lists import tables

    params = [torch.zeros(n) for n in (5, 64, 65)]
    moms = [torch.zeros_like(p) for p in params]
    addresses, numels, chunks = tables([params, moms], 64)
    assert addresses.tolist() == [[t.data_ptr() for t in params], [t.data_ptr() for t in moms]]
    assert numels.tolist() == [5, 64, 65]
    assert chunks.tolist() == [[0, 0], [1, 0], [2, 0], [2, 1]]


@interpreted_only
def test_grey_with_the_channel_stride_hard_coded_is_named_and_its_reads_of_row_padding_reported():
    """+1, +2 instead of SC, 2·SC: right in the crop (SC = 1), the next pixels' red bytes channels-first (the slip is
    named), and the row padding past the last column where rows are padded (reported with element and line)."""
    result = grade(19, p19.grey_kernel_channels_one_apart)
    crop, permuted, padded = result.outcomes
    assert crop.passed and permuted.status == "wrong", str(result)
    assert "the output is what this slip gives: green and blue are read at pixel + 1 and pixel + 2" in permuted.note
    assert padded.status == "out of bounds", str(result)
    gap = padded.invalid_accesses[0]
    assert gap.tensor == "x" and gap.line is not None and "tl.load(pixel + 1" in gap.source, gap.describe()
    assert "load of x_ptr + 30, which is no element of x (1 after x[0, 29, 0];" in gap.describe(), gap.describe()


@pytest.mark.interpreter("the never-written elements are the interpreter's recording")
def test_a_failing_autotuned_verdict_shows_the_graders_configs_and_explains_every_unwritten_row():
    """The grader's own configs are graded and shown whatever the learner's gave (the statement promises them),
    and each config whose blocks leave gaps (pid * 128 under B0 = 32) gets the hint its overlapping ones get."""
    from puzzles.grading.autotune_configs import grader_configs, tuning_rules

    p = catalog.get(20)
    result = grade(20, p20.silu_mul_kernel_one_config)
    theirs = grader_configs(list(p20.silu_mul_kernel_one_config.configs), tuning_rules(p))
    assert {o.sizes["B0"] for o in result.outcomes} == {32, 128, 1024} | {c.kwargs["B0"] for c in theirs}
    assert sum(n.startswith("grader's config ") for n in result.notes) == len(theirs), result.notes
    for o in result.outcomes:
        if o.status == "unwritten":
            assert "pid * B0" in o.note, (o.sizes, o.note)


def test_one_still_running_note_with_every_target():
    from puzzles.running.compile_check import merge_pending_notes, pending_note

    notes = ["config 1 of 2 (B0=32, num_warps=1): passed", pending_note(["sm_80", "sm_90"]), "another note",
             pending_note(["sm_75", "sm_90"])]
    merged = merge_pending_notes(notes)
    assert merged == [notes[0], pending_note(["sm_75", "sm_80", "sm_90"]), "another note"]
    assert merge_pending_notes(notes[:3]) == notes[:3]
