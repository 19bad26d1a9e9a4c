"""Speed reports: what `test(..., perf=True)` says on a GPU, computed from given times and made-up
device limits (CPU), and measured for real on a GPU (skipped without one)."""

from __future__ import annotations

import json

import pytest
import torch

from puzzles import test
from puzzles.course import catalog
from puzzles.course.notebooks import speed_text
from puzzles.grading import on_gpu, perf

H100 = perf.DeviceLimits("H100", copy_gbps=2000.0, matmul_tflops=600.0, write_gbps=2200.0, launch_us=3.9)


def report(number: int, ms: float, limits: perf.DeviceLimits = H100, **more) -> perf.PerfReport:
    p = catalog.get(number)
    read, written = perf.fewest_bytes(p.spec, p.perf_size)
    flops = p.flops(p.perf_size) if p.flops else 0
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
    read, written = perf.fewest_bytes(catalog.get(4).spec, catalog.get(4).perf_size)
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
    assert perf.fewest_bytes(p.spec, p.perf_size) == (3 * total * 4, 2 * total * 4)
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
                        ("_launch_us", 3.9)):
        monkeypatch.setattr(perf, name, lambda value=value, name=name: measured.append(name) or value)
    import triton

    key = f"H100 | torch {torch.__version__} | triton {triton.__version__}"
    perf.CACHE.write_text(json.dumps({key: {"device": "H100", "copy_gbps": 1.0, "matmul_tflops": 1.0}}))
    assert perf.device_limits() == H100 and len(measured) == 4
    assert perf.device_limits() == H100 and len(measured) == 4  # now cached, all of it


# -- on a GPU ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not on_gpu(), reason="needs a CUDA GPU (kernels compile there)")
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


def test_every_baseline_names_an_importable_launcher():
    # The catalog names baselines by "module:function" so the notebook's spec cell never carries solution code.
    import importlib

    from puzzles import all_puzzles

    named = [p for p in all_puzzles() if p.baseline is not None]
    assert named, "puzzle 18 has a production baseline"
    for p in named:
        module, function = p.baseline.launcher.split(":")
        assert callable(getattr(importlib.import_module(module), function))
