"""Speed reports: what `test(..., perf=True)` says on a GPU, computed from given times and made-up
device limits (CPU), and measured for real on a GPU (skipped without one)."""

from __future__ import annotations

import json

import pytest
import torch

from puzzles import test
from puzzles.course import catalog
from puzzles.course.amounts import fewest_bytes
from puzzles.course.notebooks import speed_text
from puzzles.course.puzzle import ScalarWork, SpeedGoal
from puzzles.grading import perf

H100 = perf.DeviceLimits("H100", copy_gbps=2000.0, matmul_tflops=600.0, write_gbps=2200.0, launch_us=3.9,
                         fp32_tflops=60.0, exp_tops=4.0)


def report(number: int, ms: float, limits: perf.DeviceLimits = H100, **more) -> perf.PerfReport:
    p = catalog.get(number)
    read, written = fewest_bytes(p.spec, p.perf_size)
    flops = p.flops(p.perf_size) if p.flops else 0
    more.setdefault("scalar", p.scalar_work(p.perf_size) if p.scalar_work else ScalarWork())
    more.setdefault("goal", p.speed_goal)
    return perf.PerfReport(dict(p.perf_size), ms, None, read, written, flops, limits, **more)


def test_reads_and_writes_are_timed_at_their_own_rates():
    # A copy of n bytes takes n/read + n/write: with writes faster than the copy, reads are slower.
    assert H100.written_gbps == 2200.0
    assert H100.read_gbps == pytest.approx(1 / (2 / 2000 - 1 / 2200))
    same = perf.DeviceLimits("old cache entry", 2000.0, 600.0)
    assert same.read_gbps == same.written_gbps == 2000.0


def test_an_output_that_is_only_written_is_not_over_the_roofline():
    # Puzzle 4 writes 256 MiB and reads 64 KiB: a kernel that writes at the fill rate is at the roofline,
    # where counting its bytes against the copy rate made it 110% (103% was seen on an H100).
    read, written = fewest_bytes(catalog.get(4).spec, catalog.get(4).perf_size)
    assert (read, written) == (2 * 8192 * 4, 8192 * 8192 * 4)
    fastest = read / (H100.read_gbps * 1e6) + written / (H100.written_gbps * 1e6)
    r = report(4, fastest)
    assert r.roofline_fraction == pytest.approx(1.0) and not r.launch_bound
    assert (read + written) / (H100.copy_gbps * 1e6) / fastest > 1.09  # the old miscount
    assert "100% of this H100's roofline" in r.text()
    assert "100%" in report(4, fastest * 0.99).text()  # within the ceilings' noise: never above 100%


def test_a_launch_bound_size_is_named_with_its_launch_floor():
    r = report(1, 4.6e-3)  # puzzle 1 moves 32 KB: 0.01 us of memory time, 4.6 us of launch
    assert r.launch_bound
    text = r.text()
    assert "launch-bound: 4.6 us against a launch floor of 3.9 us" in text and "32.8 KB" in text
    assert "roofline" not in text and "0%" not in text
    not_measured = perf.DeviceLimits("H100", 2000.0, 600.0, 2200.0, None)
    assert not report(1, 4.6e-3, not_measured).launch_bound


def test_a_slow_kernel_at_a_size_under_the_launch_floor_is_measured_against_that_floor():
    # Puzzle 18's 9 MB take 3.2 us on an H100, under its 4.3 us launch floor; a kernel at 169 us is
    # not launch-bound, it is 3% of what the device allows there (seen on an H100).
    limits = perf.DeviceLimits("H100", 3000.0, 700.0, 3100.0, 4.3)
    r = report(18, 0.169, limits)
    assert r.floor_ms < r.launch_ms and not r.launch_bound
    assert "3% of what this H100 allows at this size (floor 4.3 us: the launch floor" in r.text()
    assert "launch-bound" not in r.text()


