"""test(..., efficiency=True) (issue 51): how efficient a right kernel would be on a named GPU, read from its
recorded run. The sector arithmetic is checked on made-up lanes; the report on kernels whose one inefficiency is
known (tests/kernels/pNN_*.py's `SLOW`): each is right, is predicted slower than its puzzle's reference, and its
lever names what the kernel does (the uncoalesced access's line, the re-read tensor, the masked lanes, the small
dependent loads). How far the predictions are from a GPU's times: benchmarks/efficiency_validation.py."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from kernel_collections import all_collections, collection

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.efficiency import sector_counts
from puzzles.grading.efficiency_model import BOUND_WORDS, GPUS, Occupancy, RunCounts, gpu_model, occupancy, predict
from puzzles.grading.unrolled_loops import unrolled_repeats

pytestmark = pytest.mark.interpreter("reads the interpreter's recorded accesses")
SLOW = [pytest.param(number, kernel, id=f"{number}-{kernel.fn.__name__}")
        for number, module in all_collections().items() for kernel in getattr(module, "SLOW", ())]


def report(number: int, kernel, **kwargs):
    result = test(kernel, catalog.get(number).spec, quiet=True, seed=5, efficiency=True, **kwargs)
    assert result.passed, str(result)
    return result


def test_a_warps_contiguous_lanes_touch_the_fewest_sectors_and_scattered_ones_one_each():
    assert sector_counts(np.arange(64), 4) == (2, 8, 8)  # two warps, 128 bytes each: 4 sectors apiece
    assert sector_counts(np.arange(0, 32 * 17, 17), 4) == (1, 32, 4)  # 68 bytes apart: a sector per lane
    assert sector_counts(np.arange(40), 2) == (2, 3, 3)  # 64 + 16 bytes
    assert sector_counts(np.array([], dtype=np.int64), 4) == (0, 0, 0)


def test_the_model_adds_the_launch_and_takes_the_slowest_of_its_bounds():
    gpu = gpu_model("nvidia h100")
    counts = RunCounts(bytes_minimum=1e6, bytes_requested=1e6, bytes_unique=1e6, bytes_reread=0, sectors_per_request=4,
                       coalescing=1, masked_fraction=0, programs=8)
    us, bound, dram, requested, _ = predict(gpu, counts, minimum_at_size=3e9, programs_at_size=1000,
                                            footprint_at_size=3e9)
    assert bound == "memory" and dram == requested == 3e9 and us == pytest.approx(gpu.launch_us + 3e9 / 3e9 * 1e3)
    scattered = RunCounts(1e6, 8e6, 1e6, 7e6, 32, 8, 0, 8)  # every request 8x the sectors, re-read from the L2
    bound = predict(gpu, scattered, minimum_at_size=3e9, programs_at_size=1000, footprint_at_size=1e6)[1]
    assert bound.startswith("L2")
    small = predict(gpu, counts, minimum_at_size=1e3, programs_at_size=1, footprint_at_size=1e3)
    assert small[1] == "launch" and small[0] < 2 * gpu.launch_us
    with pytest.raises(ValueError, match="knows H100, H200, A100, T4"):
        gpu_model("B200")
    assert set(GPUS) == {"H100", "H200", "A100", "T4"}
    assert set(BOUND_WORDS) == {"memory", "L2", "compute", "latency", "issue", "spills", "launch"}


def test_the_reference_meets_its_own_goal_and_the_fields_are_readable():
    result = report(2, catalog.get(2).reference())
    e = result.efficiency
    assert e.gpu == "H100" and e.sizes == catalog.get(2).perf_size and e.goal_met is True
    assert e.bytes_minimum == 2 * 4 * catalog.get(2).perf_size["N0"]
    assert e.bytes_moved == pytest.approx(e.bytes_minimum, rel=0.05) and e.sectors_per_request == pytest.approx(4, 0.1)
    assert e.predicted_us > 0 and e.lever == ""
    assert "Efficiency on an H100" in str(result)


def test_the_gpu_is_chosen_and_off_costs_nothing():
    p = catalog.get(2)
    h100, t4 = (report(2, p.reference(), gpu=name).efficiency for name in ("H100", "T4"))
    assert t4.gpu == "T4" and t4.predicted_us > 5 * h100.predicted_us  # a tenth of the bandwidth
    plain = test(p.reference(), p.spec, quiet=True, seed=5, efficiency=False)
    assert plain.efficiency is None and "Efficiency" not in str(plain)


@pytest.mark.parametrize(("number", "kernel"), SLOW)
def test_a_right_but_slow_kernel_is_predicted_slower_than_the_reference(number, kernel):
    e = report(number, kernel).efficiency
    assert e.reference_us is not None and e.predicted_us >= e.reference_us, e.text()


@pytest.mark.parametrize(("number", "name", "says", "goal_met"), [
    (2, "add_mask2_lanes_strided", "sectors per warp", False),
    (2, "add_mask2_one_element_at_a_time", "rounds of small dependent loads", False),
    # Named, but a GPU loses little time to them (measured on an H200: benchmarks/results/nvidia-h200/
    # efficiency_validation.md): what a program reads again itself comes from its L1, and masked lanes move nothing.
    (2, "add_mask2_reads_twice", "read each element of x 2.0 times", True),
    (7, "sum_reads_twice", "reads each element of x 2.0 times", True),
    (2, "add_mask2_half_lanes_masked", "of the lanes are masked off", True),
    # The compiler lays a 2-D block out along its addresses' contiguous axis, whichever axis of the block that is:
    # on an H200 this kernel ran as fast as the reference, and the model says so.
    (4, "add_vec_block_tile_transposed", "", True),
])
def test_the_lever_names_what_the_kernel_does(number, name, says, goal_met):
    e = report(number, getattr(collection(number), name)).efficiency
    assert (says in e.lever if says else e.lever == "") and e.goal_met is goal_met, e.text()


def test_a_wrong_kernel_gets_no_report():
    result = test(collection(2).add_mask2_kernel_no_mask, catalog.get(2).spec, quiet=True, seed=5, efficiency=True)
    assert not result.passed and result.efficiency is None


def test_a_puzzle_with_a_cpu_speed_goal_grades_it_by_default_without_a_gpu():
    p = catalog.get(2)
    assert p.cpu_speed_goal is not None and catalog.get(1).cpu_speed_goal is None
    right = test(p.reference(), p.spec, quiet=True, seed=5)  # efficiency not asked for: on for this puzzle
    assert right.efficiency is not None and right.efficiency.goal_met is True
    assert "the CPU speed goal is met: at most 1.1x the fewest bytes" in str(right)
    scattered = test(collection(2).add_mask2_lanes_strided, p.spec, quiet=True, seed=5)
    assert scattered.passed and scattered.efficiency.goal_met is False and "goal is missed" in str(scattered)
    column = test(collection(7).sum_one_column_at_a_time, catalog.get(7).spec, quiet=True, seed=5)
    assert column.passed and column.efficiency.goal_met is False
    assert test(catalog.get(1).reference(), catalog.get(1).spec, quiet=True, seed=5).efficiency is None
    assert test(p.reference(), p.spec, quiet=True, seed=5, efficiency=False).efficiency is None


def test_an_autotuned_kernel_gets_the_report_of_its_config_predicted_fastest():
    result = report(20, catalog.get(20).reference(), compile_check=False)
    e = result.efficiency
    assert e is not None and e.sizes == catalog.get(20).perf_size
    assert sum(note.startswith("Efficiency on an") for note in result.notes) == 1  # one report, not one per config


def test_occupancy_is_the_scarcest_of_warps_registers_and_shared_memory():
    h100, t4 = gpu_model("H100"), gpu_model("T4")
    assert occupancy(h100, 4, 22, 0) == Occupancy(16, "warps", 4, 22, 0)  # 2048 threads / 128
    assert occupancy(h100, 4, 154, 188416).limit == "shared memory"  # puzzle 18's reference: 184 KB a program
    assert occupancy(h100, 4, 154, 188416).programs_per_sm == 1
    assert occupancy(h100, 8, 255, 0) == Occupancy(1, "registers", 8, 255, 0)  # 256 x 32 x 8 of 64K registers
    assert occupancy(h100, 1, 16, 0).limit == "blocks"  # 64 one-warp programs would fit: 32 thread blocks at most
    assert occupancy(t4, 4, 32, 0).programs_per_sm == 8  # 1024 threads per SM
    assert occupancy(h100, 4, 32, 300 << 10).programs_per_sm == 0
    assert "does not fit" in occupancy(h100, 4, 32, 300 << 10).text()


UNROLLED = '''
def kernel(x_ptr, KH: tl.constexpr, KW: tl.constexpr):
    for h in range(KH):
        x = tl.load(x_ptr + h)
        for a in tl.static_range(KH):
            for b in tl.static_range(0, min(KW, 4), 2):
                y = tl.load(x_ptr + a + b)
        for c in tl.static_range(x):
            z = 1
'''


def test_loads_in_loops_the_compiler_unrolls_issue_together():
    repeats = unrolled_repeats(ast.parse(UNROLLED), 10, {"KH": 3, "KW": 8})
    assert repeats == {15: 3, 16: 6}  # the inner loop 3 x 2 times; a loaded value's bound is not known: once
    assert unrolled_repeats(None, 1, {}) == {}  # a source that did not parse


def test_the_report_says_how_many_programs_a_multiprocessor_holds():
    e = report(2, catalog.get(2).reference()).efficiency
    assert e.occupancy is not None and e.occupancy.limit == "warps" and e.occupancy.registers
    assert "16 programs per multiprocessor (4 warps a program)" in e.text()
