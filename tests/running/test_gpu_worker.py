"""The GPU worker's protocol, on a CPU: the same worker runs under Triton's interpreter on CPU tensors
(PUZZLES_WORKER_DEVICE=cpu). A kernel travels as source (with its @jit helpers, constexpr globals,
autotune configs and heuristics); a crash or a time limit ends the worker and the next call works."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import p02_constant_add_block as p02
import pytest
import torch
import triton
import triton.language as tl

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.cases import case_from_spec
from puzzles.grading.job import make_job
from puzzles.grading.judging import judge_runs
from puzzles.grading.runs import run_on_gpu
from puzzles.grading.signature import bind_arguments
from puzzles.running import fork_server, gpu_worker, worker_processes


@triton.autotune(configs=[triton.Config({"B0": 16}, num_warps=1), triton.Config({"B0": 64}, num_warps=2)],
                 key=["N0"])
@triton.jit
def copy_autotuned(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) * 2, mask=offsets < N0)


@triton.heuristics({"B0": lambda args: triton.next_power_of_2(args["N0"])})
@triton.jit
def copy_heuristic(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) * 3, mask=offsets < N0)


@pytest.fixture
def cpu_worker(monkeypatch):
    monkeypatch.setenv("PUZZLES_WORKER_DEVICE", "cpu")
    return gpu_worker.worker("cpu")


def _grade_in_worker(kernel, timeout: float = 20.0, number: int = 2):
    p = catalog.get(number)
    cases = [case_from_spec(p.spec, p, s, 1, i) for i, s in enumerate(p.sizes)]
    job = make_job(kernel, p.spec, None, timeout=timeout)
    runs = run_on_gpu(job, bind_arguments(job), cases)
    return judge_runs(make_job(kernel, None, None), cases, runs)


def test_float8_inputs_reach_a_freshly_started_worker(cpu_worker):
    """torch's pickle of a float8 tensor cannot be loaded by a process that has just started (its storage has no
    dtype there): the first call of every new worker failed on puzzle 32's inputs, on an H200 too."""
    fresh = gpu_worker.Worker("cpu")
    try:
        p = catalog.get(32)
        tensor = case_from_spec(p.spec, p, p.sizes[0], 1, 0).arena.tensors["x"]
        assert tensor.dtype == torch.float8_e4m3fn
        reply = fresh.call("torch:clone", tensor)
        assert reply.status == "ok", reply.error
        assert reply.value.dtype == torch.float8_e4m3fn and torch.equal(reply.value.view(torch.uint8),
                                                                         tensor.view(torch.uint8))
    finally:
        fresh.stop()
    outcomes = _grade_in_worker(p.reference(), number=32)
    assert [o.status for o in outcomes] == ["passed"] * len(outcomes), [o.error for o in outcomes]


def test_a_kernel_travels_with_its_helper_and_constexpr_global(cpu_worker):
    outcomes = _grade_in_worker(p02.add_mask2_kernel)
    assert [o.status for o in outcomes] == ["passed"] * len(outcomes)


def test_autotuned_and_heuristics_kernels_travel_with_their_configs(cpu_worker):
    reply = cpu_worker.call("worker_jobs:launch_each_config", copy_autotuned, 100)
    assert reply.status == "ok", reply
    assert [(kwargs, warps) for kwargs, warps, _ in reply.value] == [({"B0": 16}, 1), ({"B0": 64}, 2)]
    assert all(z == [2.0 * i for i in range(100)] for _, _, z in reply.value)
    reply = cpu_worker.call("worker_jobs:launch_elementwise", copy_heuristic, 37)
    assert reply.status == "ok", reply
    assert reply.value.tolist() == [3.0 * i for i in range(37)]


def test_what_the_kernel_prints_comes_back(cpu_worker):
    outcomes = _grade_in_worker(p02.add_mask2_kernel_prints)
    assert outcomes[0].passed
    assert "hello from program" in outcomes[0].stdout


def test_a_crash_ends_the_worker_and_the_next_kernel_passes(cpu_worker):
    outcomes = _grade_in_worker(p02.add_mask2_kernel_wild)
    first = outcomes[0]
    assert first.status == "out of bounds" and first.invalid_accesses[0].op == "store"
    assert "crashed" in first.reason() and "N0=200" in first.reason() and "access check" in first.reason()
    assert all(o.status == "out of bounds" for o in outcomes[1:])  # the later sizes under the interpreter alone
    assert cpu_worker.call("worker_jobs:segfault").status == "crash"
    assert all(o.passed for o in _grade_in_worker(p02.add_mask2_kernel))


