"""Speed on a GPU: time a kernel, and compare it with what this device can do and with what a
user would run instead (the spec in PyTorch, and the spec under `torch.compile`).

The ceilings are measured once per device and cached, because datasheet numbers are not what a
kernel can reach: a large device-to-device copy (bytes read plus bytes written), a large fill
(bytes written only), a large fp16 matmul (the matrix rate), FP32 multiply-adds and exponentials
off the tensor cores (compute_rates.py), and an empty kernel (the launch floor: the time of a
launch that does nothing, measured as the kernels are).

A kernel's floor is the larger of the time its fewest bytes take (each input read once at the
read rate, the output written once at the write rate: memory reads and writes share the bus,
so their times add) and its compute: its FLOPs at the matrix rate, its elementwise multiply-adds
and exponentials (`Puzzle.scalar_work`) at theirs (separate units, which overlap: the largest of
the three); its fraction of the roofline is that floor over its measured time. When the launch
floor is larger than that, the size is launch-bound: nothing the kernel does can bring it under
the launch floor, and the report says so instead.

`torch.compile(spec)` is compiled once per puzzle in a process (the GPU worker: once per session)
and timed after a first call, so the compile itself is never counted; a spec that does not
compile is said so in the report, never raised. The puzzle's library op (`Puzzle.library`: torch.bmm
with TF32, F.layer_norm; puzzles/course/library_baseline.py) is timed beside them, under its settings.
The bar is the fastest of the three a user would run instead of the kernel (eager torch, torch.compile,
the library op, unless the goal's `library_note` says why the library is no goal), and the report names
it. A puzzle's `SpeedGoal` (at least the bar's speed, and a roofline fraction where the roofline is the
real bound) is judged from these times, and the report says what usually closes the gap when it is not met.

Everything but the measuring (`bench`, `device_limits`, `measure`) is pure: given the times,
`PerfReport` computes and words the report (tested on a CPU with made-up limits).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import triton

from puzzles.course.amounts import fewest_bytes, fmt_bytes, fmt_count, fmt_flops, size_text
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Baseline, ScalarWork, SpeedGoal
from puzzles.course.spec import call_spec

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-puzzles" / "device_limits.json"

Sizes = dict[str, int]
# A time under this many launch floors, at a size whose work takes less than one, is mostly launch.
LAUNCH_BOUND_WITHIN = 2.0


@dataclass
class DeviceLimits:
    device: str
    copy_gbps: float  # a large copy: bytes read + written per second, in GB/s
    matmul_tflops: float  # dense fp16 matmul, TFLOP/s
    write_gbps: float | None = None  # a large fill: bytes written per second (None: as the copy)
    launch_us: float | None = None  # an empty kernel's time, launch included (None: not measured)
    fp32_tflops: float | None = None  # FP32 FMAs off the tensor cores, 2 FLOPs each, TFLOP/s (None: not measured)
    exp_tops: float | None = None  # float32 exponentials (tl.exp2), 1e12 per second (None: not measured)

    @property
    def read_gbps(self) -> float:
        """Bytes read per second: a copy of n bytes takes n/read + n/write."""
        if not self.write_gbps:
            return self.copy_gbps
        per_byte = 2 / self.copy_gbps - 1 / self.write_gbps
        return 1 / per_byte if per_byte > 0 else self.copy_gbps

    @property
    def written_gbps(self) -> float:
        return self.write_gbps or self.copy_gbps



@dataclass
class PerfReport:
    sizes: Sizes
    ms: float  # median
    torch_ms: float | None
    read_bytes: int  # fewest bytes the problem must read (each input once)
    written_bytes: int  # and write (the output once)
    flops: int
    limits: DeviceLimits
    baseline: Baseline | None = None
    baseline_ms: float | None = None
    baseline_error: str = ""  # why the baseline could not be timed
    scalar: ScalarWork = ScalarWork()  # the elementwise arithmetic the problem needs at this size
    compiled_ms: float | None = None  # torch.compile(spec), after its compile
    compile_error: str = ""  # why torch.compile(spec) could not be timed
    goal: SpeedGoal | None = None
    library: LibraryBaseline | None = None  # the op a user would call instead (Puzzle.library)
    library_ms: float | None = None
    library_error: str = ""  # why the library op could not be timed

    @property
    def library_in_bar(self) -> bool:
        """The library op counts toward the bar: timed, and the goal gives no reason to leave it out."""
        return (self.library is not None and self.library_ms is not None
                and not (self.goal is not None and self.goal.library_note))

    @property
    def bar(self) -> tuple[str, float] | None:
        """(what, ms): the fastest of what a user would run instead of the kernel (eager torch, torch.compile,
        the library op where it counts), or None where none was timed."""
        timed = [("torch (the spec)", self.torch_ms), ("torch.compile", self.compiled_ms)]
        if self.library_in_bar:
            assert self.library is not None
            timed.append((self.library.label, self.library_ms))
        measured = [(name, ms) for name, ms in timed if ms is not None]
        return min(measured, key=lambda item: item[1]) if measured else None

    @property
    def bytes_moved(self) -> int:
        return self.read_bytes + self.written_bytes

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.ms / 1e6

    @property
    def tflops(self) -> float:
        return self.flops / self.ms / 1e9

    @property
    def memory_ms(self) -> float:
        return (self.read_bytes / (self.limits.read_gbps * 1e6)
                + self.written_bytes / (self.limits.written_gbps * 1e6))

    def compute_times(self) -> dict[str, float]:
        """The time each kind of arithmetic needs at its unit's measured rate, in ms, by what it is in words
        (a rate not measured counts for nothing)."""
        times = {}
        if self.flops:
            times[f"its {fmt_flops(self.flops)} at the matrix rate"] = self.flops / (self.limits.matmul_tflops * 1e9)
        if self.scalar.fmas and self.limits.fp32_tflops:
            times[f"its {fmt_count(self.scalar.fmas)} FP32 multiply-adds at {self.limits.fp32_tflops / 2:.1f} T/s"] = (
                2 * self.scalar.fmas / (self.limits.fp32_tflops * 1e9))
        if self.scalar.exps and self.limits.exp_tops:
            times[f"its {fmt_count(self.scalar.exps)} exponentials at {self.limits.exp_tops:.2f} T/s"] = (
                self.scalar.exps / (self.limits.exp_tops * 1e9))
        return times

    @property
    def compute_ms(self) -> float:
        return max(self.compute_times().values(), default=0.0)

    @property
    def floor_ms(self) -> float:
        return max(self.memory_ms, self.compute_ms)

    @property
    def floor_reason(self) -> str:
        """What sets the floor, in words: `its 268M exponentials at 3.90 T/s` or `memory`."""
        times = self.compute_times()
        if not times or self.memory_ms >= max(times.values()):
            return "memory"
        return max(times, key=times.__getitem__)

    @property
    def launch_ms(self) -> float:
        return (self.limits.launch_us or 0.0) / 1000

    @property
    def launch_bound(self) -> bool:
        """The launch alone takes longer than moving the bytes and doing the FLOPs would, and it is
        most of the kernel's time: only a larger size would show the kernel itself."""
        return self.launch_ms > self.floor_ms and self.ms < LAUNCH_BOUND_WITHIN * self.launch_ms

    @property
    def roofline_fraction(self) -> float:
        return self.floor_ms / self.ms

    @property
    def attained(self) -> float:
        """The fraction of what this device allows at this size that the report shows: the launch floor's
        where it is the larger, else the roofline's (never above 1: the ceilings' own noise)."""
        return min(max(self.floor_ms, self.launch_ms) / self.ms, 1.0)

    def lines(self) -> list[str]:
        """The speed line, and the goal's where the puzzle has one."""
        goal = goal_line(self)
        return [self.speed_line()] + ([goal] if goal else [])

    def text(self) -> str:
        return "\n".join(self.lines())

    def record(self) -> dict[str, Any]:
        """What a class's gradebook keeps of the report (JSON): the times, the goal's progress, the lines."""
        bar = self.bar
        return {"ms": self.ms, "compiled_ms": self.compiled_ms, "library_ms": self.library_ms,
                "bar": bar[0] if bar else None, "progress": goal_progress(self), "line": self.text()}

    def speed_line(self) -> str:
        size = size_text(self.sizes)
        parts = [f"speed at {size}: {_us(self.ms)}, {self.gbps:.0f} GB/s"]
        if self.flops:
            parts.append(f"{self.tflops:.1f} TFLOP/s")
        work = f"its {fmt_bytes(self.bytes_moved)} alone would take {_us(self.floor_ms)}"
        if self.launch_bound:
            parts.append(f"launch-bound: {_us(self.ms)} against a launch floor of {_us(self.launch_ms)} (an empty "
                         f"kernel on this {self.limits.device}; {work})")
        elif self.launch_ms > self.floor_ms:  # far from the launch floor, which is still the bound
            parts.append(f"{min(self.launch_ms / self.ms, 1.0):.0%} of what this {self.limits.device} allows at "
                         f"this size (floor {_us(self.launch_ms)}: the launch floor, an empty kernel's time; {work})")
        else:
            # Above 100% only within the noise of the measured ceilings: shown as 100%.
            reason = "" if self.floor_reason == "memory" else f": {self.floor_reason}"
            parts.append(f"{min(self.roofline_fraction, 1.0):.0%} of this {self.limits.device}'s roofline "
                         f"(floor {_us(self.floor_ms)}{reason})")
        if self.torch_ms is not None:
            parts.append(f"torch (the spec): {_us(self.torch_ms)}")
        if self.compiled_ms is not None:
            parts.append(f"torch.compile (the spec compiled): {_us(self.compiled_ms)}; this kernel is "
                         f"{_ratio(self.ms, self.compiled_ms, 'it')}")
        elif self.compile_error:
            parts.append(f"torch.compile could not be timed here ({self.compile_error})")
        if self.library is not None and self.library_ms is not None:
            parts.append(f"{self.library.text()} (what a user would call): {_us(self.library_ms)}; this kernel is "
                         f"{_ratio(self.ms, self.library_ms, 'it')}")
        elif self.library is not None:
            parts.append(f"{self.library.label} could not be timed here ({self.library_error})")
        bar = self.bar
        if bar is not None and (self.library is not None or bar[0] != "torch.compile"):
            parts.append(f"the bar: {bar[0]}, the fastest of those a user would run here")
        if self.baseline is not None and self.baseline_ms is not None:
            ratio = self.ms / self.baseline_ms
            gap = f"{ratio:.1f}x faster than this kernel" if ratio >= 1 else f"{1 / ratio:.1f}x slower than this kernel"
            parts.append(f"{self.baseline.name} at this size: {_us(self.baseline_ms)}, {gap}. {self.baseline.lesson}")
        elif self.baseline is not None:
            parts.append(f"{self.baseline.name} could not be timed here ({self.baseline_error})")
        return "; ".join(parts)


