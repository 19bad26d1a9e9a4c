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
