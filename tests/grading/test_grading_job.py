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
    one, two = (job.for_config(job.kernel, [dict(s) for s in p.sizes]) for _ in range(2))
    assert one.handle.fn is job.handle.fn and one.handle.parameters is job.handle.parameters
    assert one.handle.chain.decorators is job.handle.chain.decorators
    assert one.handle.sources is job.handle.sources
    # Described by whichever config asks first (none did before the configs were made), then shared.
    assert one.handle.description is two.handle.description is job.handle.description is not None
    assert (one.expected_signature, one.parsed_spec) == (job.expected_signature, job.parsed_spec)


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


class FactCounter:
    """Counts how often test() derives each fact of a job: the kernel's chain walked, its description made, the
    expected signature read from the reference, the sizes resolved, the spec fetched from its cache, and each
    function's source read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, kernel) -> None:
        import ast
        import sys
        from pathlib import Path

        import puzzles
        from puzzles.course.puzzle import Puzzle
        from puzzles.course.spec import parse_spec
        from puzzles.grading import job as job_module
        from puzzles.running import kernel as kernel_module
        from puzzles.running import kernel_chain, kernel_source

        self.counts = {"walk": 0, "description": 0, "expected_signature": 0, "sizes": 0, "parse_spec": 0}
        self.parsed = 0  # source parsed by the course's code (not torch's or Triton's)
        self.sources: dict = {}
        self.monkeypatch = monkeypatch
        walk, describe, expected = kernel_chain.walk_chain, kernel_source.describe_kernel, Puzzle.expected_signature
        size_list, read_source = job_module.size_list, kernel_module.read_source

        def counting_walk(obj):  # a global's walk while describing the kernel is not the kernel's
            self.counts["walk"] += obj is kernel or kernel_chain.is_config_launch(obj)
            return walk(obj)

        self.wrap(kernel_chain, "walk_chain", counting_walk)
        self.wrap(kernel_module, "walk_chain", counting_walk)
        self.wrap(kernel_source, "describe_kernel", self.counted("description", describe))
        self.wrap(Puzzle, "expected_signature", self.counted("expected_signature", expected))
        self.wrap(job_module, "size_list", self.counted("sizes", size_list))

        def counting_read(fn):
            key = getattr(fn, "__code__", fn)
            self.sources[key] = self.sources.get(key, 0) + 1
            return read_source(fn)

        self.wrap(kernel_module, "read_source", counting_read)
        course, parse = str(Path(puzzles.__file__).parent), ast.parse

        def counting_parse_source(*args, **kwargs):
            self.parsed += sys._getframe(1).f_code.co_filename.startswith(course)
            return parse(*args, **kwargs)

        self.wrap(ast, "parse", counting_parse_source)
        counting_parse = self.counted("parse_spec", parse_spec)
        for name, module in list(sys.modules.items()):  # every module that fetches a spec from the cache
            if name.startswith("puzzles") and getattr(module, "parse_spec", None) is parse_spec:
                self.wrap(module, "parse_spec", counting_parse)

    def wrap(self, owner, name: str, replacement) -> None:
        self.monkeypatch.setattr(owner, name, replacement)

    def counted(self, fact: str, original):
        def counting(*args, **kwargs):
            self.counts[fact] += 1
            return original(*args, **kwargs)

        return counting

    def assert_each_derived_once(self) -> None:
        assert self.counts == dict.fromkeys(self.counts, 1), self.counts
        assert self.sources and max(self.sources.values()) == 1, self.sources  # no function's source read twice
        assert self.parsed == len(self.sources), (self.parsed, self.sources)  # each parsed as it is read, only then


def simulate_a_gpu(monkeypatch: pytest.MonkeyPatch) -> list:
    """The GPU branch of grading on this machine: on_gpu() true for every step, and a GPU worker that ships the
    kernel as the real one does (its description) and answers with the spec's output; the access checks run
    under the interpreter as on a GPU. Returns the kernels shipped."""
    import sys

    from puzzles.running import shipping
    from puzzles.running.interpreter import RunOutput
    from puzzles.running.kernel import on_gpu

    shipped = []

    def gpu_run(kernel, args_for, case, timeout):
        shipped.append(shipping.ship(kernel))
        args_for(case)
        return RunOutput(case.expected.clone())

    for name, module in list(sys.modules.items()):
        if name.startswith("puzzles.grading") and getattr(module, "on_gpu", None) is on_gpu:
            monkeypatch.setattr(module, "on_gpu", lambda: True)
    monkeypatch.setattr("puzzles.grading.runs.run_in_gpu_worker", gpu_run)
    return shipped


@pytest.mark.parametrize("path", ["interpreted", "gpu"])
def test_an_autotuned_kernel_derives_each_fact_once_for_all_its_configs(monkeypatch, path):
    """Puzzle 20 grades its kernel under 3 configs of the learner's and 2 of the grader's: the kernel is walked,
    described and read, its expected signature worked out, its sizes resolved and its spec fetched once in all,
    without a GPU (the compile check describing it) and along the GPU path (the GPU worker shipping it, the
    breakpoint advice reading its source)."""
    from puzzles import test

    p = catalog.get(20)
    kernel = p.reference()
    shipped = simulate_a_gpu(monkeypatch) if path == "gpu" else None
    assert test(kernel, p.spec, quiet=True, seed=3).passed  # warm: imports, caches, the compile check's
    counter = FactCounter(monkeypatch, kernel)
    if shipped is not None:
        shipped.clear()
    result = test(kernel, p.spec, quiet=True, seed=3)
    assert result.passed, str(result)
    assert sum(note.startswith("config ") for note in result.notes) == 3  # each of the learner's configs graded
    counter.assert_each_derived_once()
    if shipped is not None:  # each config's launch shipped, all with the one description
        assert len(shipped) == 5 * len(p.sizes) and len({id(s.description) for s in shipped}) == 1
