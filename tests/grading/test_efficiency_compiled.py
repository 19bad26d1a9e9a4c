"""The efficiency model's terms read from the compiled code (issue 51's accuracy goal): the instructions a warp
issues (the PTX, its innermost loops once per trip, the trips read from the kernel's source at the perf size) at
the cycles each takes with the warps a scheduler switches between, and the registers spilled to local memory.
The arithmetic on made-up numbers; the report on puzzle 9's reference (a reduction in every trip of a long loop,
two warps a scheduler: issue-bound on an H200, 905 us measured) and on a kernel that spills."""

from __future__ import annotations

import ast

import pytest
from kernel_collections import collection

from puzzles import test
from puzzles.course import catalog
from puzzles.grading.efficiency_model import (
    ISSUE_LATENCY_CYCLES,
    Issue,
    RunCounts,
    gpu_model,
    issue_us,
    predict,
)
from puzzles.grading.unrolled_loops import loop_trips
from puzzles.running.compiled_code.ptx_loops import InstructionCounts, instruction_counts

pytestmark = pytest.mark.interpreter("reads the interpreter's recorded accesses")

PTX = """
.visible .entry kernel(
    .param .u64 kernel_param_0
)
{
    .reg .pred %p<3>;
    mov.u32 %r1, %tid.x;
    @%p0 bra $L__BB0_4;
$L__BB0_1:
    mul.lo.s32 %r2, %r2, 2;
$L__BB0_2:
    add.f32 %f1, %f1, %f2;  // a comment; not an instruction
    shfl.sync.bfly.b32 %r3, %r4, 1, 31, -1;
    @%p1 bra $L__BB0_2;
    @%p2 bra.uni $L__BB0_1;
$L__BB0_4:
    ret;
}
"""


def test_the_ptx_says_how_many_instructions_sit_in_innermost_loops():
    # 8 instructions; the loop from $L__BB0_1 holds the loop from $L__BB0_2 (3 instructions, its branch included)
    assert instruction_counts(PTX) == InstructionCounts(8, 3)
    assert instruction_counts(".version 8.4\n.target sm_90\n") is None  # directives only


LOOPS = '''
def kernel(x_ptr, K, BK: tl.constexpr, N, B: tl.constexpr):
    full = (K // BK) * BK
    for k in range(0, full, BK):
        for j in tl.range(0, N, B):
            x = tl.load(x_ptr + j)
        for a in tl.static_range(4):
            y = 1
    for i in range(tl.cdiv(N, B)):
        z = 2
'''


def test_a_kept_loops_trips_are_read_at_the_perf_size():
    sizes = {"K": 1000, "BK": 100, "N": 64, "B": 16}
    assert loop_trips(ast.parse(LOOPS), sizes) == 10 * 4  # the deepest nest; static_range is unrolled, not a trip
    computed = "def kernel(x_ptr, K, BK: tl.constexpr):\n    start = tl.program_id(0) * BK\n" \
               "    for k in range(start, K, BK):\n        x = 1\n"
    assert loop_trips(ast.parse(computed), {"K": 10, "BK": 2}) is None  # a program's own share: the rounds say
    assert loop_trips(ast.parse("def kernel(n):\n    while n > 0:\n        n -= 1\n"), {"n": 3}) is None
    assert loop_trips(ast.parse("def kernel(x_ptr):\n    x = 1\n"), {}) == 1
    assert loop_trips(None, {}) is None


