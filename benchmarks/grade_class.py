"""How long a class takes to grade, one student at a time against `--jobs 2` (CPU, interpreter).

    python benchmarks/grade_class.py [--students 8] [--puzzles 1 2 3 4] [--timeout 5]
                                     [--out benchmarks/results/grade_class.md]

Builds a synthetic class in a temporary folder (students with the reference kernels of the
puzzles, one with a wrong kernel, one with the starters), grades it with
`python -m puzzles grade CLASS/ --jobs N --seed 1` for each N, records the wall time of each run,
checks that the gradebooks agree (seconds aside), and writes a table with the command.
A benchmark, not a test: the times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from puzzles import catalog  # noqa: E402
from puzzles.course.solution_source import reference_source, starter_source  # noqa: E402

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"


def build(folder: Path, students: int, numbers: list[int]) -> None:
    puzzles = [catalog.get(n) for n in numbers]
    for i in range(students):
        if i == students - 1:
            text = "\n\n".join(starter_source(p) for p in puzzles)
        elif i == students - 2:  # a wrong constant in the first kernel
            text = "\n\n".join(reference_source(p) for p in puzzles).replace("10.0", "11.0", 1)
        else:
            text = "\n\n".join(reference_source(p) for p in puzzles)
        (folder / f"student{i:02d}").mkdir(parents=True)
        (folder / f"student{i:02d}" / "answers.py").write_text(HEADER + text)


def grade(folder: Path, out: Path, jobs: int, numbers: list[int], timeout: float) -> tuple[float, list[dict], str]:
    command = [sys.executable, "-m", "puzzles", "grade", str(folder), "--jobs", str(jobs), "--seed", "1",
               "--timeout", str(timeout), "--out", str(out)] + sum((["--puzzle", str(n)] for n in numbers), [])
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"grading failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    rows = [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader((out / "grades.csv").open())]
    return seconds, rows, " ".join(["python", "-m", "puzzles"] + command[3:])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--puzzles", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (the median is reported)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "grade_class.md")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="grade-class-bench-"))
    build(work / "class", args.students, args.puzzles)
    results = []
    times: dict[int, list[tuple[float, float, float]]] = {j: [] for j in args.jobs}
    books: dict[int, list[dict]] = {}
    commands: dict[int, str] = {}
    for _ in range(args.rounds):  # interleaved, so that other work on the machine weighs on both alike
        for jobs in args.jobs:
            load = os.getloadavg()[0]  # other work on the machine: the speed-up needs idle cores
            cpu_before = _children_cpu()
            seconds, rows, command = grade(work / "class", work / f"book{jobs}", jobs, args.puzzles, args.timeout)
            times[jobs].append((seconds, _children_cpu() - cpu_before, load))
            books[jobs], commands[jobs] = rows, command
            print(f"--jobs {jobs}: {seconds:.1f} s (load {load:.1f})", flush=True)
    for jobs in args.jobs:
        runs = sorted(times[jobs])
        seconds, cpu, load = runs[len(runs) // 2]
        results.append((jobs, seconds, books[jobs], commands[jobs], load, cpu, [r[0] for r in times[jobs]]))
    same = all(r[2] == results[0][2] for r in results)
    lines = [
        "# Grading a class: --jobs 1 against --jobs 2",
        "",
        f"`python benchmarks/grade_class.py --students {args.students} --puzzles "
        f"{' '.join(map(str, args.puzzles))} --timeout {args.timeout:g}` on {platform.node() or 'this machine'} "
        f"({os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"A synthetic class of {args.students} students, puzzles {', '.join(map(str, args.puzzles))}: "
        f"{args.students - 2} with the references, one wrong kernel, one with the starters. Each student in its "
        "own sandboxed worker (a fresh Python that imports torch and Triton, with empty compile caches).",
        "",
        f"Median of {args.rounds} interleaved rounds (the upper one for an even count); CPU is the user + system "
        "time of the processes the run waited for (the grader, its workers and their kernel processes; not the "
        "compile workers a killed worker leaves to init).",
        "",
        "| jobs | wall time (s), median | every round (s) | per student (s) | speed-up | CPU (s) | load before |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for jobs, seconds, _, _, load, cpu, every in results:
        lines.append(f"| {jobs} | {seconds:.1f} | {', '.join(f'{t:.1f}' for t in every)} | "
                     f"{seconds / args.students:.2f} | {results[0][1] / seconds:.2f}x | {cpu:.0f} | {load:.1f} |")
    busiest = max(r[4] for r in results)
    if busiest > (os.cpu_count() or 1):
        lines += ["", f"The machine was shared with other work during these runs (load average up to {busiest:.1f} "
                  f"on {os.cpu_count()} cores): the absolute times are inflated, and vary from round to round."]
    lines += ["", f"Gradebooks identical across runs (seconds aside): {'yes' if same else 'NO'}.", "",
              "Commands:", ""] + [f"    {r[3]}" for r in results]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
