"""`test(..., efficiency=True)`: how efficient a kernel is on a named GPU, read from what it did in the interpreter.

The run at the largest graded size that passed is read: every load and store's lanes, in lane order, cut into
warps of 32 active lanes; each warp's request touches the 32-byte sectors its lanes' addresses fall in
(`sector_counts`). Summed per kernel line (`LineCost`) and per tensor, those give the bytes asked of the memory
system, the distinct bytes, the re-reads and the masked-off lanes; efficiency_model.predict carries them to the
puzzle's perf size on the GPU named (H100 by default). The puzzle's reference, read the same way at the same size
(once per process), gives the goal: within 1.1x of the reference's predicted time, a proxy for the GPU's speed goal
(the references run as fast as torch.compile on an H100 and an H200), said so in the report.

It applies where a run was recorded (a CPU's interpreter) and the puzzle has a perf size; elsewhere
`result.efficiency` is None and a note says why.
"""

from __future__ import annotations

import ast
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from puzzles.course.amounts import fewest_bytes
from puzzles.course.puzzle import Puzzle
from puzzles.grading.compiling import job_launch_numbers
from puzzles.grading.efficiency_model import (
    ISSUE_LATENCY_CYCLES,
    Efficiency,
    GpuModel,
    Issue,
    LineCost,
    Occupancy,
    RunCounts,
    floor_us,
    gpu_model,
    occupancy,
    predict,
    warps_per_scheduler,
)
from puzzles.grading.job import make_job
from puzzles.grading.result import SizeOutcome
from puzzles.grading.unrolled_loops import called_name, loop_trips, unrolled_repeats
from puzzles.running.compile_check.listings import LaunchNumbers
from puzzles.running.kernel_source import FunctionSource
from puzzles.running.recording import Trace

SECTOR = 32  # bytes
WARP = 32  # lanes
GOAL_WITHIN = 1.1  # of the reference's predicted time
# (puzzle, GPU, size) -> the reference's run, read, its tl.dot kind and its compiled code there
REFERENCE_COUNTS: dict[tuple[int, str, tuple], tuple[RunCounts, str, CompiledFacts]] = {}


def element_sizes(trace: Trace) -> dict[str, int]:
    import torch

    return {name: torch.empty((), dtype=getattr(torch, dtype)).element_size()
            for name, (_, dtype) in trace.tensors.items() if hasattr(torch, dtype)}


def sector_counts(elements: np.ndarray, size: int) -> tuple[int, int, int]:
    """(requests, sectors touched, fewest sectors) of one access: its active lanes, in lane order, in warps of 32."""
    n = len(elements)
    if n == 0:
        return 0, 0, 0
    warp = np.arange(n) // WARP
    sector = elements.astype(np.int64) * size // SECTOR
    touched = len(np.unique(warp * (1 << 40) + sector))
    full, rest = divmod(n, WARP)
    fewest = full * math.ceil(WARP * size / SECTOR) + (math.ceil(rest * size / SECTOR) if rest else 0)
    return math.ceil(n / WARP), touched, fewest