def test_few_warps_per_scheduler_issue_each_instruction_after_its_latency():
    h200 = gpu_model("H200")
    cycle_us = 1 / (h200.clock_ghz * 1e3)
    one = issue_us(h200, Issue(1e5, num_warps=4), programs=132, resident_per_sm=4)  # a warp per scheduler
    assert one == pytest.approx(1e5 * ISSUE_LATENCY_CYCLES * cycle_us)  # each instruction waits on the last
    two = issue_us(h200, Issue(1e5, num_warps=4), programs=264, resident_per_sm=4)  # two warps hide each other
    assert two == pytest.approx(one)
    busy = issue_us(h200, Issue(1e5, num_warps=8), programs=132 * 4, resident_per_sm=4)  # 8 warps: one a cycle
    assert busy == pytest.approx(8 * 1e5 * cycle_us)
    batches = issue_us(h200, Issue(1e5, num_warps=8), programs=132 * 8, resident_per_sm=4)  # two batches of 4
    assert batches == pytest.approx(2 * busy)


def test_issue_and_spills_bound_a_kernel_when_they_are_the_slowest():
    gpu = gpu_model("H200")
    counts = RunCounts(bytes_minimum=1e6, bytes_requested=1e6, bytes_unique=1e6, bytes_reread=0,
                       sectors_per_request=4, coalescing=1, masked_fraction=0, programs=8)
    plain = dict(minimum_at_size=1e8, programs_at_size=132, footprint_at_size=1e8)
    memory = predict(gpu, counts, **plain)
    assert memory[1] == "memory"
    issued = predict(gpu, counts, **plain, resident_per_sm=1, issue=Issue(5e5, num_warps=4))
    assert issued[1] == "issue" and issued[0] > memory[0]
    spilled = predict(gpu, counts, **plain, resident_per_sm=1, issue=Issue(10, 4, spilled_bytes=1e10))
    assert spilled[1] == "spills" and spilled[0] == pytest.approx(gpu.launch_us + (1e8 + 1e10) / (gpu.l2_gbps * 1e3))
    assert predict(gpu, counts, **plain, issue=Issue(10, 4, spilled_bytes=1e5))[1] == "memory"  # a few spills


def test_a_reduction_in_every_trip_of_a_long_loop_is_issue_bound_and_the_lever_says_so():
    p = catalog.get(9)
    e = test(p.reference(), p.spec, quiet=True, seed=5, efficiency=True, gpu="H200").efficiency
    assert e is not None and e.bound == "issue", e.text()
    assert 450 < e.predicted_us < 1800, e.text()  # measured on an H200: 905 us
    assert e.lever.startswith("only 2 warps per scheduler to switch between") and "bound by issuing" in e.text()
    assert "waits on the one before" in e.lever, e.lever


def test_a_kernel_that_spills_is_told_how_many_registers():
    p = catalog.get(12)
    e = test(collection(12).quant_dot_per_element, p.spec, quiet=True, seed=5, efficiency=True,
             gpu="H200").efficiency
    assert e is not None and e.bound == "spills", e.text()
    assert e.lever.startswith("spills ") and "registers a thread to local memory" in e.lever
    assert "smaller tiles" in e.lever


def test_a_dot_of_float8_tiles_is_priced_at_twice_the_16_bit_rate_where_the_gpu_has_fp8_tensor_cores():
    """Puzzle 32's inputs are float8: its tl.dot runs on Hopper's fp8 tensor cores, twice the 16-bit rate (on an
    H200 its reference measured 170 us, 806 TFLOP/s; priced at the 16-bit rate the model said 462). A GPU without
    fp8 tensor cores falls back to the 16-bit rate."""
    from puzzles.grading.efficiency import calls_dot
    from puzzles.grading.efficiency_model import compute_us
    from puzzles.grading.job import make_job

    p32, p31 = catalog.get(32), catalog.get(31)
    assert calls_dot(make_job(p32.reference(), p32.spec, p32)) == "8"
    assert calls_dot(make_job(p31.reference(), p31.spec, p31)) == "16"
    h200, a100 = gpu_model("H200"), gpu_model("A100")
    flops = 2 * 4096 ** 3
    assert compute_us(h200, flops, 0, "8") == pytest.approx(compute_us(h200, flops, 0, "16") / 2)
    assert compute_us(a100, flops, 0, "8") == compute_us(a100, flops, 0, "16")
