"""Every puzzle's reference kernel, and its fast reference, against what a user would write instead:
the spec run eagerly, `torch.compile(spec)` and the library op a user would call (`Puzzle.library`: torch.bmm
with TF32, F.layer_norm, ...), beside the roofline, at the puzzle's perf size.

    python benchmarks/compile_baseline.py [--puzzle N ...] [--out benchmarks/results]

Needs a CUDA GPU; without one it says so and exits 0. For each puzzle of the catalog with a perf size
(new puzzles are picked up from the catalog), on the inputs the grader draws there:
- the reference kernel (solutions/pNN_<slug>.py) and the fast reference (`Puzzle.fast_reference`,
  solutions/pNN_<slug>_fast.py), launched as `test(..., perf=True)` launches a learner's kernel (the
  grader's own argument binding), each checked against the spec first;
- the spec, eagerly, and compiled with `torch.compile`, timed as `test(..., perf=True)` times them
  (perf.time_compiled: the first call compiles and is not counted; a compile that fails is a note in
  the table, not an error);
- the puzzle's library op, made ready on the same inputs and timed under its settings (perf.time_library;
  one that cannot run is a note), its output checked against the spec;
- the floor of puzzles/grading/perf.py's roofline (the fewest bytes at the measured read and write
  rates, the FLOPs at the matrix rate, the elementwise multiply-adds and exponentials at theirs), or the
  launch floor where that is larger.
All times are medians of `triton.testing.do_bench` (perf.bench, as the grader times). Writes
compile_baseline.md and compile_baseline.json under --out/<device>/, with the command, the device
and the versions. Exits 1 when a reference is wrong, or slower than torch.compile or than the bar (the fastest of
eager torch, torch.compile and the library op, as the speed goal judges it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

# Runs from a checkout without an install (as on a GPU box with its own torch): the course's packages are here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
NO_GPU = "benchmarks/compile_baseline.py needs a CUDA GPU: none here, nothing measured."

if __name__ == "__main__":  # said before torch and the course load (seconds) where torch is its CPU build
    from cuda_here import cuda_available

    if not cuda_available():
        print(NO_GPU)
        sys.exit(0)

import torch  # noqa: E402

from puzzles.course import catalog  # noqa: E402
from puzzles.course.amounts import fewest_bytes, size_text  # noqa: E402
from puzzles.course.puzzle import Puzzle, ScalarWork, Sizes  # noqa: E402
from puzzles.course.spec import call_spec  # noqa: E402
from puzzles.grading import perf  # noqa: E402
from puzzles.grading.cases import Case  # noqa: E402
from puzzles.grading.job import make_job  # noqa: E402
from puzzles.grading.presenting import bound_launch, speed_tensors  # noqa: E402
from puzzles.grading.runs import ArenaNames, use_scratch_allocator  # noqa: E402
from puzzles.grading.signature import bind_arguments  # noqa: E402


@dataclass
class Row:
    """One puzzle's times in microseconds (None: not measured, with the reason in `notes`)."""

    number: int
    title: str
    size: str
    reference_us: float | None
    fast_reference_us: float | None
    eager_us: float | None
    compiled_us: float | None
    floor_us: float
    bound: str  # what sets the floor: "memory", "launch" or the compute that does (perf.floor_reason)
    reference_error: float | None
    fast_reference_error: float | None
    notes: str = ""
    compared: bool = True  # False: the puzzle's speed goal has no torch.compile part (SpeedGoal.compile_note)
    library: str = ""  # the library op's label ("" where the puzzle has none: Puzzle.no_library)
    library_us: float | None = None
    library_error: float | None = None  # its relative error against the spec
    library_in_goal: bool = False  # the goal's bar counts it (no SpeedGoal.library_note)
    vs_bar: float = 1.0  # the goal's factor on the bar's speed (SpeedGoal.vs_compile)

    @property
    def best_us(self) -> float | None:
        times = [t for t in (self.reference_us, self.fast_reference_us) if t is not None]
        return min(times) if times else None

    @property
    def best_vs_compiled(self) -> float | None:
        """The better reference's time over torch.compile's (1.0 or less: at least as fast)."""
        if self.best_us is None or not self.compiled_us:
            return None
        return self.best_us / self.compiled_us

    @property
    def bar_us(self) -> float | None:
        """The fastest of what a user would run instead: eager torch, torch.compile, and the library op where
        the goal counts it (perf.PerfReport.bar)."""
        times = [self.eager_us, self.compiled_us] + ([self.library_us] if self.library_in_goal else [])
        measured = [t for t in times if t is not None]
        return min(measured) if measured else None

    @property
    def best_vs_library(self) -> float | None:
        """The better reference's time over the library op's (1.0 or less: at least as fast)."""
        if self.best_us is None or not self.library_us:
            return None
        return self.best_us / self.library_us

    @property
    def slower_than_bar(self) -> bool:
        """Slower than the bar (over the goal's factor) beyond the timing noise, where the goal compares them."""
        bar = self.bar_us
        return (self.compared and self.best_us is not None and bool(bar)
                and not perf.within_noise(self.best_us / 1000, bar / self.vs_bar / 1000))

    @property
    def slower_than_compiled(self) -> bool:
        """Slower than torch.compile beyond the timing noise (perf.within_noise, as the speed goal judges it),
        where the puzzle's goal compares them."""
        return (self.compared and self.best_us is not None and bool(self.compiled_us)
                and not perf.within_noise(self.best_us / 1000, self.compiled_us / 1000))