def test_puzzle_21_has_a_speed_size_and_its_bytes_count_the_lists_end_to_end():
    p = catalog.get(21)
    assert p.perf_size is not None and p.perf_size["K"] == 120
    total = p.perf_size["T"]
    assert fewest_bytes(p.spec, p.perf_size) == (3 * total * 4, 2 * total * 4)
    text = report(21, 0.2).text()
    assert "K=120 T=" in text and "L0=" not in text and "roofline" in text
    assert "L0=" not in speed_text(p) and "K=120" in speed_text(p)


def test_puzzle_18_reports_the_production_kernel_and_what_the_gap_is():
    p = catalog.get(18)
    baseline = p.baseline
    text = report(18, 0.169, baseline=baseline, baseline_ms=0.012).text()
    assert "the production GPTQ kernel (solutions/gptq, gptq_matmul) at this size: 12.0 us, 14.1x faster" in text
    assert baseline.lesson in text and "16-byte vectors" in text
    failed = report(18, 0.169, baseline=baseline, baseline_error="RuntimeError: no Gluon").text()
    assert "could not be timed here (RuntimeError: no Gluon)" in failed
    assert "and that of the production GPTQ kernel" in speed_text(p)


def test_cached_limits_from_before_the_write_rate_and_launch_floor_are_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr(perf, "CACHE", tmp_path / "device_limits.json")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "H100")
    measured = []
    for name, value in (("_copy_gbps", 2000.0), ("_matmul_tflops", 600.0), ("_write_gbps", 2200.0),
                        ("_launch_us", 3.9), ("_fp32_tflops", 60.0), ("_exp_tops", 4.0)):
        monkeypatch.setattr(perf, name, lambda value=value, name=name: measured.append(name) or value)
    import triton

    key = f"H100 | torch {torch.__version__} | triton {triton.__version__}"
    perf.CACHE.write_text(json.dumps({key: {"device": "H100", "copy_gbps": 1.0, "matmul_tflops": 1.0}}))
    assert perf.device_limits() == H100 and len(measured) == 6
    assert perf.device_limits() == H100 and len(measured) == 6  # now cached, all of it
    # A cache from before the elementwise rates: measured again, rates included.
    perf.CACHE.write_text(json.dumps({key: {"device": "H100", "copy_gbps": 2000.0, "matmul_tflops": 600.0,
                                            "write_gbps": 2200.0, "launch_us": 3.9}}))
    assert perf.device_limits() == H100 and len(measured) == 12


def test_elementwise_exponentials_give_puzzle_9_a_compute_floor_not_the_launch_floor():
    # 16384 x 16384 scores: 268M exponentials at 4 T/s take 67 us, where its 262 KB take 0.1 us. Without the
    # rates (an old cache entry) the launch floor was its only floor: "0% of what this GPU allows" (seen).
    r = report(9, 0.134)
    assert r.floor_ms == pytest.approx(16384 * 16384 / 4e9) and r.floor_reason.startswith("its 268M exponentials")
    text = r.text()
    assert "50% of this H100's roofline (floor 67.1 us: its 268M exponentials at 4.00 T/s)" in text, text
    assert "launch floor" not in text
    no_rates = perf.DeviceLimits("H100", 2000.0, 600.0, 2200.0, 3.9)
    assert "the launch floor" in report(9, 0.134, no_rates).text()
    # Multiply-adds bound it where they take longer than the exponentials (a made-up slow FMA rate).
    slow_fma = perf.DeviceLimits("H100", 2000.0, 600.0, 2200.0, 3.9, fp32_tflops=2.0, exp_tops=4.0)
    assert "floor 805.3 us: its 805M FP32 multiply-adds at 1.0 T/s" in report(9, 1.0, slow_fma).text()
    # A memory-bound puzzle's floor stays its bytes' (puzzle 8: 268 MB against 33.6M exponentials).
    assert report(8, 0.2).floor_reason == "memory"


def test_torch_compile_is_timed_beside_the_spec_and_its_failure_is_a_line_not_an_error():
    text = report(2, 0.1, compiled_ms=0.15).text()
    assert "torch.compile (the spec compiled): 150.0 us; this kernel is 1.5x faster than it" in text
    assert "as fast as it" in report(2, 0.1, compiled_ms=0.102).text()  # within the timings' noise
    failed = report(2, 0.1, compile_error="BackendCompilerFailed: no C compiler").text()
    assert "torch.compile could not be timed here (BackendCompilerFailed: no C compiler)" in failed


