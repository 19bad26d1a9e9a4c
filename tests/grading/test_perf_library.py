"""The speed report against the library op a user would call (issue 52): `PerfReport` computed from made-up
times on a CPU. The bar is the fastest of eager torch, torch.compile and the puzzle's library op; the report
names it, and the speed goal is judged against it, unless the goal's `library_note` says why the library is
no goal (then it is shown and left out of the bar)."""

from __future__ import annotations

import dataclasses

import pytest

from puzzles.course import catalog
from puzzles.course.amounts import fewest_bytes
from puzzles.course.library_baseline import LibraryBaseline, single_call
from puzzles.course.puzzle import ScalarWork, SpeedGoal
from puzzles.grading import perf

H200 = perf.DeviceLimits("H200", copy_gbps=3000.0, matmul_tflops=700.0, write_gbps=3300.0, launch_us=3.5,
                         fp32_tflops=60.0, exp_tops=4.0)


def report(number: int, ms: float, **more) -> perf.PerfReport:
    """Puzzle `number` at its perf size, with its goal and library op unless given."""
    p = catalog.get(number)
    read, written = fewest_bytes(p.spec, p.perf_size)
    more.setdefault("scalar", p.scalar_work(p.perf_size) if p.scalar_work else ScalarWork())
    more.setdefault("goal", p.speed_goal)
    more.setdefault("library", p.library)
    torch_ms = more.pop("torch_ms", None)
    return perf.PerfReport(dict(p.perf_size), ms, torch_ms, read, written, p.flops(p.perf_size) if p.flops else 0,
                           H200, **more)


def test_the_bar_is_the_fastest_of_eager_torch_torch_compile_and_the_library_op():
    label = catalog.get(28).library.label
    assert report(28, 1.264, torch_ms=9.0, compiled_ms=2.5, library_ms=1.993).bar == (label, 1.993)
    assert report(28, 1.264, torch_ms=9.0, compiled_ms=1.5, library_ms=1.993).bar == ("torch.compile", 1.5)
    assert report(28, 1.264, torch_ms=1.2, compiled_ms=1.5, library_ms=1.993).bar == ("torch (the spec)", 1.2)
    # Not timed: left out; nothing timed: no bar.
    assert report(28, 1.264, compiled_ms=2.5, library_error="RuntimeError: x").bar == ("torch.compile", 2.5)
    assert report(28, 1.264).bar is None


def test_the_speed_line_shows_the_library_op_and_names_the_bar():
    text = report(28, 1.264, torch_ms=9.0, compiled_ms=2.5, library_ms=1.993).text()
    library = catalog.get(28).library
    assert f"{library.label}, float32 (what a user would call): 1993.0 us; this kernel is 1.6x faster than it" in text
    assert f"the bar: {library.label}, the fastest of those a user would run here" in text
    failed = report(28, 1.264, compiled_ms=2.5, library_error="RuntimeError: no kernel for this GPU").text()
    assert f"{library.label} could not be timed here (RuntimeError: no kernel for this GPU)" in failed


def test_the_goal_is_judged_against_the_library_op_where_it_is_fastest():
    library = catalog.get(28).library
    # The H200 numbers: the model answer (1.264 ms) beats SDPA's float32 backward (1.993 ms).
    met = report(28, 1.264, compiled_ms=2.5, library_ms=1.993)
    line = met.lines()[1]
    assert line == (f"goal (at least the speed of the fastest of torch, torch.compile and {library.label}): met "
                    f"(1.6x faster than {library.label})"), line
    assert perf.goal_progress(met) == 1.0
    # A library op twice as fast as the kernel: torch.compile's speed is no longer enough.
    slow = report(28, 1.264, compiled_ms=2.5, library_ms=0.632)
    assert perf.goal_progress(slow) == pytest.approx(0.5)
    assert slow.lines()[1].startswith(f"goal (at least the speed of the fastest of torch, torch.compile and "
                                      f"{library.label}): not met (2.0x slower than {library.label}; 50% of the way)")
    # torch.compile failed: the library op is still a bar.
    assert perf.goal_progress(report(28, 1.264, compile_error="x", library_ms=0.632)) == pytest.approx(0.5)


def test_eager_torch_faster_than_torch_compile_is_the_bar_of_a_puzzle_without_a_library_op():
    r = report(1, 0.010, torch_ms=0.005, compiled_ms=0.020)
    assert catalog.get(1).library is None and r.bar == ("torch (the spec)", 0.005)
    assert "the bar: torch (the spec)" in r.text() and "2.0x slower than torch (the spec)" in r.lines()[1]


def test_a_library_note_shows_the_op_but_leaves_it_out_of_the_bar():
    goal = dataclasses.replace(catalog.get(28).speed_goal, library_note="its shape needs a layout this grid lacks")
    r = report(28, 1.264, goal=goal, compiled_ms=2.5, library_ms=0.632)
    label = catalog.get(28).library.label
    assert r.bar == ("torch.compile", 2.5) and perf.goal_progress(r) == 1.0
    assert f"{label}, float32 (what a user would call): 632.0 us; this kernel is 2.0x slower than it" in r.text()
    assert r.lines()[1].startswith(f"goal (at least torch.compile's speed ({label} is no goal here: its shape "
                                   "needs a layout this grid lacks)): met (2.0x faster than torch.compile")


def test_the_gradebook_record_keeps_the_library_time_and_the_bar():
    record = report(28, 1.264, compiled_ms=2.5, library_ms=1.993).record()
    assert record["library_ms"] == 1.993 and record["bar"] == catalog.get(28).library.label
    assert record["progress"] == 1.0


def test_a_library_op_that_cannot_run_is_a_reason_not_an_error():
    def refuses(inputs, sizes):
        raise RuntimeError("_weight_int4pack_mm: expect N to be dividable by 16\nmore detail")

    ms, why = perf.time_library(LibraryBaseline("int4", refuses, why="a test"), [], {})
    assert ms is None and why == "RuntimeError: _weight_int4pack_mm: expect N to be dividable by 16"
    assert single_call(lambda: 1).run() == 1


def test_a_speed_goal_names_the_library_op_in_words():
    goal = SpeedGoal(roofline=0.6)
    assert goal.text("torch.bmm") == "at least the speed of the fastest of torch, torch.compile and torch.bmm and " \
                                     "60% of the roofline"
    assert goal.text() == "at least torch.compile's speed and 60% of the roofline"
    assert SpeedGoal(vs_compile=2.0).text("F.layer_norm") == ("at least 2x the speed of the fastest of torch, "
                                                             "torch.compile and F.layer_norm")
    noted = SpeedGoal(library_note="why")
    assert noted.text("torch.bmm") == "at least torch.compile's speed (torch.bmm is no goal here: why)"
