"""How test() runs a kernel and shows what happened there: the access checks spread over children on a GPU, a
timeout there, what the kernel printed, and a breakpoint in the child process. The rest:
tests/grading/test_harness.py."""

from __future__ import annotations

import p02_constant_add_block as p02
import pytest
from judging import grade

from puzzles.course import catalog

interpreted_only = pytest.mark.interpreter("runs the interpreter in-process")


@pytest.fixture(params=["one child", "a child per size"])
def check_children(request, monkeypatch):
    """On a GPU the access checks run in one child, or one per size on a machine with the cores."""
    import puzzles.grading.runs as running

    monkeypatch.setattr(running, "_CORES_FOR_A_CHILD_PER_SIZE", 10**6 if request.param == "one child" else 1)
    return request.param


@pytest.mark.parametrize("kernel, number", [(None, 2), (p02.add_mask2_kernel_no_mask, 2), (None, 9)])
def test_gpu_checks_name_each_sizes_accesses_however_they_are_spread(kernel, number, check_children):
    # The GPU run simulated by the right answer: the verdict per size comes from the checks alone.
    from puzzles.grading.cases import case_from_spec
    from puzzles.grading.job import make_job
    from puzzles.grading.judging import judge_runs
    from puzzles.grading.runs import run_on_gpu
    from puzzles.grading.signature import bind_arguments
    from puzzles.running.interpreter import RunOutput

    p = catalog.get(number)
    kernel = kernel or p.reference()
    cases = [case_from_spec(p.spec, p, s, 3, i) for i, s in enumerate(p.sizes)]
    job = make_job(kernel, p.spec, None, timeout=20.0)
    runs = run_on_gpu(job, bind_arguments(job), cases,
                      run_compiled=lambda k, a, case: RunOutput(case.expected.clone()))
    outcomes = judge_runs(make_job(kernel, None, None), cases, runs)
    assert len(outcomes) == len(p.sizes) and all(r.trace is not None for r in runs)
    if kernel is p02.add_mask2_kernel_no_mask:
        ragged = [o for o, c in zip(outcomes, cases, strict=True) if c.sizes["N0"] % c.sizes["B0"]]
        assert ragged and all(o.status == "out of bounds" for o in ragged), [o.reason() for o in outcomes]
    else:
        assert all(o.passed for o in outcomes), [o.reason() for o in outcomes]


def test_a_timeout_in_the_gpu_check_pass_is_the_verdict(check_children):
    # On a GPU the compiler may remove an endless loop: the compiled run "passes" and only the
    # interpreter's access check runs forever. Simulated here with a compiled run that returns
    # the right answer.
    from puzzles.grading.cases import case_from_spec
    from puzzles.grading.job import make_job
    from puzzles.grading.runs import run_on_gpu
    from puzzles.grading.signature import bind_arguments
    from puzzles.running.interpreter import RunOutput

    p = catalog.get(2)
    kernel = p02.add_mask2_kernel_forever
    cases = [case_from_spec(p.spec, p, s, 1, i) for i, s in enumerate(p.sizes)]
    job = make_job(kernel, p.spec, None, timeout=1.0)
    runs = run_on_gpu(job, bind_arguments(job), cases,
                      run_compiled=lambda k, a, case: RunOutput(case.expected.clone()))
    assert len(runs) == 1 and runs[0].error.kind == "timeout"  # stops after the first size


_PRINTING = """
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    print("hello from the kernel")
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)
"""

_STOPPING = """
from puzzles import breakpoint_if

@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    breakpoint_if(pid_0=[0])
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)
"""


def test_what_the_kernel_printed_is_shown_when_it_passes(load_kernel):
    result = grade(1, load_kernel(_PRINTING, "add_kernel"))
    assert result.passed and "kernel printed" in str(result) and "hello from the kernel" in str(result)
    assert "hello from the kernel" in result._repr_html_()


@interpreted_only
def test_in_process_the_kernel_and_the_debugger_keep_the_real_streams(load_kernel, monkeypatch, capsys):
    import io

    result = grade(1, load_kernel(_PRINTING, "add_kernel"), isolate=False)
    assert result.passed and "hello from the kernel" in capsys.readouterr().out  # printed live
    monkeypatch.setattr("sys.stdin", io.StringIO("p offsets.handle.data.sum()\nc\n" * 3))
    result = grade(1, load_kernel(_STOPPING, "add_kernel"), isolate=False)
    out = capsys.readouterr().out
    assert result.passed and "(Pdb)" in out and str(sum(range(32))) in out  # the debugger answered


@interpreted_only
def test_a_breakpoint_in_the_child_process_says_how_to_debug(load_kernel):
    source = """
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    breakpoint()
"""
    failure = grade(1, load_kernel(source, "add_kernel")).first_failure
    assert failure.status == "error" and "isolate=False" in failure.reason()


@interpreted_only
def test_time_at_the_debugger_prompt_does_not_count_against_the_limit(load_kernel, monkeypatch, capsys):
    import time as _time

    class SlowLearner:  # answers the (Pdb) prompt after longer than the kernel's time limit
        def readline(self):
            _time.sleep(1.5)
            return "c\n"

    monkeypatch.setattr("sys.stdin", SlowLearner())
    result = grade(1, load_kernel(_STOPPING, "add_kernel"), isolate=False, timeout=1.0, sizes=[{"N0": 8, "B0": 8}])
    assert result.passed, str(result)