def kernel_launch(p: Puzzle, kernel: Any, sizes: Sizes, seed: int, device: str = "cuda") -> tuple[
        Callable[[], None], torch.Tensor, list[torch.Tensor]]:
    """(a launch of `kernel` at `sizes`, its output, the spec's inputs): the arguments bound as `test()`
    binds a learner's kernel (its GradingJob), on the inputs `test(..., perf=True)` times it with."""
    job = make_job(kernel, p.spec, p, seed=seed)
    names = job.input_names
    grid: Any = tuple(p.grid(sizes))
    args, kwargs = bind_arguments(job)(Case(sizes, seed, grid, ArenaNames([*names, "z"]), names, None))
    if job.handle.supplied:  # an autotuned kernel (puzzle 20): its config gives the blocks, and the grid asks for them
        kwargs = {k: v for k, v in kwargs.items() if k not in job.handle.supplied}
        grid = lambda meta: tuple(p.grid({**sizes, **meta}))  # noqa: E731
    inputs, tensors = speed_tensors(p, p.spec, sizes, seed, device=device)
    launch = bound_launch(kernel, grid, args, kwargs, tensors, p.output_init == "zeros")
    return launch, tensors["z"], inputs


def relative_error(out: torch.Tensor, expected: torch.Tensor) -> float | None:
    """|out - expected| / |expected| over the whole output (None where the output is laid out otherwise)."""
    if out.shape != expected.shape:
        return None
    diff = (out.double() - expected.double()).norm()
    return (diff / expected.double().norm().clamp_min(1e-30)).item()


def time_kernel(p: Puzzle, kernel: Any, sizes: Sizes) -> tuple[float, float | None]:
    """(median ms, relative error against the spec) of one kernel at `sizes`."""
    launch, out, inputs = kernel_launch(p, kernel, sizes, seed=p.number)
    launch()
    torch.cuda.synchronize()
    error = relative_error(out, call_spec(p.spec, inputs, sizes).to(out.device))  # a spec may make its own tensors (16)
    return perf.bench(launch), error


def time_spec(p: Puzzle, sizes: Sizes) -> tuple[float, float | None, str]:
    """(eager ms, compiled ms, why the compiled spec was not timed), timed as `test(..., perf=True)` times
    them (perf.time_compiled: the first call compiles and is not counted)."""
    inputs, _ = speed_tensors(p, p.spec, sizes, p.number)  # the inputs test(..., perf=True) times the spec on
    # A spec with no tensor inputs (sizes alone) makes its tensors on the GPU too, as the kernel does.
    with contextlib.nullcontext() if inputs else torch.device("cuda"):
        eager = perf.bench(lambda: call_spec(p.spec, inputs, sizes))
        compiled, why = perf.time_compiled(p.spec, inputs, sizes, key=("compile_baseline", p.number))
    return eager, compiled, why


def time_library(p: Puzzle, sizes: Sizes) -> tuple[float | None, float | None, str]:
    """(ms, relative error against the spec, why it was not timed) of the puzzle's library op, on the inputs
    `test(..., perf=True)` times it with."""
    assert p.library is not None
    inputs, _ = speed_tensors(p, p.spec, sizes, p.number)
    ms, why = perf.time_library(p.library, inputs, sizes)
    if ms is None:
        return None, None, why
    ready = p.library.start(inputs, sizes)
    with p.library.settings():
        ready.run()
    out = ready.output()
    return ms, relative_error(out, call_spec(p.spec, inputs, sizes).to(out.device)), ""