def read_run(trace: Trace, minimum: float, sources: dict[int, str] | None = None,
             unrolled: dict[int, int] | None = None) -> tuple[RunCounts, list[LineCost]]:
    """The run's counts (efficiency_model.RunCounts) and its lines' costs, costliest first. `unrolled`: line ->
    how many times loops the compiler unrolls repeat it (their loads issue together: one round)."""
    sizes = element_sizes(trace)
    per_line: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    elements: dict[tuple, list[np.ndarray]] = defaultdict(list)
    sectors_of: dict[str, list[np.ndarray]] = defaultdict(list)
    in_program: dict[tuple, list[np.ndarray]] = defaultdict(list)  # (program, tensor) -> its sectors
    loads_run: dict[tuple, int] = defaultdict(int)  # (program, line) -> the loads it ran there
    fresh_loads = 0  # loads that touched a sector their program had not touched before (a trip past its L1)
    seen: dict[tuple, set[int]] = defaultdict(set)  # (program, tensor) -> the sectors it touched so far
    load_lanes: list[int] = []
    for access in trace.accesses:
        size = sizes.get(access.tensor, 4)
        lanes_in_order = access.elements
        if sum(d > 1 for d in access.shape) >= 2:  # the compiler lays a 2-D block out along its contiguous axis
            lanes_in_order = np.sort(lanes_in_order)
        requests, touched, fewest = sector_counts(lanes_in_order, size)
        sectors = access.elements.astype(np.int64) * size // SECTOR
        in_program[(access.program, access.tensor)].append(sectors)
        sectors_of[access.tensor].append(sectors)
        if access.op == "load":
            loads_run[(access.program, access.line)] += 1
            load_lanes.append(access.lanes)
            touched_now = seen[(access.program, access.tensor)]
            new = set(np.unique(sectors).tolist())
            fresh_loads += not new <= touched_now
            touched_now |= new
        key = (access.line, access.op, access.tensor)
        row = per_line[key]
        row[0] += requests
        row[1] += touched
        row[2] += fewest
        row[3] += len(access.elements)
        row[4] += access.masked
        row[5] += access.lanes
        elements[key].append(access.elements)
    lines = []
    for key, (requests, touched, fewest, count, masked, lanes) in per_line.items():
        unique = len(np.unique(np.concatenate(elements[key]))) if elements[key] else 0
        lines.append(LineCost(key[0], key[1], key[2], requests, touched, fewest, count, unique, masked, lanes,
                              (sources or {}).get(key[0], "")))
    lines.sort(key=lambda c: -c.sectors * sizes.get(c.tensor, 4))
    most: dict[tuple, int] = defaultdict(int)  # program -> the most loads one of its lines ran
    for (program, line), n in loads_run.items():
        most[program] = max(most[program], n / (unrolled or {}).get(line, 1))
    requested = sum(c.sectors for c in lines) * SECTOR
    distinct = sum(len(np.unique(np.concatenate(s))) for s in sectors_of.values()) * SECTOR
    # Sectors each program touches once: what it reads again itself comes from its SM's L1 or the L2; what other
    # programs read again may have left the L2.
    per_program = sum(len(np.unique(np.concatenate(s))) for s in in_program.values()) * SECTOR
    requests = sum(c.requests for c in lines)
    all_lanes = sum(c.lanes for c in lines)
    counts = RunCounts(
        bytes_minimum=minimum, bytes_requested=requested, bytes_unique=distinct,
        bytes_reread=max(0.0, per_program - distinct),
        sectors_per_request=requested / SECTOR / requests if requests else 0.0,
        coalescing=(sum(c.sectors for c in lines) / sum(c.fewest_sectors for c in lines)) if lines else 1.0,
        masked_fraction=sum(c.masked for c in lines) / all_lanes if all_lanes else 0.0,
        programs=math.prod(trace.grid), rounds=sum(most.values()) / len(most) if most else 1.0,
        lanes_per_load=sum(load_lanes) / len(load_lanes) if load_lanes else 0.0,
        rounds_most=max(most.values(), default=1.0),
        fresh_share=fresh_loads / len(load_lanes) if load_lanes else 1.0)
    return counts, lines


