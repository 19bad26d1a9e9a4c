"""Where a run's CPU goes, by kind of process: samples /proc while something runs beside it (the suite), then
prints the CPU seconds of each kind (pytest workers and the kernels they fork, notebook kernels, the compile
check's compilers, the class grader's launcher and workers, command-line runs, ...).

    python3 scripts/cpu_by_process.py --seconds 1200 &   # then, beside it:
    PYTHONPATH=scripts .venv/bin/python -m pytest -n 2 --dist loadfile -p pytest_timeline

A process that ends between two samples loses what it spent since the last one (0.3 s apart); one that was
running when sampling began counts only what it spent after. The pytest timeline plugin (pytest_timeline.py)
gives each test file's wall time and the CPU of the worker and the children it waited for; this also sees
the processes no test waits for (the compilers, a launcher's forked workers)."""

from __future__ import annotations

import argparse
import collections
import os
import re
import time

KINDS = [  # (kind, words of its command line), first match wins
    ("compile check's compiler", "sys.path[:] = [p for p in sys.path if p not in"),
    ("notebook kernel", "ipykernel_launcher"),
    ("class grader: launcher and its forked workers", "puzzles.classroom.worker --launcher"),
    ("class grader: started worker", "puzzles.classroom.worker"),
    ("pytest worker (and the children it forks)", "exec(eval(sys.stdin.readline()))"),
    ("command line: python -m puzzles", "-m puzzles"),  # before pytest: its arguments name pytest's tmp_path
    ("pytest", "pytest"),
    ("GPU worker", "gpu_worker"),
    ("ptxas, nvdisasm", "nvidia/bin/"),
    ("chromium", "chrom"),
    ("jupyter", "jupyter"),
    ("other python", "python"),
]


# pytest's tmp_path and tempfile's folders differ in every run: folded so that one test's runs add up.
TEMPORARY = re.compile(r"/tmp/\S*")


def kind_of(command: str) -> str:
    return next((kind for kind, words in KINDS if words in command), "other")


def sample(seconds: float, period: float = 0.3) -> dict[tuple[int, int], list]:
    """(pid, start time) -> [command line, CPU seconds at first sight, at last sight]."""
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/uptime") as uptime:
        began = float(uptime.read().split()[0]) * ticks  # in clock ticks since boot, as a process's start time
    seen: dict[tuple[int, int], list] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name in os.listdir("/proc"):
            if not name.isdigit() or name == str(os.getpid()):
                continue
            try:
                with open(f"/proc/{name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                cpu = (int(fields[11]) + int(fields[12])) / ticks
                key = (int(name), int(fields[19]))
                if key not in seen:
                    with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                        command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
                    if not command:
                        continue  # a kernel thread
                    seen[key] = [command, cpu if key[1] < began else 0.0, cpu]  # a new one: all it spent
                else:
                    seen[key][2] = cpu
            except (OSError, IndexError, ValueError):
                continue  # gone since the listing
        time.sleep(period)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=900.0, help="how long to sample (default 900)")
    parser.add_argument("--commands", type=int, default=0, metavar="N",
                        help="also print the N command lines that spent the most (temporary paths folded)")
    args = parser.parse_args()
    seen = sample(args.seconds)
    spent: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for command, first, last in seen.values():
        spent[kind_of(command)] += last - first
        count[kind_of(command)] += 1
    print(f"{sum(spent.values()):8.0f} s of CPU in all, by kind of process:")
    for kind, cpu in spent.most_common():
        print(f"{cpu:8.0f} s  {count[kind]:5d} processes  {kind}")
    if args.commands:
        by_command: collections.Counter = collections.Counter()
        runs: collections.Counter = collections.Counter()
        for command, first, last in seen.values():
            folded = TEMPORARY.sub("TMP", command)[:160]
            by_command[folded] += last - first
            runs[folded] += 1
        print(f"the {args.commands} costliest command lines (CPU seconds, processes):")
        for command, cpu in by_command.most_common(args.commands):
            print(f"{cpu:8.1f} s  {runs[command]:5d}  {command}")


if __name__ == "__main__":
    main()
