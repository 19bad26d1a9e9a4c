"""What one Gradescope submission costs: the memory and the time of grading every reference kernel
(solutions/pNN_*.py, all 28 puzzles) as one submission, with the autograder zip the course builds.

    taskset -c 0 python benchmarks/gradescope_submission.py [--cpus 0] [--hidden-sizes 2] [--memory 6]
                                                            [--out benchmarks/results/gradescope_submission.md]

Builds the zip (`python -m puzzles gradescope`, every puzzle, hidden sizes as by default), unpacks it as
Gradescope does into a temporary root (this Python's environment standing in for setup.sh's .venv),
puts the references in submission/ and runs run_autograder, pinned to the CPUs given (`taskset`; one CPU
by default, a Gradescope container's share is about that). It samples, five times a second, the resident
memory of run_autograder's whole process tree (the grader, its sandboxed workers, the compile check's
processes; proportional set size, so that pages a forked worker shares with its launcher count once) and
reports the peak of that sum, the wall time and the score. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def proportional_bytes(pid: int) -> int:
    """A process's proportional resident memory (Pss: a page shared by n processes counts 1/n in each, as a
    container's memory limit counts it once); its resident size where smaps_rollup cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_memory(root_pid: int) -> tuple[int, int]:
    """(proportional, resident) bytes of a process and all its descendants, read from /proc. The resident sum
    counts the pages a forked worker shares with its launcher (torch, the grader) once per process."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    members, changed = {root_pid}, True
    while changed:
        more = {pid for pid, parent in parents.items() if parent in members} - members
        changed = bool(more)
        members |= more
    resident = 0
    for pid in members:
        try:
            resident += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return sum(proportional_bytes(pid) for pid in members), resident


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", default="0", help="taskset's CPU list for run_autograder (default: 0, one CPU)")
    parser.add_argument("--hidden-sizes", default="2", help="hidden sizes per puzzle in the zip (default 2)")
    parser.add_argument("--memory", default="6", help="the zip's --memory, GiB (default 6, the build's default)")
    parser.add_argument("--out", type=Path, help="also write the result as a Markdown table here")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gradescope-bench-"))
    base.chmod(0o755)  # the sandboxed worker, a user of its own, imports the course from here
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "puzzles", "gradescope", "--out", str(base / "autograder.zip"),
                        "--hidden-sizes", args.hidden_sizes, "--hidden-seed", "1", "--memory", args.memory], check=True,
                       env=env, cwd=ROOT)
        source, root = base / "source", base / "root"
        shutil.unpack_archive(base / "autograder.zip", source)
        (source / "run_autograder").chmod(0o755)
        (source / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
        (root / "submission").mkdir(parents=True)
        (root / "source").symlink_to(source, target_is_directory=True)
        references = sorted(p for p in (ROOT / "solutions").glob("p[0-9][0-9]_*.py") if not p.stem.endswith("_fast"))
        for path in references:
            shutil.copy(path, root / "submission" / path.name)
        run_env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        run_env["AUTOGRADER_ROOT"] = str(root)
        command = ["taskset", "-c", args.cpus, str(source / "run_autograder")]
        started = time.perf_counter()
        proc = subprocess.Popen(command, env=run_env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        peak = peak_resident = 0
        while proc.poll() is None:
            proportional, resident = tree_memory(proc.pid)
            peak, peak_resident = max(peak, proportional), max(peak_resident, resident)
            time.sleep(0.2)
        seconds = time.perf_counter() - started
        log = proc.stdout.read() if proc.stdout else ""
        results = json.loads((root / "results" / "results.json").read_text())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    total = sum(t["max_score"] for t in results["tests"])
    line = (f"{len(references)} reference files, {len(results['tests'])} tests: {results['score']:g} of {total:g} "
            f"points; wall {seconds:.0f} s ({seconds / 60:.1f} min) on CPUs {args.cpus}; peak memory of the process "
            f"tree {peak / 2**20:.0f} MiB proportional (Pss; {peak_resident / 2**20:.0f} MiB summing each process's "
            "resident size, shared pages counted in each)")
    print(log[-2000:])
    print(line)
    if args.out:
        args.out.write_text(
            "# One Gradescope submission: every reference kernel\n\n"
            f"`taskset -c {args.cpus} python benchmarks/gradescope_submission.py --cpus {args.cpus} "
            f"--hidden-sizes {args.hidden_sizes} --memory {args.memory}` on {platform.node()} "
            f"({os.cpu_count()} CPUs, {platform.machine()}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n{line}\n")
    return 0 if results["extra_data"].get("graded") else 1


if __name__ == "__main__":
    sys.exit(main())