def lever(counts: RunCounts, lines: list[LineCost], bound: str, reference: RunCounts | None,
          compiled: CompiledFacts | None = None, programs: int = 0, model: GpuModel | None = None) -> str:
    """The one change that matters most, in the learner's terms: where this kernel's access pattern costs more
    than the reference's at the same size (what the puzzle's sizes and blocks make every kernel pay is no lever);
    where the compiled code's spills or instructions bound it, those."""
    numbers = compiled.numbers if compiled is not None else None
    if bound == "spills" and numbers is not None:
        return (f"spills {numbers.spilled // 4} registers a thread to local memory ({numbers.spilled} bytes of stack), "
                "stored and loaded back every trip of its loop: smaller tiles, or fewer values kept live at once")
    if bound == "issue" and numbers is not None and numbers.instructions is not None and model is not None:
        counts_in = numbers.instructions
        resident = compiled.occupancy.programs_per_sm if compiled.occupancy is not None else 1
        per_scheduler = warps_per_scheduler(model, numbers.num_warps, resident, programs)
        if per_scheduler < ISSUE_LATENCY_CYCLES:
            return (f"only {per_scheduler:g} warp{'s' if per_scheduler != 1 else ''} per scheduler to switch "
                    f"between, so each of its {counts_in.in_innermost_loops} instructions a loop trip waits on the "
                    "one before: more programs at once (smaller tiles, fewer registers or less shared memory) or "
                    "more warps")
        return (f"its warps issue {counts_in.in_innermost_loops} instructions every trip of its inner loop, one "
                "after another: do more per instruction (whole blocks per load and per operation, not one element "
                "at a time)")
    base = reference or RunCounts(counts.bytes_minimum, counts.bytes_minimum, counts.bytes_minimum, 0.0, 0.0, 1.0,
                                  0.0, counts.programs)
    worst = max(lines, key=lambda c: (c.coalescing - 1) * c.sectors, default=None)
    if worst is not None and worst.coalescing >= 1.5 and counts.coalescing > 1.2 * base.coalescing:
        return (f"the {worst.op} of {worst.tensor} at line {worst.line} touches {worst.sectors_per_request:.1f} "
                f"sectors per warp, {worst.coalescing:.1f}x the fewest: make the index that moves fastest across a "
                f"block the contiguous one of {worst.tensor}")
    if counts.bytes_requested > 1.2 * base.bytes_requested:
        reads = reread_tensors(lines)
        if reads:
            tensor, times, where = reads[0]
            verb = "reads" if where.startswith("line ") else "read"
            return (f"{where} {verb} each element of {tensor} {times:.1f} times in all: keep it in registers (one "
                    "pass) instead of loading it again")
    if bound == "latency":
        return (f"each program waits on about {counts.rounds:.0f} rounds of small dependent loads (at the size read): "
                "load whole blocks at once, so that each trip to memory moves more")
    if counts.masked_fraction > base.masked_fraction + 0.2:
        return (f"{counts.masked_fraction:.0%} of the lanes are masked off (the reference: "
                f"{base.masked_fraction:.0%}): fewer lanes past the edges, or blocks that fit")
    if bound == "compute":
        return "the arithmetic bounds it: tl.dot puts a product of tiles on the tensor cores"
    return ""


def reread_tensors(lines: list[LineCost]) -> list[tuple[str, float, str]]:
    """(tensor, times each element is read, the lines that read it) for the tensors read more than 1.5 times over,
    most re-read first. The lines' distinct elements are not summed across lines (two lines may read the same)."""
    out = []
    for tensor in sorted({c.tensor for c in lines if c.op == "load"}):
        reading = [c for c in lines if c.op == "load" and c.tensor == tensor]
        elements = sum(c.elements for c in reading)
        distinct = max(c.unique_elements for c in reading)
        if distinct and elements / distinct >= 1.5:
            numbers = [str(c.line) for c in sorted(reading, key=lambda c: c.line or 0)]
            where = ("line " if len(numbers) == 1 else "lines ") + ", ".join(numbers)
            out.append((tensor, elements / distinct, where))
    return sorted(out, key=lambda r: (-r[1], r[0]))  # ties by name: the same lever on every run