# Timings of one kernel vary by a few percent from run to run: a goal within this much is met.
TIMING_NOISE = 0.05
# ... and at the launch floor, where a few microseconds are the whole time, do_bench's median moves by about
# a microsecond from one run to the next whatever the kernel.
TIMING_NOISE_MS = 0.001


def within_noise(ms: float, other_ms: float) -> bool:
    """`ms` is no slower than `other_ms` as far as timing can tell (5%, or a microsecond at the launch floor):
    the one rule of "as fast as" for the speed goal, the report and benchmarks/compile_baseline.py."""
    return ms <= max(other_ms * (1 + TIMING_NOISE), other_ms + TIMING_NOISE_MS)


GENERIC_LEVERS = ("larger blocks (fewer, fuller programs) with num_warps to match (4 for a 1-2K-element block, 8 "
                  "above); one pass that fuses what the spec does in several, so each byte is read once; tl.dot "
                  "for products of blocks; loads and stores along the contiguous axis, wide enough for 16-byte "
                  "vectors (a block of at least 4 float32 per thread)")


def goal_progress(report: PerfReport) -> float | None:
    """How far a kernel is toward its puzzle's goal: 1.0 when met; below it, the worse of its parts (the
    time the goal allows over the time taken; the fraction reached over the fraction asked). None without a
    goal, or where no part of it could be judged (torch.compile failed and there is no roofline part)."""
    goal = report.goal
    if goal is None:
        return None
    parts = []
    bar = report.bar
    if goal.vs_compile and bar is not None:
        allowed = bar[1] / goal.vs_compile
        parts.append(1.0 if within_noise(report.ms, allowed) else allowed / report.ms)
    if goal.roofline:
        parts.append(min(report.attained / goal.roofline, 1.0))
    return min(parts) if parts else None