def test_the_goal_line_says_met_or_what_closes_the_gap():
    p = catalog.get(2)
    floor = report(2, 1.0).floor_ms  # puzzle 2 moves 537 MB: memory-bound, goal 80% and torch.compile's speed
    met = report(2, floor / 0.9, compiled_ms=floor / 0.85)
    assert met.lines()[1] == ("goal (at least torch.compile's speed and 80% of the roofline): met (1.1x faster "
                              "than torch.compile, 90% of what this GPU allows here)")
    assert perf.goal_progress(met) == 1.0
    slow = report(2, floor / 0.4, compiled_ms=floor / 0.85)
    line = slow.lines()[1]
    assert line.startswith("goal (at least torch.compile's speed and 80% of the roofline): not met (2.1x slower "
                           "than torch.compile, 40% of what this GPU allows here; 47% of the way)"), line
    assert f"What usually closes the gap here: {p.speed_goal.levers}; in general: {perf.GENERIC_LEVERS}" in line
    assert "num_warps" in perf.GENERIC_LEVERS and "tl.dot" in perf.GENERIC_LEVERS and "16-byte" in line
    assert perf.goal_progress(slow) == pytest.approx(0.4 / 0.85)  # the worse part: torch.compile's
    # Within the noise of torch.compile's time, and at the roofline: met.
    assert "met" in report(2, floor, compiled_ms=floor * 0.97).lines()[1]
    # torch.compile failed: the roofline part is judged alone and the line says the other part could not be.
    failed = report(2, floor / 0.9, compile_error="RuntimeError: x").lines()[1]
    assert failed.startswith("goal (at least torch.compile's speed and 80% of the roofline): met (90% of what")
    assert "its torch.compile part cannot be judged here" in failed
    only_compile = report(1, 0.01, compile_error="RuntimeError: x")  # puzzle 1's goal: torch.compile alone
    assert only_compile.lines()[1].endswith("cannot be judged here: torch.compile could not be timed")
    assert perf.goal_progress(only_compile) is None
    no_goal = report(2, 1.0, goal=None)
    assert len(no_goal.lines()) == 1 and perf.goal_progress(no_goal) is None
    assert SpeedGoal(vs_compile=2.0).text() == "at least 2x torch.compile's speed"


def test_as_fast_as_is_within_five_percent_or_a_microsecond_at_the_launch_floor():
    assert perf.within_noise(1.049, 1.0) and not perf.within_noise(1.06, 1.0)
    assert perf.within_noise(0.0051, 0.0043) and not perf.within_noise(0.0065, 0.0043)  # 0.8 us, 2.2 us over
    met = report(2, 0.0051, compiled_ms=0.0043).lines()[1]
    assert "as fast as torch.compile" in met


def test_a_goal_without_torch_compile_says_why_and_still_shows_its_time():
    p = catalog.get(16)
    goal = p.speed_goal
    assert not goal.vs_compile and goal.roofline and goal.compile_note in goal.text()
    assert goal.text().startswith("at least 50% of the roofline (torch.compile is no goal here: ")
    line = report(16, 0.0065, compiled_ms=0.0012).lines()[1]
    assert line == f"goal ({goal.text()}): met (5.4x slower than torch.compile, 60% of what this GPU allows here)"
    with pytest.raises(ValueError):
        SpeedGoal(vs_compile=0.0, roofline=0.5)  # no reason given
    with pytest.raises(ValueError):
        SpeedGoal(compile_note="why")  # a reason for a goal that does compare


def test_every_puzzle_of_the_course_states_a_speed_goal_in_its_notebook():
    for number in range(1, 22):
        p = catalog.get(number)
        assert p.speed_goal is not None and p.speed_goal.levers and p.perf_size, p.id
        library = p.library.label if p.library is not None else ""
        assert f"**Goal:** {p.speed_goal.text(library)} at this size" in speed_text(p), p.id
        assert "`torch.compile`" in speed_text(p)
    assert "268M exponentials and 805M multiply-adds to do" in speed_text(catalog.get(9))