def efficiency_of(job: Any, outcomes: list[SizeOutcome], gpu: str,
                  grade: Callable[..., Any]) -> tuple[Efficiency | None, str | None]:
    """The report, or (None, why it does not apply). `grade`: test(), to run the reference the same way."""
    p: Puzzle | None = job.puzzle
    model = gpu_model(gpu)
    if p is None or not p.perf_size:
        return None, "efficiency: this puzzle has no perf size to predict a time at"
    if model.sm < p.min_sm:  # puzzle 32's fp8 tl.dot on an A100 or a T4
        return None, (f"efficiency: the {model.name} (sm_{model.sm}) cannot run this puzzle's kernel, which needs "
                      f"sm_{p.min_sm} or newer: ask for an H100 or H200 (gpu=\"H100\")")
    recorded = [o for o in outcomes if o.passed and o.trace is not None and o.trace.recorded and o.trace.accesses]
    if not recorded:
        return None, "efficiency: no recorded run to read (it needs the interpreter's run of a right kernel)"
    analysed = analysed_size(recorded, job.spec)
    counts, lines = read_run(analysed.trace, sum(fewest_bytes(job.spec, analysed.sizes)), source_lines(job),
                             unrolled_lines(job, analysed.sizes))
    uses_dot = calls_dot(job)
    growth = load_width_growth(recorded, p.perf_size, analysed.sizes)
    compiled = compiled_facts(job, p, model, analysed.sizes)
    us, bound, dram, requested, waves = predicted_at_perf(p, model, counts, analysed.sizes, uses_dot=uses_dot,
                                                          width_growth=growth, compiled=compiled)
    reference = reference_prediction(p, model, analysed.sizes, grade)
    goal_met = None if reference is None else us <= GOAL_WITHIN * reference[0]
    minimum, flops, exps = perf_work(p)
    cpu_goal = p.cpu_speed_goal
    if cpu_goal is not None:  # graded from the counts alone: bytes against the fewest, each access's sectors
        goal_met = dram <= cpu_goal.bytes_within * minimum and all(
            c.coalescing <= cpu_goal.coalesced_within for c in lines) and (
            reference is None or us <= cpu_goal.time_within * reference[0])
    programs = math.prod(p.grid(p.perf_size))
    return Efficiency(model.name, dict(p.perf_size), dict(analysed.sizes), us, dram, requested, minimum,
                      counts.sectors_per_request, counts.coalescing, counts.masked_fraction,
                      programs, waves, bound, None if reference is None else reference[0],
                      goal_met, lever(counts, lines, bound, None if reference is None else reference[1], compiled,
                                      programs, model),
                      tuple(lines), cpu_goal.text() if cpu_goal is not None else "",
                      floor_us(model, minimum, flops, exps, uses_dot), compiled.occupancy), None


def analysed_size(recorded: list[SizeOutcome], spec: Callable[..., Any]) -> SizeOutcome:
    """The graded size most like a perf size: many bytes, few lanes masked off (a ragged size's partial blocks say
    little about a perf size's whole ones)."""
    def score(outcome: SizeOutcome) -> float:
        lanes = sum(a.lanes for a in outcome.trace.accesses) or 1
        masked = sum(a.masked for a in outcome.trace.accesses) / lanes
        return sum(fewest_bytes(spec, outcome.sizes)) * (1.0 - masked) ** 2
    return max(recorded, key=score)


def perf_work(p: Puzzle) -> tuple[float, float, float]:
    """(fewest bytes, FLOPs, exponentials) at the puzzle's perf size."""
    sizes = p.perf_size
    work = p.scalar_work(sizes) if p.scalar_work else None
    return (sum(fewest_bytes(p.spec, sizes)), p.flops(sizes) if p.flops else 0.0, work.exps if work else 0.0)


@dataclass(frozen=True)
class CompiledFacts:
    """What the kernel's compile for the GPU's target says (each None where it did not compile here): its
    occupancy, its launch numbers (spills, PTX instruction counts), and its kept loops' trips at the perf size
    (None: bounds computed in the kernel; the interpreter's rounds of loads stand for them)."""

    occupancy: Occupancy | None = None
    numbers: LaunchNumbers | None = None
    trips: int | None = None


def compiled_facts(job: Any, p: Puzzle, model: GpuModel, analysed: dict[str, int]) -> CompiledFacts:
    """The kernel compiled for `model`'s target with the perf size's blocks (the registers and shared memory a
    program needs grow with them), and its loops' trips read from its source at the perf size."""
    sizes = {**analysed, **{k: p.perf_size[k] for k in block_keys(p.perf_size) if k in analysed}}
    numbers = job_launch_numbers(job, sizes, model.sm)
    source = kernel_source(job)
    trips = loop_trips(source.tree if source is not None else None, dict(p.perf_size))
    if numbers is None:
        return CompiledFacts(trips=trips)
    return CompiledFacts(occupancy(model, numbers.num_warps, numbers.registers, numbers.shared), numbers, trips)