def goal_line(report: PerfReport) -> str:
    """`goal (...): met` or `goal (...): not met: ...; what usually closes the gap: ...` ("" without a goal)."""
    goal = report.goal
    if goal is None:
        return ""
    facts = []
    bar = report.bar
    # The goal's comparison is with the bar; a goal without one (vs_compile 0) still shows torch.compile's.
    compared = bar if goal.vs_compile and bar is not None else (
        ("torch.compile", report.compiled_ms) if report.compiled_ms is not None else None)
    if compared is not None:
        facts.append(_ratio(report.ms, compared[1], compared[0]))
    if goal.roofline:
        facts.append(f"{report.attained:.0%} of what this GPU allows here")
    progress = goal_progress(report)
    head = f"goal ({goal.text(report.library.label if report.library is not None else '')})"
    if progress is None:
        return f"{head}: cannot be judged here: torch.compile could not be timed"
    unjudged = ("; its torch.compile part cannot be judged here (torch.compile could not be timed)"
                if goal.vs_compile and bar is None else "")
    if progress >= 1.0:
        return f"{head}: met ({', '.join(facts)}){unjudged}"
    levers = f"{goal.levers}; in general: {GENERIC_LEVERS}" if goal.levers else GENERIC_LEVERS
    return (f"{head}: not met ({', '.join(facts)}; {progress:.0%} of the way){unjudged}. "
            f"What usually closes the gap here: {levers}")