def test_a_timeout_ends_the_worker_and_the_next_kernel_passes(cpu_worker):
    outcomes = _grade_in_worker(p02.add_mask2_kernel_forever, timeout=2.0)
    assert outcomes[0].status == "timeout" and "on the GPU" in outcomes[0].reason()
    assert all(o.status == "not run" for o in outcomes[1:])
    assert all(o.passed for o in _grade_in_worker(p02.add_mask2_kernel))


def test_a_crash_reply_carries_what_the_call_printed_before_it(cpu_worker):
    # A process that dies sends nothing back: what it printed is read from the file the worker printed into.
    reply = cpu_worker.call("worker_jobs:print_then_segfault", 100)
    assert reply.status == "crash" and reply.printed.startswith("about to crash\n"), reply.printed[:200]
    flood = cpu_worker.call("worker_jobs:print_then_segfault", 1000)  # a megabyte: its start, and how much more
    assert flood.status == "crash" and "more bytes printed, not shown" in flood.printed
    assert cpu_worker.call("worker_jobs:segfault").status == "crash"  # nothing printed: its own stderr, as before
    assert "about to crash" not in cpu_worker.call("worker_jobs:segfault").printed


def test_a_spare_worker_takes_over_after_a_crash_and_is_replaced_at_once(monkeypatch):
    # The CPU device runs the same worker code: a spare, loaded before the crash, answers the next call as
    # fast as a warm worker (a fresh start loads torch and Triton: seconds), and a new spare starts.
    w = gpu_worker.Worker("cpu", spare=True)
    try:
        assert w.call("os:getpid").status == "ok"
        spare = w.spare
        assert spare is not None and spare.alive and spare.proc.pid != w.proc.pid
        assert spare.wait_ready() is not None  # loaded, as it would be a few seconds after the first cell
        assert w.call("worker_jobs:segfault").status == "crash"
        assert w.proc.pid == spare.proc.pid and w.spare is not None and w.spare.proc.pid != spare.proc.pid
        reply = w.call("os:getpid")
        assert reply.status == "ok" and reply.value == spare.proc.pid
        # A spare that died meanwhile is not taken: a fresh worker starts instead, and the call still works.
        w.spare.end()
        assert w.call("worker_jobs:segfault").status == "crash"
        assert w.call("os:getpid").status == "ok" and w.spare is not None and w.spare.alive
    finally:
        w.stop()
    assert w.proc is None and w.spare is None


@pytest.mark.skipif(not fork_server.can_fork(), reason="workers are forked only where pidfds exist (Linux)")
def test_several_crashes_in_a_row_each_find_a_forked_spare_loaded():
    # Spares come from a fork server that has imported torch, Triton and the grader (never CUDA): a new spare is
    # loaded as soon as it is forked, so each crash of a series is answered by a loaded spare, not a fresh start.
    w = gpu_worker.Worker("cpu", spare=1)
    try:
        assert w.call("os:getpid").status == "ok"
        for _ in range(3):
            spare = w.spare
            assert isinstance(spare.proc, fork_server.LaunchedProcess)  # forked, not started
            assert spare.wait_ready() is not None
            assert w.call("worker_jobs:segfault").status == "crash"
            assert w.current is spare  # taken over at once: nothing started for the next call
            reply = w.call("os:getpid")
            assert reply.status == "ok" and reply.value == spare.proc.pid
    finally:
        w.stop()


def test_workers_are_started_where_forking_is_turned_off(monkeypatch):
    monkeypatch.setenv("PUZZLES_FORK_GPU_WORKERS", "0")
    w = gpu_worker.Worker("cpu", spare=0)
    try:
        assert isinstance(w.proc, subprocess.Popen)
        assert w.call("os:getpid").status == "ok"
    finally:
        w.stop()


def test_a_spare_worker_is_kept_on_a_gpu_and_where_asked(monkeypatch):
    monkeypatch.delenv("PUZZLES_SPARE_WORKER", raising=False)
    assert worker_processes.spare_count("cuda") == 1 and worker_processes.spare_count("cpu") == 0
    monkeypatch.setenv("PUZZLES_SPARE_WORKER", "0")
    assert worker_processes.spare_count("cuda") == 0
    monkeypatch.setenv("PUZZLES_SPARE_WORKER", "2")
    assert worker_processes.spare_count("cpu") == 2
    from puzzles.classroom.isolation import worker_environment

    assert worker_environment(Path("/tmp"))["PUZZLES_SPARE_WORKER"] == "0"  # a class's memory limit counts it