def measure(p: Puzzle, limits: Any) -> Row:
    sizes = dict(p.perf_size or {})
    ref_ms, ref_err = time_kernel(p, p.reference(), sizes)
    fast_ms = fast_err = None
    if p.fast_reference is not None:
        fast_ms, fast_err = time_kernel(p, p.fast_reference_kernel(), sizes)
    eager_ms, compiled_ms, why = time_spec(p, sizes)
    read, written = fewest_bytes(p.spec, sizes)
    report = perf.PerfReport(sizes=sizes, ms=ref_ms, torch_ms=eager_ms, read_bytes=read, written_bytes=written,
                             flops=p.flops(sizes) if p.flops else 0, limits=limits,
                             scalar=p.scalar_work(sizes) if p.scalar_work else ScalarWork())
    # The roofline's floor (memory, the matrix rate, elementwise arithmetic), or the launch floor when larger.
    floor_ms = max(report.floor_ms, report.launch_ms)
    bound = "launch" if report.launch_ms >= report.floor_ms else report.floor_reason
    us = lambda ms: None if ms is None else ms * 1000  # noqa: E731
    notes = f"torch.compile could not be timed: {why}" if why else ""
    goal = p.speed_goal
    compared = goal is None or bool(goal.vs_compile)
    if not compared:
        notes = (notes + "; " if notes else "") + f"no torch.compile goal: {goal.compile_note}"
    library_ms = library_err = None
    if p.library is not None:
        library_ms, library_err, why = time_library(p, sizes)
        if why:
            notes = (notes + "; " if notes else "") + f"{p.library.label} could not be timed: {why}"
        if goal is not None and goal.library_note:
            notes = (notes + "; " if notes else "") + f"{p.library.label} is no goal: {goal.library_note}"
    return Row(p.number, p.title, size_text(sizes), us(ref_ms), us(fast_ms), us(eager_ms), us(compiled_ms),
               floor_ms * 1000, bound, ref_err, fast_err, notes, compared,
               library=p.library.text() if p.library is not None else "", library_us=us(library_ms),
               library_error=library_err,
               library_in_goal=p.library is not None and not (goal is not None and goal.library_note),
               vs_bar=goal.vs_compile if goal is not None and goal.vs_compile else 1.0)


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _error(value: float | None) -> str:
    return "—" if value is None else f"{value:.1e}"