def _ratio(ms: float, other_ms: float, other: str) -> str:
    """This kernel (`ms`) against another: `1.5x faster than it`, `2.0x slower than it`, `as fast as it`
    (within the noise)."""
    if within_noise(ms, other_ms) and within_noise(other_ms, ms):
        return f"as fast as {other}"
    return f"{other_ms / ms:.1f}x faster than {other}" if ms < other_ms else f"{ms / other_ms:.1f}x slower than {other}"


def _us(ms: float) -> str:
    us = ms * 1000
    return f"{us:.2f} us" if us < 1 else f"{us:.1f} us"


# -- measuring (on a GPU) ----------------------------------------------------------------------------


def bench(fn: Callable[[], Any]) -> float:
    """Median milliseconds of `fn` on the GPU (events, warm-up, many repeats)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def device_limits(refresh: bool = False) -> DeviceLimits:
    """This GPU's measured ceilings and launch floor, cached per device, torch and Triton."""
    name = torch.cuda.get_device_name()
    key = f"{name} | torch {torch.__version__} | triton {triton.__version__}"
    cached = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    known = {f.name for f in fields(DeviceLimits)}
    entry = {k: v for k, v in cached.get(key, {}).items() if k in known}
    if not refresh and entry and all(entry.get(f) is not None for f in known):
        return DeviceLimits(**entry)
    limits = DeviceLimits(name, _copy_gbps(), _matmul_tflops(), _write_gbps(), _launch_us(), _fp32_tflops(),
                          _exp_tops())
    cached[key] = asdict(limits)
    try:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cached, indent=1))
    except OSError:  # a read-only home (a class's sandbox): measured again next time, never an error
        pass
    return limits


def _fp32_tflops() -> float:
    from puzzles.grading import compute_rates

    return compute_rates.fp32_tflops(bench)


def _exp_tops() -> float:
    from puzzles.grading import compute_rates

    return compute_rates.exp_tops(bench)


def _copy_gbps(n: int = 1 << 28) -> float:
    """A 1 GiB float32 copy (far larger than any L2), counting bytes read plus written."""
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    return 2 * src.element_size() * n / bench(lambda: dst.copy_(src)) / 1e6


def _write_gbps(n: int = 1 << 28) -> float:
    """A 1 GiB float32 fill: bytes written only (an output a kernel never reads)."""
    dst = torch.empty(n, dtype=torch.float32, device="cuda")
    return dst.element_size() * n / bench(lambda: dst.fill_(1.0)) / 1e6


def _matmul_tflops(m: int = 8192) -> float:
    """Dense fp16 matmul on random data (zeros run faster than real data)."""
    a = torch.randn(m, m, dtype=torch.float16, device="cuda")
    b = torch.randn(m, m, dtype=torch.float16, device="cuda")
    return 2 * m**3 / bench(lambda: a @ b) / 1e9


@triton.jit
def _empty_kernel():
    pass