def test_an_error_in_the_worker_names_the_learners_line(cpu_worker, load_kernel):
    kernel = load_kernel("""
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + undefined_name)
""", "add_kernel")
    error = _grade_in_worker(kernel)[0].error
    assert error is not None and "undefined_name" in error.message
    assert error.line == 9 and "undefined_name" in error.source


# -- on a CUDA GPU (skipped without one) ----------------------------------------------------------------------


@triton.jit
def add_mask2_kernel_spins(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    while tl.load(x_ptr) == tl.load(x_ptr):  # never false for a number: spins on the GPU
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@pytest.mark.gpu
def test_on_a_gpu_a_fault_then_a_correct_kernel_then_a_torch_op():
    spec = catalog.get(2).spec
    wild = test(p02.add_mask2_kernel_wild, spec, quiet=True)
    failure = wild.first_failure
    assert failure is not None and "illegal memory access at N0=200" in failure.reason(), str(wild)
    assert "GPU process was restarted" in failure.reason() and failure.invalid_accesses[0].op == "store"
    assert test(p02.add_mask2_kernel, spec, quiet=True).passed
    assert torch.ones(3, device="cuda").sum().item() == 3.0  # this process's CUDA is fine


@pytest.mark.gpu
def test_on_a_gpu_the_cell_after_a_fault_is_served_by_the_loaded_spare():
    # The spare worker has loaded CUDA before the fault, and takes over: no restart to wait for (5-6 s before).
    spec = catalog.get(2).spec
    assert test(p02.add_mask2_kernel, spec, quiet=True).passed
    started = time.perf_counter()
    assert test(p02.add_mask2_kernel, spec, quiet=True).passed
    warm = time.perf_counter() - started
    w = gpu_worker.worker()
    assert w.spare is not None and w.spare.wait_ready() is not None
    spare = w.spare
    assert not test(p02.add_mask2_kernel_wild, spec, quiet=True).passed
    started = time.perf_counter()
    assert test(p02.add_mask2_kernel, spec, quiet=True).passed
    after = time.perf_counter() - started
    print(f"warm cell {warm:.2f} s, the cell after a fault {after:.2f} s")  # timed by gpu_fault_recovery.py
    assert w.current is spare  # the spare took over: nothing restarted


@pytest.mark.gpu
def test_on_a_gpu_an_endless_loop_stops_at_the_limit():
    started = time.perf_counter()
    result = test(add_mask2_kernel_spins, catalog.get(2).spec, quiet=True, timeout=3)
    first = result.outcomes[0]
    assert first.status == "timeout" and "on the GPU" in first.reason(), str(result)
    assert time.perf_counter() - started < 60
    assert test(p02.add_mask2_kernel, catalog.get(2).spec, quiet=True).passed


@pytest.mark.gpu
def test_on_a_gpu_the_notebook_process_never_initialises_cuda_for_test():
    # Run in a fresh interpreter: grading a kernel there leaves its CUDA untouched (it can fork).
    import subprocess
    import sys

    code = ("import puzzles, torch; from puzzles import catalog, test; p = catalog.get(2); "
            "assert test(p.reference(), p.spec, quiet=True, perf=True).passed; print(torch.cuda.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("False")


@triton.jit
def add_mask2_kernel_device_print(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offsets < N0
    if tl.program_id(0) == 1:
        tl.device_print("from the GPU, program", tl.program_id(0))
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 10.0, mask=mask)


@pytest.mark.gpu
def test_on_a_gpu_what_the_kernel_prints_comes_back_with_the_verdict():
    result = test(add_mask2_kernel_device_print, catalog.get(2).spec, quiet=True)
    assert result.passed
    assert "from the GPU, program" in result.outcomes[0].stdout


def test_a_heuristic_with_a_default_value_is_shipped_with_it():
    """`triton.heuristics({"B0": lambda args, v=32: v})` reads its value from the lambda's defaults: the
    kernel rebuilt in the worker keeps them (without, every launch there failed on a missing argument)."""
    from puzzles.running import shipping

    kernel = triton.heuristics({"B0": lambda args, v=32: v, "WIDE": lambda args, w=False: w})(
        catalog.get(2).reference())
    landed = shipping.land(shipping.ship(kernel))
    assert isinstance(landed, triton.runtime.Heuristics)
    assert {name: rule({}) for name, rule in landed.values.items()} == {"B0": 32, "WIDE": False}
