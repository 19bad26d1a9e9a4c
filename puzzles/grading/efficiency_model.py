"""How fast a kernel would run on a named GPU, from what it did in the interpreter (issue 51): the arithmetic.

A kernel's run under the interpreter records every lane's address (running/recording.py). From the sectors those
addresses fall in (a GPU moves memory in 32-byte sectors, and a warp's access is served as the set of sectors its
32 lanes touch), efficiency.py counts, at the size it analyses:
- the bytes the warps request from the memory system (every request's sectors: what the L2 cache serves),
- the bytes that must come from DRAM (each sector once, plus the re-reads that the L2 cache cannot hold),
- the fewest bytes the problem needs (each input read once, the output written once: amounts.fewest_bytes).
Both ratios to the fewest are properties of the kernel's access pattern, so they carry to the puzzle's perf size,
where the prediction is made (the interpreter cannot run a perf size, a GPU's size):

    predicted = launch floor + max(DRAM bytes / DRAM rate, requested bytes / L2 rate, compute, latency, issue)

compute: the puzzle's FLOPs at what a tl.dot of its tiles reaches where the kernel calls tl.dot (else at the FP32
rate), and its exponentials at the special-function rate. Of the bytes re-read, those a program reads again itself
come from its L1 or the L2 (the L2 term); those other programs read again come from the L2 while the data fits
there, else from DRAM. The numbers below are the published ones for each part (SXM parts for
the H100 and A100), rounded; the L2 rates are microbenchmark figures, the least certain of them. Everything here is
pure (no trace, no torch): tests check it with made-up counts.

Two terms come from the compiled code (compiling.py's launch numbers): the issue term (the PTX's instructions a
warp runs, its loop bodies once per trip, at the cycles each takes with the warps a scheduler has to switch
between) and the spills (registers stored to local memory and loaded back, once a trip: traffic the L2 serves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuModel:
    name: str
    dram_gbps: float  # DRAM bandwidth a streaming kernel reaches (about 90% of the datasheet's)
    l2_gbps: float  # L2 bandwidth (microbenchmarks)
    l2_bytes: int  # L2 capacity
    sms: int
    launch_us: float  # a launch that does nothing, as do_bench sees it
    fp32_tflops: float  # FP32 FMAs off the tensor cores, 2 FLOPs each
    dot_tflops: float  # what a tl.dot of float32 tiles reaches in the course's kernels (far under the TF32 peak)
    dot16_tflops: float  # a tl.dot of 16-bit tiles
    exps_per_us: float  # exponentials per microsecond (the special-function units, 16 per SM per clock)
    # A tl.dot of float8 tiles: Hopper's fp8 tensor-core rate is twice its 16-bit one (1979 against 989 dense TFLOP/s
    # on the datasheet), so twice dot16_tflops; 0 where the GPU has no fp8 tensor cores (sm_80 and older).
    dot8_tflops: float = 0.0
    sm: int = 90  # the compile target (sm_90, sm_80, sm_75): what the occupancy is read from
    shared_per_sm: int = 228 << 10  # shared memory a multiprocessor gives its programs
    threads_per_sm: int = 2048
    registers_per_sm: int = 64 << 10
    programs_per_sm: int = 32  # resident thread blocks, at most
    clock_ghz: float = 1.98  # the SMs' boost clock
    schedulers_per_sm: int = 4  # warp schedulers, each issuing one instruction a cycle


# Datasheets: H100 SXM 3.35 TB/s HBM3, 132 SMs, 50 MB L2, 67 FP32 TFLOP/s, 495 TF32 TFLOP/s (dense); H200 4.8 TB/s
# HBM3e and the H100's chip; A100 SXM 80 GB 2.04 TB/s, 108 SMs, 40 MB L2, 19.5 / 156; T4 320 GB/s, 40 SMs, 4 MB L2,
# 8.1 FP32, 65 FP16 TFLOP/s, 1024 threads per SM. Per SM (CUDA's occupancy tables): 64K registers; shared memory 228
# KB (sm_90), 164 KB (sm_80), 64 KB (sm_75); 32 resident thread blocks (16 on sm_75). Launch floors: the H200's
# measured 3.6-3.9 us (the course's compile_baseline tables); the others' similar, a little more on older parts. The
# tl.dot rates are what the course's matmuls reach on an H200 (puzzle 11's float32 reference 49 TFLOP/s, puzzle 22's
# float16 one 327; compile_baseline), not the datasheets' peaks; the other parts' scaled from those by their
# datasheets. Boost clocks: H100 and H200 SXM 1.98 GHz, A100 1.41, T4 1.59; 4 warp schedulers per SM on all four.
GPUS = {
    "H100": GpuModel("H100", dram_gbps=3000, l2_gbps=7500, l2_bytes=50 << 20, sms=132, launch_us=4.0,
                     fp32_tflops=67, dot_tflops=50, dot16_tflops=300, dot8_tflops=600, exps_per_us=132 * 16 * 1830),
    "H200": GpuModel("H200", dram_gbps=4300, l2_gbps=7500, l2_bytes=50 << 20, sms=132, launch_us=3.8,
                     fp32_tflops=67, dot_tflops=50, dot16_tflops=300, dot8_tflops=600, exps_per_us=132 * 16 * 1830),
    "A100": GpuModel("A100", dram_gbps=1800, l2_gbps=4500, l2_bytes=40 << 20, sms=108, launch_us=4.5,
                     fp32_tflops=19.5, dot_tflops=20, dot16_tflops=150, exps_per_us=108 * 16 * 1410, sm=80,
                     shared_per_sm=164 << 10, clock_ghz=1.41),
    "T4": GpuModel("T4", dram_gbps=280, l2_gbps=900, l2_bytes=4 << 20, sms=40, launch_us=5.0,
                   fp32_tflops=8.1, dot_tflops=8, dot16_tflops=40, exps_per_us=40 * 16 * 1590, sm=75,
                   shared_per_sm=64 << 10, threads_per_sm=1024, programs_per_sm=16, clock_ghz=1.59),
}


@dataclass(frozen=True)
class Occupancy:
    """How many programs a multiprocessor holds at once, from the compiled kernel's warps, registers and shared
    memory (`limit`: which of them, or "blocks", runs out first; 0 programs: it does not fit at all)."""

    programs_per_sm: int
    limit: str
    num_warps: int
    registers: int | None  # per thread
    shared: int  # bytes per program

    def text(self) -> str:
        if self.programs_per_sm == 0:
            return (f"it does not fit on a multiprocessor ({self.shared // 1024} KB of shared memory a program)")
        used = {"warps": f"{self.num_warps} warps a program",
                "registers": f"{self.registers} registers a thread, {self.num_warps} warps",
                "shared memory": f"{self.shared // 1024} KB of shared memory a program",
                "blocks": "the most programs a multiprocessor holds"}[self.limit]
        return f"{self.programs_per_sm} program{'s' if self.programs_per_sm > 1 else ''} per multiprocessor ({used})"


def occupancy(gpu: GpuModel, num_warps: int, registers: int | None, shared: int) -> Occupancy:
    """Programs resident per multiprocessor: the fewest that warps, registers (allocated 256 at a time per warp)
    and shared memory allow."""
    warps = max(1, num_warps)
    limits = {"blocks": gpu.programs_per_sm, "warps": gpu.threads_per_sm // (32 * warps)}
    if registers:
        per_warp = -(-registers * 32 // 256) * 256
        limits["registers"] = gpu.registers_per_sm // (per_warp * warps)
    if shared:
        limits["shared memory"] = gpu.shared_per_sm // shared
    limit = min(limits, key=lambda k: (limits[k], k != "blocks"))
    return Occupancy(limits[limit], limit, warps, registers, shared)


def gpu_model(name: str) -> GpuModel:
    """The GPU a report is for, by its short name (case and an "NVIDIA " prefix ignored)."""
    key = name.upper().replace("NVIDIA", "").strip()
    if key not in GPUS:
        raise ValueError(f"no model of the GPU {name!r}: the efficiency report knows {', '.join(GPUS)}")
    return GPUS[key]


@dataclass(frozen=True)
class LineCost:
    """One load or store of the kernel (its line), summed over the analysed run."""

    line: int | None
    op: str  # "load", "store" or "atomic"
    tensor: str
    requests: int  # warp-wide requests (32 active lanes each, the last of a block fewer)
    sectors: int  # sectors those requests touched
    fewest_sectors: int  # sectors they would touch if each warp's lanes were contiguous
    elements: int  # in-bounds active lanes
    unique_elements: int  # distinct elements among them
    masked: int  # lanes masked off
    lanes: int
    source: str = ""

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def coalescing(self) -> float:
        """Sectors touched over the fewest possible: 1 when each warp's lanes are contiguous."""
        return self.sectors / self.fewest_sectors if self.fewest_sectors else 1.0

    @property
    def reads_each(self) -> float:
        """How many times, on average, this line reads each element it reads."""
        return self.elements / self.unique_elements if self.unique_elements else 1.0