def markdown(rows: list[Row], header: str) -> str:
    lines = ["| puzzle | size | reference us | fast reference us | eager us | torch.compile us | library op | "
             "library us | floor us | best / compiled | best / library | rel. error (ref, fast, library) | notes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        ratio, library_ratio = r.best_vs_compiled, r.best_vs_library
        verdict = "—" if ratio is None else f"{ratio:.2f}x" + (" (slower)" if r.slower_than_compiled else "")
        against_library = "—" if library_ratio is None else f"{library_ratio:.2f}x" + (
            "" if r.library_in_goal else " (no goal)") + (" (slower than the bar)" if r.slower_than_bar else "")
        lines.append(f"| {r.number} {r.title} | {r.size} | {_num(r.reference_us)} | {_num(r.fast_reference_us)} | "
                     f"{_num(r.eager_us)} | {_num(r.compiled_us)} | {r.library or '—'} | {_num(r.library_us)} | "
                     f"{_num(r.floor_us)} ({r.bound}) | {verdict} | {against_library} | "
                     f"{_error(r.reference_error)}, {_error(r.fast_reference_error)}, {_error(r.library_error)} | "
                     f"{r.notes} |")
    return header + "\n" + "\n".join(lines) + "\n"


def merged_with_recorded(path: Path, rows: list[Row], command: str) -> tuple[list[Row], str, list[dict], dict] | None:
    """The device's recorded table with these rows in place of its rows of the same puzzles: (every row, the
    table's own command, the re-measurements so far with this one last, the table's measured ceilings), or None
    where none is recorded."""
    if not path.exists():
        return None
    recorded = json.loads(path.read_text())
    names = {f.name for f in fields(Row)}
    kept = [Row(**{k: v for k, v in r.items() if k in names}) for r in recorded["rows"]
            if r["number"] not in {row.number for row in rows}]
    runs = [*recorded.get("reruns", []), {"command": command, "puzzles": [row.number for row in rows]}]
    return sorted(kept + rows, key=lambda r: r.number), recorded["command"], runs, recorded["limits"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--puzzle", type=int, action="append", help="only this puzzle (repeatable)")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print(NO_GPU)
        return 0
    use_scratch_allocator("cuda")  # device-side tensor descriptors (puzzle 29) need global scratch memory

    import triton


    limits = perf.device_limits(refresh=True)
    rows = []
    for p in catalog.all_puzzles():
        if p.perf_size is None or (args.puzzle and p.number not in args.puzzle):
            continue
        row = measure(p, limits)
        rows.append(row)
        print(f"{row.number:2d} {row.title:36s} ref {_num(row.reference_us)} us, "
              f"fast {_num(row.fast_reference_us)} us, "
              f"eager {_num(row.eager_us)} us, compiled {_num(row.compiled_us)} us, "
              f"library {_num(row.library_us)} us, floor {_num(row.floor_us)} us "
              f"({row.bound}) {row.notes}", flush=True)

    device_dir = args.out / re.sub(r"[^A-Za-z0-9]+", "-", limits.device).strip("-").lower()
    device_dir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/compile_baseline.py" + "".join(f" --puzzle {n}" for n in args.puzzle or [])
    versions = {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version()}
    merged = merged_with_recorded(device_dir / "compile_baseline.json", rows, command) if args.puzzle else None
    runs: list[dict] = []
    measured = [row.number for row in rows]
    if merged is not None:  # a table already recorded on this device: these puzzles' rows replace theirs
        rows, command, runs, table_limits = merged
        runs[-1].update(versions, launch_us=limits.launch_us)
        limits = type(limits)(**table_limits)  # the table's own ceilings (its rows were judged against them)
    header = (f"Device: {limits.device}; torch {versions['torch']}, triton {versions['triton']}, "
              f"python {versions['python']}\n"
              f"Measured ceilings: read {limits.read_gbps:.0f} GB/s, write {limits.written_gbps:.0f} GB/s, fp16 matmul "
              f"{limits.matmul_tflops:.0f} TFLOP/s, launch floor {limits.launch_us:.1f} us\n"
              f"Command: {command}\n"
              + "".join(f"Rows of puzzles {', '.join(map(str, r['puzzles']))} re-measured: {r['command']} "
                        f"(torch {r['torch']}, triton {r['triton']})\n" for r in runs) +
              "Times: median of triton.testing.do_bench; torch.compile's first call (the compile) not counted.\n"
              "'best / compiled': the faster of the two references over torch.compile (slower: beyond the timing "
              "noise, 5% or 1 us, where the puzzle's goal compares them).\n"
              "'best / library': the same over the library op a user would call (Puzzle.library, under its settings; "
              "'no goal': the goal's library_note leaves it out of the bar, the fastest of eager torch, "
              "torch.compile and the library op that the speed goal is judged against).\n")
    (device_dir / "compile_baseline.md").write_text(markdown(rows, header))
    # The puzzles with a speed size when this table was recorded: a puzzle added later is measured in a newer table.
    course = [q.number for q in catalog.all_puzzles() if q.perf_size]
    if runs:  # a table re-measured in part covers what its runs measured, not puzzles added since
        course = [r.number for r in rows]
    payload = {"command": command, "device": limits.device, **versions, "limits": asdict(limits), "catalog": course,
               "reruns": runs,
               "rows": [{**asdict(r), "best_vs_compiled": r.best_vs_compiled,
                         "slower_than_compiled": r.slower_than_compiled, "bar_us": r.bar_us,
                         "best_vs_library": r.best_vs_library, "slower_than_bar": r.slower_than_bar} for r in rows]}
    (device_dir / "compile_baseline.json").write_text(json.dumps(payload, indent=1) + "\n")
    print("\n" + markdown(rows, header))
    print(f"wrote {device_dir}/compile_baseline.{{md,json}}")
    rows = [r for r in rows if r.number in measured]  # the exit status judges what this run measured
    wrong: list[int | str] = [r.number for r in rows if any(e is not None and e > 1e-2 for e in (
        r.reference_error, r.fast_reference_error))]
    slow = [r.number for r in rows if r.slower_than_compiled]
    wrong += [f"{r.number} (its library op)" for r in rows if r.library_error is not None and r.library_error > 1e-2]
    behind = [r.number for r in rows if r.slower_than_bar and not r.slower_than_compiled]
    if wrong or slow or behind:
        print(f"wrong: {wrong or 'none'}; slower than torch.compile: {slow or 'none'}; slower than the bar "
              f"(eager torch or the library op): {behind or 'none'}")
    return 1 if wrong or slow or behind else 0


if __name__ == "__main__":
    sys.exit(main())
