"""The grader's job record and its one verdict builder, through their public interface."""

from __future__ import annotations

import dataclasses

import pytest

from puzzles.course import catalog
from puzzles.grading.job import GradingJob, make_job
from puzzles.grading.verdict import build_result
from puzzles.running.errors import KernelError
from puzzles.running.kernel import unwrap_kernel

OPTIONS = {"sizes": None, "nelem": None, "blocks": None, "seed": 7, "timeout": 5.0, "isolate": None, "record": True,
           "viz": False, "perf": False, "compile_check": False, "quiet": True}


def test_job_resolves_the_puzzle_kernel_and_spec_once():
    p = catalog.get(1)
    kernel = p.reference()
    job = make_job(kernel, None, None, **OPTIONS)  # the puzzle found from the kernel's name
    assert job.puzzle is not None and job.puzzle.number == 1
    assert job.spec is p.spec
    assert job.fn is unwrap_kernel(kernel) and job.file == job.fn.__code__.co_filename
    assert job.title == f"Puzzle 1: {p.title}" and job.kernel_name == job.fn.__name__
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.seed = 8  # type: ignore[misc]


def test_job_for_one_config_takes_the_configs_sizes_as_the_puzzles():
    p = catalog.get(20)
    job = make_job(p.reference(), p.spec, 20, **OPTIONS)
    tuned = [{**dict(s), "B0": 64, "num_warps": 4} for s in p.sizes]
    one = job.for_config(job.kernel, tuned, compile_check=True)
    assert isinstance(one, GradingJob)
    assert one.sizes == tuned and [dict(s) for s in one.puzzle.sizes] == tuned
    assert one.compile_check is True and job.compile_check is False  # the job given is unchanged
    assert one.seed == job.seed and one.spec is job.spec


def test_build_result_is_the_verdict_from_the_steps_data():
    p = catalog.get(1)
    job = make_job(p.reference(), p.spec, 1, **OPTIONS)
    error = KernelError("spec", "cannot build inputs")
    result = build_result(job, error=error, notes=["first", None, "", "second"], seconds=1.5, device="here")
    assert not result.passed and result.error is error
    assert result.notes == ["first", "second"]
    assert (result.puzzle, result.kernel, result.seed, result.seconds, result.device) == (
        job.title, job.kernel_name, 7, 1.5, "here")


def test_job_carries_the_kernel_handle_the_parsed_spec_and_the_sizes():
    p = catalog.get(11)
    job = make_job(p.reference(), p.spec, None, **OPTIONS)
    handle = job.handle
    assert handle.fn is unwrap_kernel(p.reference()) and handle.file == handle.fn.__code__.co_filename
    assert handle.param_names[:3] == ["x_ptr", "y_ptr", "z_ptr"] and handle.def_line is not None
    assert handle.chain.links == (p.reference(),) and handle.chain.jitted is p.reference()  # a plain @triton.jit kernel
    assert job.parsed_spec is p.parsed_spec and job.parsed_spec.input_names == ("x", "y")
    assert job.input_names == ["x", "y"]
    assert [dict(s) for s in job.run_sizes] == [dict(s) for s in p.sizes] and job.size_problem is None
    described = handle.description
    assert described is handle.description and described["functions"]  # made once, on first use


def test_sizes_the_rules_rule_out_are_resolved_into_a_problem_not_raised():
    p = catalog.get(1)
    job = make_job(p.reference(), p.spec, 1, **{**OPTIONS, "nelem": {"N0": 32, "B0": 16}})
    assert job.run_sizes == () and "B0 = N0" in job.size_problem


def test_one_configs_handle_shares_the_kernels_resolved_state():
    p = catalog.get(20)
    job = make_job(p.reference(), p.spec, 20, **OPTIONS)
    job.handle.description  # noqa: B018 - described once
    one = job.for_config(job.kernel, [dict(s) for s in p.sizes])
    assert one.handle.fn is job.handle.fn and one.handle.parameters is job.handle.parameters
    assert one.handle.sources is job.handle.sources and one.handle.description is job.handle.description


def test_a_warm_test_reads_the_kernel_and_the_spec_once(monkeypatch):
    """In the grading process, a warm test() of puzzle 11's reference parses source at most twice and reads
    signatures at most 4 times: the kernel, the spec and the puzzle are resolved once, into the job."""
    import ast
    import inspect
    import sys
    from pathlib import Path

    import puzzles
    from puzzles import test

    p = catalog.get(11)
    kernel = p.reference()
    assert test(kernel, p.spec, quiet=True, seed=3).passed  # warm: imports, caches, the compile check's
    counts = {"parse": 0, "signature": 0}
    parse, signature = ast.parse, inspect.signature
    course = str(Path(puzzles.__file__).parent)

    def by_the_grader() -> bool:  # torch's and Triton's own calls (on a GPU, CUDA's set-up) are not counted
        return sys._getframe(2).f_code.co_filename.startswith(course)

    def counting_parse(*args, **kwargs):
        counts["parse"] += by_the_grader()
        return parse(*args, **kwargs)

    def counting_signature(*args, **kwargs):
        counts["signature"] += by_the_grader()
        return signature(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting_parse)
    monkeypatch.setattr(inspect, "signature", counting_signature)
    assert test(kernel, p.spec, quiet=True, seed=3).passed
    assert 1 <= counts["parse"] <= 2 and 1 <= counts["signature"] <= 4, counts  # read once, not never