@dataclass(frozen=True)
class Efficiency:
    """What the report says, readable by code: `predicted_us`, `bytes_moved`, `bytes_minimum`,
    `sectors_per_request`, `goal_met`, and the one lever that matters most, in the learner's terms."""

    gpu: str
    sizes: dict[str, int]  # the size the prediction is for (the puzzle's perf size)
    analysed: dict[str, int]  # the graded size whose run was read
    predicted_us: float
    bytes_moved: float  # from DRAM, at `sizes`
    bytes_requested: float  # asked of the memory system (L2), at `sizes`
    bytes_minimum: float  # each input read once, the output written once, at `sizes`
    sectors_per_request: float  # over every load and store of the run
    coalescing: float  # sectors touched over the fewest possible, over every access
    masked_fraction: float  # lanes masked off, of all lanes
    programs: int  # at `sizes`
    waves: float  # programs over the SMs' resident capacity
    bound: str  # "memory", "L2", "compute", "latency" or "launch" (BOUND_WORDS)
    reference_us: float | None = None  # the puzzle's reference, predicted the same way
    goal_met: bool | None = None
    lever: str = ""
    lines: tuple[LineCost, ...] = field(default=(), repr=False)
    cpu_goal: str = ""  # the puzzle's CPU speed goal in words, where it has one (goal_met then judges it)
    floor_us: float = 0.0  # what the model predicts for a kernel that wastes nothing (`floor_us`)
    occupancy: Occupancy | None = None  # programs per SM, from the compiled code (None: it did not compile here)

    def record(self) -> dict:
        """What a class's gradebook keeps, in the shape of a GPU's speed record (perf.PerfReport.record): the
        predicted time, the goal's progress (1 when met; else the reference's predicted time over this one) and
        where the numbers come from."""
        if self.goal_met:
            progress = 1.0
        elif self.reference_us:
            progress = min(1.0, self.reference_us / self.predicted_us)
        else:  # no reference to compare with (a class's sandbox has none): against the model's floor
            progress = min(1.0, self.floor_us / self.predicted_us / FLOOR_SHARE_MET)
        return {"ms": self.predicted_us / 1000, "compiled_ms": None, "progress": progress, "line": self.text(),
                "source": f"the efficiency model ({self.gpu}), on a CPU"}

    def text(self) -> str:
        mb = 1e6
        goal = ""
        if self.cpu_goal and self.goal_met is not None:
            goal = f"; the CPU speed goal is {'met' if self.goal_met else 'missed'}: {self.cpu_goal}"
        elif self.goal_met is not None and self.reference_us:
            verdict = "meets" if self.goal_met else "misses"
            goal = (f"; the reference, modelled the same way, {self.reference_us:.0f} us: this {verdict} the "
                    f"speed goal (within 1.1x of it)")
        return (f"Efficiency on an {self.gpu} (modelled from this run at {size_text(self.analysed)}, predicted at "
                f"{size_text(self.sizes)}): about {self.predicted_us:.0f} us, {BOUND_WORDS[self.bound]}{goal}. "
                f"Bytes from memory {self.bytes_moved / mb:.1f} MB against the fewest {self.bytes_minimum / mb:.1f} MB "
                f"({self.bytes_moved / self.bytes_minimum:.2f}x); {self.sectors_per_request:.1f} sectors per "
                f"request ({self.coalescing:.2f}x the fewest); {self.masked_fraction:.0%} of lanes masked off; "
                f"{self.programs} programs, {self.waves:.1f} waves"
                + (f" of {self.occupancy.text()}." if self.occupancy is not None else ".")
                + (f" Lever: {self.lever}" if self.lever else ""))