def issue_at(compiled: CompiledFacts, programs: int, rounds: float) -> Issue | None:
    """The instructions a warp issues at the perf size (the innermost loops' bodies once per trip) and the bytes
    of spilled registers every thread stores and loads back once per trip."""
    numbers = compiled.numbers
    if numbers is None or numbers.instructions is None:
        return None
    trips = compiled.trips if compiled.trips is not None else max(1.0, rounds)
    counts = numbers.instructions
    threads = programs * max(1, numbers.num_warps) * WARP
    return Issue(counts.total + counts.in_innermost_loops * (trips - 1), numbers.num_warps,
                 2.0 * threads * numbers.spilled * trips)


def predicted_at_perf(p: Puzzle, model: Any, counts: RunCounts, analysed: dict[str, int], *, uses_dot: str,
                      width_growth: float | None = None, compiled: CompiledFacts | None = None) -> tuple:
    sizes = p.perf_size
    minimum, flops, exps = perf_work(p)
    programs = math.prod(p.grid(sizes))
    # A program's rounds of loads grow with the bytes it covers and shrink with the lanes of each load: a load as
    # wide as the block grows with it, a load of a fixed chunk (32 lanes whatever the block) does not. The graded
    # sizes' runs say which where their blocks differ (`load_width_growth`); else the lanes at the size read do.
    per_program = (minimum / programs) / (counts.bytes_minimum / max(1, counts.programs))
    widest = max_block(analysed)
    if width_growth is not None:
        wider = width_growth
    elif counts.lanes_per_load < 0.5 * widest:
        wider = 1.0  # a fixed chunk
    elif counts.lanes_per_load > widest:
        wider = block_lanes(sizes) / block_lanes(analysed)  # a 2-D block
    else:
        wider = max_block(sizes) / widest  # a row or column of the block
    rounds = max(1.0, counts.rounds * per_program / wider)
    # A program that runs far more rounds than the others walks more than its share (one program summing every
    # row): its excess grows with the whole problem, not with a program's share of it.
    most = 0.0
    if counts.rounds_most > 2 * counts.rounds:
        most = rounds + (counts.rounds_most - counts.rounds) * (minimum / counts.bytes_minimum) / wider
    compiled = compiled or CompiledFacts()
    resident = compiled.occupancy
    return predict(model, counts, minimum_at_size=minimum, programs_at_size=programs, footprint_at_size=minimum,
                   flops=flops, exps=exps, uses_dot=uses_dot, rounds_at_size=rounds, rounds_most_at_size=most,
                   resident_per_sm=resident.programs_per_sm if resident is not None else None,
                   issue=issue_at(compiled, programs, rounds))


def load_width_growth(recorded: list[SizeOutcome], perf: dict[str, int], analysed: dict[str, int]) -> float | None:
    """How much wider a load is at the perf size than at the size read, from what the graded sizes' runs show:
    the block size (or the product of them) the mean lanes of a load follow across those runs, or none (a fixed
    chunk, 1.0). None where the runs cannot tell (one size, or the same blocks at every size)."""
    runs = []
    for outcome in recorded:
        loads = [a.lanes for a in outcome.trace.accesses if a.op == "load"]
        if loads:
            runs.append((outcome.sizes, sum(loads) / len(loads)))
    if len({tuple(block_sizes(sizes)) for sizes, _ in runs}) < 2:
        return None
    candidates: dict[str, Callable[[dict[str, int]], float]] = {"fixed": lambda _: 1.0, "block": block_lanes}
    candidates.update({key: (lambda sizes, key=key: float(sizes.get(key, 1))) for key in block_keys(analysed)})

    def misfit(follow: Callable[[dict[str, int]], float]) -> float:
        logs = [math.log(lanes / follow(sizes)) for sizes, lanes in runs]
        mean = sum(logs) / len(logs)
        return sum((x - mean) ** 2 for x in logs)

    best = min(candidates, key=lambda name: (misfit(candidates[name]), name != "fixed"))
    return candidates[best](perf) / candidates[best](analysed)