def test_the_verdict_shows_the_speed_and_the_goal_lines():
    from puzzles.grading.result import TestResult, render_html

    r = report(2, 1.0, compiled_ms=0.5)
    result = TestResult(puzzle="02", kernel="k", outcomes=[], seconds=1.0, seed=1, perf=r)
    text = str(result)
    assert "  speed at N0=67108864" in text and "\n  goal (at least torch.compile's speed" in text
    html = render_html(result)
    assert "<b>goal (at least torch.compile&#x27;s speed and 80% of the roofline)</b>: not met" in html


# -- on a GPU ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("number", [1, 4, 18, 21])
def test_the_references_speed_reports_on_a_gpu(number):
    p = catalog.get(number)
    result = test(p.reference(), p.spec, quiet=True, perf=True)
    r = result.perf
    assert result.passed and r is not None, str(result)
    print(r.text())  # the numbers, in the log
    assert r.ms > 0 and r.limits.launch_us and r.limits.launch_us > 0
    if number == 1:
        assert r.launch_bound and "launch-bound" in r.text()
    else:
        assert not r.launch_bound and r.roofline_fraction <= 1.05, r.text()
    if number == 18:
        assert r.baseline_ms is not None and r.baseline_ms < r.ms, r.text()
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("number", [2, 9, 19, 20])
def test_torch_compile_is_timed_and_the_goal_judged_on_a_gpu(number):
    # 9: its floor is its exponentials'; 19: strided inputs, timed as graded; 20: an autotuned kernel.
    p = catalog.get(number)
    result = test(p.reference(), p.spec, quiet=True, perf=True)
    r = result.perf
    assert result.passed and r is not None, str(result)
    print(r.text())  # the numbers, in the log
    assert r.compiled_ms is not None and r.compiled_ms > 0 and not r.compile_error, r.text()
    assert "torch.compile (the spec compiled): " in r.text()
    goal = r.lines()[1]
    library = p.library.label if p.library is not None else ""
    assert goal.startswith(f"goal ({p.speed_goal.text(library)}): ") and perf.goal_progress(r) is not None
    assert (": met (" in goal) == (perf.goal_progress(r) >= 1.0) != (": not met (" in goal)
    assert r.limits.fp32_tflops and r.limits.exp_tops and 1.0 < r.limits.exp_tops < r.limits.fp32_tflops, r.limits
    if number == 9:
        assert r.floor_reason.endswith("T/s") and "launch floor" not in r.text(), r.text()
    if number == 20:
        assert r.sizes["N0"] == p.perf_size["N0"] and "num_warps" in r.sizes  # the fastest config's
    again = test(p.reference(), p.spec, quiet=True, perf=True).perf  # compiled once: the second time is cached
    assert again is not None and again.compiled_ms is not None
    from puzzles.running import gpu_worker

    assert gpu_worker.call("puzzles.grading.perf:compiled_keys").value.count(number) == 1


def test_a_spec_that_torch_compile_cannot_run_is_reported_once_never_raised():
    calls = []

    def broken_spec(x):
        calls.append(1)
        raise ValueError("no such op here")

    key = ("test", "broken")
    ms, why = perf.time_compiled(broken_spec, [torch.zeros(4)], {}, key)
    assert ms is None and why.startswith(("ValueError: no such op here", "Unsupported", "TorchRuntimeError",
                                          "BackendCompilerFailed")), why
    tried = len(calls)
    assert perf.time_compiled(broken_spec, [torch.zeros(4)], {}, key) == (None, why) and len(calls) == tried
    perf.COMPILED.pop(key)


def test_every_baseline_names_an_importable_launcher():
    # The catalog names baselines by "module:function" so the notebook's spec cell never carries solution code.
    import importlib

    from puzzles import all_puzzles

    named = [p for p in all_puzzles() if p.baseline is not None]
    assert named, "puzzle 18 has a production baseline"
    for p in named:
        module, function = p.baseline.launcher.split(":")
        assert callable(getattr(importlib.import_module(module), function))