BOUND_WORDS = {"memory": "bound by DRAM bandwidth", "L2": "bound by L2 traffic (uncoalesced or re-read accesses)",
               "compute": "bound by arithmetic", "latency": "bound by rounds of small dependent loads",
               "issue": "bound by issuing its machine instructions (many, or too few warps to hide their latency)",
               "spills": "bound by registers spilled to local memory and loaded back",
               "launch": "bound by the launch"}


def size_text(sizes: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


@dataclass(frozen=True)
class RunCounts:
    """What efficiency.py reads from one run, at the analysed size."""

    bytes_minimum: float
    bytes_requested: float  # every request's sectors x 32
    bytes_unique: float  # each sector once
    bytes_reread: float  # requested - unique (re-reads, and the partly used sectors of uncoalesced requests)
    sectors_per_request: float
    coalescing: float
    masked_fraction: float
    programs: int
    rounds: float = 1.0  # dependent rounds of loads per program (the most a load line runs in one program)
    lanes_per_load: float = 0.0  # the mean lanes of a load
    rounds_most: float = 1.0  # the rounds of the program that runs the most (one that walks more than its share)
    fresh_share: float = 1.0  # of the loads, those that touch a sector new to their program (the others hit its L1)


# A round of a program's loads in a loop that a later round depends on (Triton pipelines only the loads that feed a
# tl.dot): one that fetches a sector new to the program waits a trip to memory, about 0.45 us on an H200 (a single
# program summing 8192 rows took 0.47 us a row; 32-lane chunks in a loop 0.45 us a chunk); one whose sectors the
# program touched before is served by its L1, about 0.05 us (one element a round, 8 rounds a sector). Both read
# off benchmarks/results/nvidia-h200/efficiency_validation.md, the kernels they are checked on: the least certain
# numbers here.
LOAD_LATENCY_US = 0.45
CACHED_LATENCY_US = 0.05
# Without a reference to compare with, a predicted time within this share of the model's floor earns the whole
# of a class's speed points (the GPU's goals ask 60-80% of the roofline).
FLOOR_SHARE_MET = 0.8


# A warp issues its next instruction only when the one it depends on is done, about 4-6 cycles after an arithmetic
# instruction on Hopper (Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", 2024), and a
# scheduler issues one instruction a cycle from whichever of its warps is ready: with w warps each running n
# instructions, a scheduler takes n x max(latency, w) cycles. Checked on the measured table: puzzle 9's one-pass
# attention (380K instructions a warp, 2 warps a scheduler) predicts 960 us, measured 905 on an H200.
ISSUE_LATENCY_CYCLES = 5.0


@dataclass(frozen=True)
class Issue:
    """What the compiled code asks of the schedulers at a size: the instructions a warp issues (its PTX, the loop
    bodies once per trip), the warps of a program, and the bytes of spilled registers stored and loaded again."""

    instructions_per_warp: float
    num_warps: int
    spilled_bytes: float = 0.0


def issue_us(gpu: GpuModel, issue: Issue, programs: int, resident_per_sm: int) -> float:
    """The schedulers' time: each SM runs its share of the programs in batches of those it holds at once; in a
    batch, each scheduler issues its warps' instructions one a cycle, but each warp's no faster than one per
    instruction latency."""
    per_sm = programs / gpu.sms
    batches = max(1, math.ceil(per_sm / programs_together(resident_per_sm, programs, gpu)))
    per_scheduler = warps_per_scheduler(gpu, issue.num_warps, resident_per_sm, programs)
    cycles = issue.instructions_per_warp * max(ISSUE_LATENCY_CYCLES, per_scheduler)
    return batches * cycles / (gpu.clock_ghz * 1e3)


def programs_together(resident_per_sm: int, programs: int, gpu: GpuModel) -> int:
    """The programs an SM runs at once: as many as it holds, or its share of the grid where that is fewer."""
    return max(1, min(resident_per_sm, math.ceil(programs / gpu.sms)))


def warps_per_scheduler(gpu: GpuModel, num_warps: int, resident_per_sm: int, programs: int) -> float:
    """The warps each of an SM's schedulers switches between while the kernel runs."""
    return programs_together(resident_per_sm, programs, gpu) * max(1, num_warps) / gpu.schedulers_per_sm


def round_us(fresh_share: float) -> float:
    """A dependent round's wait: a trip to memory for the share that fetches new sectors, the L1 for the rest."""
    return fresh_share * LOAD_LATENCY_US + (1.0 - fresh_share) * CACHED_LATENCY_US


def compute_us(gpu: GpuModel, flops: float, exps: float, uses_dot: str) -> float:
    """The arithmetic's time: FLOPs at what a tl.dot of these tiles reaches ("32", "16", "8") or off the tensor
    cores (""), and the exponentials at the special-function rate."""
    rate = {"": gpu.fp32_tflops, "32": gpu.dot_tflops, "16": gpu.dot16_tflops,
            "8": gpu.dot8_tflops or gpu.dot16_tflops}[uses_dot]
    return flops / (rate * 1e6) + exps / gpu.exps_per_us


def floor_us(gpu: GpuModel, minimum: float, flops: float = 0.0, exps: float = 0.0, uses_dot: str = "") -> float:
    """The fewest bytes once at the DRAM rate, or the arithmetic, whichever is longer, after the launch: what the
    model would predict for a kernel that wastes nothing."""
    return gpu.launch_us + max(minimum / (gpu.dram_gbps * 1e3), compute_us(gpu, flops, exps, uses_dot))


def predict(gpu: GpuModel, counts: RunCounts, *, minimum_at_size: float, programs_at_size: int,
            footprint_at_size: float, flops: float = 0.0, exps: float = 0.0, uses_dot: str = "",
            threads_per_program: int = 128, rounds_at_size: float = 1.0,
            rounds_most_at_size: float = 0.0, resident_per_sm: int | None = None, issue: Issue | None = None
            ) -> tuple[float, str, float, float, float]:
    """(predicted us, what bounds it, DRAM bytes, requested bytes, waves) at a size whose fewest bytes,
    programs and data footprint are given, from the counts of a run at another size.

    The ratios to the fewest bytes carry over. Of the re-read bytes, the share the L2 holds is served there; a
    footprint larger than the L2 sends the rest back to DRAM. Latency: the programs run in waves of the SMs'
    resident capacity (`resident_per_sm` programs per SM, from the compiled code where known), and a program waits
    a round trip for each round of dependent loads (tiny chunks in a loop, one element at a time) however few bytes
    each moves; the kernel lasts at least as long as its longest
    program (`rounds_most_at_size`: one program that sums what the others left, say). `issue`: the compiled code's
    instructions and spills at the size (None: it did not compile here, no such term)."""
    scale = minimum_at_size / counts.bytes_minimum if counts.bytes_minimum else 1.0
    unique = counts.bytes_unique * scale
    reread = counts.bytes_reread * scale
    held = min(1.0, gpu.l2_bytes / footprint_at_size) if footprint_at_size else 1.0
    dram = unique + reread * (1.0 - held)
    requested = counts.bytes_requested * scale
    per_sm = resident_per_sm or max(1, gpu.threads_per_sm // max(32, threads_per_program))  # the compiled occupancy
    # A spilled register is stored to local memory and loaded back: traffic the L1 and the L2 serve beside the
    # kernel's own (a thread's hundreds of bytes of stack overflow the L1 that shared memory leaves).
    spilled = issue.spilled_bytes if issue is not None else 0.0
    resident = gpu.sms * per_sm
    waves = programs_at_size / resident
    times = {
        "memory": dram / (gpu.dram_gbps * 1e3),
        "L2": (requested + spilled) / (gpu.l2_gbps * 1e3),
        "compute": compute_us(gpu, flops, exps, uses_dot),
        "latency": max(math.ceil(waves) * rounds_at_size, rounds_most_at_size) * round_us(counts.fresh_share),
    }
    if issue is not None:
        times["issue"] = issue_us(gpu, issue, programs_at_size, per_sm)
    bound = max(times, key=times.get)
    if spilled > requested and bound == "L2":  # most of the L2's traffic is the spills
        bound = "spills"
    work = times[bound if bound != "spills" else "L2"]
    if work < gpu.launch_us:
        bound = "launch"
    return gpu.launch_us + work, bound, dram, requested, waves