def _launch_us() -> float:
    """An empty Triton kernel, timed as `bench` times every kernel: no kernel can be faster."""
    return bench(lambda: _empty_kernel[(1,)]()) * 1000


# torch.compile(spec) per puzzle (or spec) in this process: the compiled function, or why it failed.
COMPILED: dict[Any, Callable[..., Any] | str] = {}


def _error_text(err: BaseException) -> str:
    lines = [line for line in f"{type(err).__name__}: {err}".splitlines() if line.strip()]
    return lines[0][:300] if lines else type(err).__name__


def time_compiled(spec: Callable[..., Any], inputs: list[torch.Tensor], sizes: Sizes, key: Any,
                  ) -> tuple[float | None, str]:
    """(ms, "") for `torch.compile(spec)` on `inputs`, or (None, why not). Compiled once per `key` in this
    process; the first call (where the compile happens) is not timed. A failure is kept, not retried."""
    compiled = COMPILED.get(key)
    if compiled is None:
        try:
            compiled = torch.compile(spec)
        except Exception as err:  # noqa: BLE001 - a spec torch.compile refuses is a fact for the report
            compiled = _error_text(err)
        COMPILED[key] = compiled
    if isinstance(compiled, str):
        return None, compiled
    wanted = [name for name, param in inspect.signature(spec).parameters.items()
              if param.kind is inspect.Parameter.KEYWORD_ONLY]
    keywords = {name: sizes[name] for name in wanted}
    try:
        compiled(*inputs, **keywords)  # compiles here (or finds its compiled code): not timed
        torch.cuda.synchronize()
        return bench(lambda: compiled(*inputs, **keywords)), ""
    except Exception as err:  # noqa: BLE001 - never costs the learner the report
        COMPILED[key] = _error_text(err)
        return None, COMPILED[key]


def compiled_keys() -> list[Any]:
    """The puzzles (or specs) compiled in this process so far (the GPU worker's: tests ask it)."""
    return [key if isinstance(key, int) else repr(key) for key in COMPILED]


def time_library(library: LibraryBaseline, inputs: list[torch.Tensor], sizes: Sizes) -> tuple[float | None, str]:
    """(ms, "") for the library op on `inputs`, made ready and timed under its settings (TF32), or (None, why
    not): an op that does not run on this GPU or at this shape is a line in the report, never an error."""
    try:
        ready = library.start(inputs, sizes)
        with library.settings():
            return bench(ready.run), ""
    except Exception as err:  # noqa: BLE001 - the comparison must never cost the learner the report
        return None, _error_text(err)


def measure(launch: Callable[[], Any], spec: Callable[..., Any], inputs: list[torch.Tensor], sizes: Sizes,
            flops: int, baseline: Baseline | None = None, scalar: ScalarWork | None = None,
            goal: SpeedGoal | None = None, compile_key: Any = None,
            library: LibraryBaseline | None = None) -> PerfReport:
    """Time a launch at one size, beside torch's version of the same work (the spec on `inputs`,
    the spec's inputs on the GPU), the spec under torch.compile (compiled once per `compile_key`,
    default the spec), the library op a user would call (`library`) and the puzzle's baseline kernel, if it
    has them."""
    ms = bench(launch)
    # A spec with no tensor inputs (puzzle 16: sizes alone) makes its tensors on the GPU too, as the kernel does.
    where = contextlib.nullcontext() if inputs else torch.device("cuda")
    with where:
        torch_ms = bench(lambda: call_spec(spec, inputs, sizes))
        compiled_ms, compile_error = time_compiled(spec, inputs, sizes, spec if compile_key is None else compile_key)
    baseline_ms, baseline_error = None, ""
    if baseline is not None:
        try:
            baseline_ms = bench(baseline.launch(inputs, sizes))
        except Exception as err:  # noqa: BLE001 - the comparison must never cost the learner the report
            baseline_error = f"{type(err).__name__}: {err}".splitlines()[0]
    library_ms, library_error = time_library(library, inputs, sizes) if library is not None else (None, "")
    read, written = fewest_bytes(spec, sizes)
    return PerfReport(dict(sizes), ms, torch_ms, read, written, flops, device_limits(), baseline, baseline_ms,
                      baseline_error, scalar or ScalarWork(), compiled_ms, compile_error, goal, library, library_ms,
                      library_error)
