"""The grader's rules hold for what a kernel really does (issue 21): puzzle 15's ban on tl.dot through helpers
and aliases, puzzle 20 graded under configs of the grader's own, parameters that a default, @triton.heuristics or
an autotune config supplies, and the order in which sizes are declared."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import p02_constant_add_block as p02
import p15_int8_gemv as p15
import p20_autotune as p20
import p21_multi_tensor_apply as p21
import pytest
import triton

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.autotune_configs import grader_configs, tuning_rules
from puzzles.grading.operations import forbidden_calls
from puzzles.running.kernel import kernel_file, unwrap_kernel

SEEDS = range(20)
# Puzzle 20 at 20 seeds: what the seed changes is which configs the grader picks; small sizes keep it fast
# (one several programs long, one shorter than any block).
SMALL_20 = [{"N0": 300, "B0": 64}, {"N0": 97, "B0": 64}]


def name_of(kernel) -> str:
    return unwrap_kernel(kernel).__name__


def grade(number: int, kernel, seed: int = 1234, **kwargs):
    return test(kernel, catalog.get(number).spec, quiet=True, seed=seed, **kwargs)


def marked_line(fn, marker: str = "FORBIDDEN") -> int:
    fn = getattr(fn, "fn", fn)
    lines, first = inspect.getsourcelines(fn)
    return next(first + i for i, text in enumerate(lines) if marker in text)


# -- puzzle 15: tl.dot however it is reached ------------------------------------------------------------------


@pytest.mark.parametrize("how", list(p15.GEMV_WITH_DOT))
def test_tl_dot_is_found_through_helpers_and_aliases(how):
    kernel, helper = p15.GEMV_WITH_DOT[how]
    result = grade(15, kernel)
    assert not result.passed and result.error is not None and result.error.kind == "rule", str(result)
    assert "not to use tl.dot" in result.error.message
    assert not result.outcomes  # rejected before running
    where = helper or kernel
    assert result.error.line == marked_line(where)
    assert result.error.filename == kernel_file(where) and "FORBIDDEN" in result.error.source
    name = getattr(where, "fn", where).__name__
    assert f"{name} " in result.error.message  # the function that makes the call is named
    if helper is not None:
        assert "called from" in result.error.message and kernel.fn.__name__ in result.error.message


def test_the_scaled_tensor_core_product_is_ruled_out_too():
    result = grade(15, p15.int8_gemv_kernel_dot_scaled)
    assert not result.passed and result.error is not None and result.error.kind == "rule", str(result)
    assert "not to use tl.dot_scaled" in result.error.message
    assert result.error.line == marked_line(p15.int8_gemv_kernel_dot_scaled)


def test_the_search_resolves_names_not_text():
    # A helper of the learner's called `dot` that sums is not tl.dot; every alias of tl.dot is.
    assert forbidden_calls(p15.int8_gemv_kernel_helper_named_dot, ("dot",)) == []
    for kernel, _ in p15.GEMV_WITH_DOT.values():
        assert [c.name for c in forbidden_calls(kernel, ("dot",))] == ["dot"]
    written = {forbidden_calls(k, ("dot",))[0].written for k, _ in p15.GEMV_WITH_DOT.values()}
    assert {"mm", "matmul", "T.dot", "product", "tl.dot"} <= written


def test_a_helper_named_dot_that_does_not_use_tl_dot_passes():
    result = grade(15, p15.int8_gemv_kernel_helper_named_dot)
    assert result.passed, str(result)


@pytest.mark.interpreter("the ahead-of-time compile check runs only without a GPU")
def test_tl_dot_that_no_name_shows_is_found_in_the_compiled_ir(tmp_path, monkeypatch):
    monkeypatch.setenv("PUZZLES_COMPILE_CACHE", str(tmp_path / "compile-cache"))
    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    kernel = p15.int8_gemv_kernel_dot_by_alias
    assert forbidden_calls(kernel, ("dot",)) == []  # tl.dot passed to a helper that calls its parameter
    result = grade(15, kernel)
    assert not result.passed
    failure = result.first_failure
    assert failure.error is not None and failure.error.kind == "rule", str(result)
    assert "not to use tl.dot" in failure.error.message and "tt.dot" in failure.error.message
    assert failure.error.line == marked_line(p15._apply) and "FORBIDDEN" in failure.error.source
    assert all(not o.passed for o in result.outcomes)
    # getattr(tl, "d" + "ot") shows no name either; it is refused before it runs, as reflection in a kernel
    by_name = grade(15, p15.int8_gemv_kernel_dot_by_name)
    assert by_name.outcomes == [] and "calls Python's `getattr`" in by_name.error.message


# -- puzzle 20: the grader's own configs ----------------------------------------------------------------------


def test_the_grader_picks_its_configs_within_the_puzzles_rules_and_off_the_learners():
    rules = tuning_rules(catalog.get(20))
    assert rules["B0"] and rules["num_warps"]
    for blocks in [(64,), (32, 128, 1024), (32,), (1024,), (32, 64, 128, 256, 512, 1024)]:
        learner = [triton.Config({"B0": b, "UNROLL": 2}, num_warps=2) for b in blocks]
        configs = grader_configs(learner, rules)
        chosen = [c.kwargs["B0"] for c in configs]
        assert len(configs) == 2 and all(b in rules["B0"] for b in chosen)
        if len(blocks) < len(rules["B0"]):
            assert not set(chosen) & set(blocks)  # values the learner's configs do not use
        assert chosen[0] == min(set(rules["B0"]) - set(blocks) or rules["B0"])
        assert chosen[1] == max(set(rules["B0"]) - set(blocks) or rules["B0"])
        assert all(c.num_warps in rules["num_warps"] and c.num_warps != 2 for c in configs)
        assert all(c.kwargs["UNROLL"] == 2 for c in configs)  # the learner's other meta-parameters are kept


@pytest.mark.parametrize("kernel", [p20.silu_mul_kernel_literal_block, p20.silu_mul_kernel_literal_stride],
                         ids=name_of)
def test_a_kernel_right_only_under_its_own_configs_fails_under_the_graders(kernel):
    for seed in SEEDS:
        result = grade(20, kernel, seed=seed, sizes=SMALL_20, compile_check=False, isolate=False)
        assert not result.passed, seed
        assert "config 1 of 1" in " ".join(result.notes) and "passed" in result.notes[1]  # its own config passes
        assert "config of the grader's own" in result.notes[0], result.notes
        failure = result.first_failure
        assert "under the grader's own config" in failure.reason() and "not one of yours" in failure.reason()
        assert failure.sizes["B0"] != kernel.configs[0].kwargs["B0"]


@pytest.mark.parametrize("kernel", [catalog.get(20).reference(), p20.silu_mul_kernel_extra_meta,
                                    p20.silu_mul_kernel_heuristics_above], ids=name_of)
def test_correct_autotuned_kernels_pass_under_every_config(kernel):
    assert grade(20, kernel).passed  # at the puzzle's own sizes, compile check included
    for seed in SEEDS:
        result = grade(20, kernel, seed=seed, sizes=SMALL_20, compile_check=False, isolate=False)
        assert result.passed, (seed, str(result))
        assert sum(n.startswith("grader's config") and n.endswith("passed") for n in result.notes) == 2


def _forked_children() -> list[int]:
    """This process's children running this same program (run_in_child's forks; the compile check's
    workers run another script)."""
    own = Path("/proc/self/cmdline").read_bytes()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid() \
                    and (entry / "cmdline").read_bytes() == own:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return found


@pytest.mark.interpreter("the interpreted path")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("kernel", [catalog.get(20).reference(), p20.silu_mul_kernel_wrong_second_config],
                         ids=name_of)
def test_every_config_starts_before_any_is_read_and_the_unneeded_are_ended(kernel, monkeypatch):
    """The configs' runs work side by side (a warm grading cell of puzzle 20 on a GPU within 1 s): every
    config, the grader's too, starts before the first is read; where one of the learner's configs fails, the
    grader's configs are still read (a failing verdict shows their rows, as the statement promises), and no
    child process is left."""
    import puzzles.grading as harness

    events: list[str] = []
    real_start = harness.start_grading

    def recording_start(job, started):
        begun = real_start(job, started)
        name = f"B0={job.sizes[0]['B0']}"
        events.append(f"start {name}")
        finish, cancel = begun.finish, begun.cancel
        begun.finish = lambda: (events.append(f"finish {name}"), finish())[1]
        begun.cancel = lambda: (events.append(f"cancel {name}"), cancel())[1]
        return begun

    monkeypatch.setattr(harness, "start_grading", recording_start)
    result = grade(20, kernel, sizes=SMALL_20, compile_check=False)
    starts = [e for e in events if e.startswith("start")]
    assert len(starts) == 4, events  # three of the learner's configs and one run of the grader's two
    assert events[:4] == starts, events  # all started before any was read
    if result.passed:
        assert not any(e.startswith("cancel") for e in events), events
    else:
        assert "config 2 of 3 (B0=128" in " ".join(result.notes) and "FAILED" in " ".join(result.notes)
        # each of the learner's configs gets its verdict, and so do the grader's
        assert events[4:] == ["finish B0=64", "finish B0=128", "finish B0=256", f"finish {starts[3][6:]}"], events
    assert _forked_children() == []


# -- parameters and their order ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [p02.add_mask2_kernel_default, p02.add_mask2_kernel_heuristics],
                         ids=name_of)
def test_parameters_a_default_or_heuristics_supply_are_accepted(kernel):
    for seed in SEEDS:  # the compile check too, once (it must accept the parameters as well)
        result = grade(2, kernel, seed=seed, compile_check=seed == 0, isolate=False)
        assert result.passed, (seed, str(result))


def test_a_parameter_nothing_supplies_is_still_refused():
    result = grade(2, p02.add_mask2_kernel_unknown)
    assert result.error is not None and result.error.kind == "signature"
    assert "'ADD' that this puzzle does not provide" in result.error.message


def test_sizes_declared_in_another_order_are_passed_by_name_and_the_verdict_says_so():
    result = grade(2, p02.add_mask2_kernel_sizes_reordered)
    assert result.passed, str(result)
    note = next(n for n in result.notes if "declares its parameters in the order" in n)
    assert "(x_ptr, z_ptr, B0, N0)" in note and "(x_ptr, z_ptr, N0, B0)" in note and "by name" in note
    assert not any("declares its parameters" in n for n in grade(2, catalog.get(2).reference()).notes)


def test_where_the_notebook_launches_a_size_by_position_the_grader_does_too():
    result = grade(20, p20.silu_mul_kernel_sizes_reordered)
    assert result.error is not None and result.error.kind == "signature", str(result)
    assert "silu_mul_kernel[grid](x, y, z, N0)" in result.error.message
    assert "declare N0 right after the pointers" in result.error.message


def test_puzzle_21s_count_of_tensors_is_passed_by_position_as_its_one_launch_cell_does():
    result = grade(21, p21.sgd_kernel_count_last)
    assert result.error is not None and result.error.kind == "signature", str(result)
    assert "sgd_kernel[grid](addresses, numels, chunks, z, K)" in result.error.message
    assert "declare K right after the pointers" in result.error.message
    assert grade(21, catalog.get(21).reference()).passed