def block_keys(sizes: dict[str, int]) -> list[str]:
    """The names of the block sizes among a puzzle's sizes (B0, B1, BM, BN, BK, ...)."""
    return [k for k in sizes if k.startswith("B") and k[1:2].isalnum()]


def block_sizes(sizes: dict[str, int]) -> list[int]:
    return [sizes[k] for k in block_keys(sizes)]


def max_block(sizes: dict[str, int]) -> int:
    return max(block_sizes(sizes), default=1)


def block_lanes(sizes: dict[str, int]) -> int:
    """The lanes of a block at these sizes: the product of the block sizes."""
    return math.prod(block_sizes(sizes)) or 1


def reference_prediction(p: Puzzle, model: Any, sizes: dict[str, int],
                         grade: Callable[..., Any]) -> tuple[float, RunCounts] | None:
    """The puzzle's reference, run at `sizes` and read the same way (each size once per process)."""
    key = (p.number, model.name, tuple(sorted(sizes.items())))
    if key not in REFERENCE_COUNTS:
        try:
            kernel = p.reference()
        except ImportError:  # a class's sandboxed worker, or the Gradescope image, ships no solutions/
            return None
        result = grade(kernel, p.spec, puzzle=p, sizes=[dict(sizes)], quiet=True, seed=1, compile_check=False,
                       efficiency=False)
        if not result.passed or result.outcomes[0].trace is None:
            return None
        job = make_job(kernel, p.spec, p)
        REFERENCE_COUNTS[key] = (read_run(result.outcomes[0].trace, sum(fewest_bytes(p.spec, sizes)),
                                          unrolled=unrolled_lines(job, sizes))[0],
                                 calls_dot(job), compiled_facts(job, p, model, sizes))
    counts, uses_dot, compiled = REFERENCE_COUNTS[key]
    return predicted_at_perf(p, model, counts, sizes, uses_dot=uses_dot, compiled=compiled)[0], counts


def calls_dot(job: Any) -> str:
    """"" (no tl.dot), "32" (a tl.dot of float32 tiles), "16" (of 16-bit tiles: cast there, or given so) or "8"
    (the spec's inputs are float8, as puzzle 32's: their tiles go to the fp8 tensor cores). Read from the calls of
    the kernel and of the @triton.jit functions it calls (a kernel named quant_dot_... that multiplies and sums calls
    no tl.dot; one whose helper does, does)."""
    if not any(found.tree is not None and calls_a_dot(found.tree) for found in job.handle.reached_sources()):
        return ""
    parsed = job.parsed_spec
    if parsed is not None and parsed.tensors is not None and any(
            t.dtype.itemsize == 1 and t.dtype.is_floating_point for t in parsed.tensors[0]):
        return "8"
    return "16" if job.sixteen_bit else "32"


def calls_a_dot(tree: ast.AST) -> bool:
    return any(called_name(node) in DOTS for node in ast.walk(tree))


DOTS = {"dot", "dot_scaled"}


def kernel_source(job: Any) -> FunctionSource | None:
    """The kernel's own source, as the job's handle read it."""
    fn = job.handle.fn
    return job.handle.source(fn) if fn is not None else None


def unrolled_lines(job: Any, sizes: dict[str, int]) -> dict[int, int]:
    """The kernel's lines inside tl.static_range loops, and how many times over (unrolled_loops.py)."""
    source = kernel_source(job)
    return {} if source is None else unrolled_repeats(source.tree, source.first_line, sizes)


def source_lines(job: Any) -> dict[int, str]:
    source = kernel_source(job)
    if source is None:
        return {}
    return {source.first_line + i: text.strip() for i, text in enumerate(source.text.splitlines())}
