"""A pytest plugin that shows where the suite's time goes, per worker and per file, in the order each worker ran
them (which file ran alone at the end, which long files ran together).

    PYTHONPATH=scripts .venv/bin/python -m pytest -n 2 --dist loadfile -p pytest_timeline

Each worker appends "<time> <CPU seconds> start|end <test id>" lines to PYTEST_TIMELINE_DIR/<worker>.log (default:
/tmp/pytest-timeline, emptied when the run starts); at the end the controller prints each worker's span and its
files' seconds.
"""

from __future__ import annotations

import collections
import os
import shutil
import time
from pathlib import Path

import pytest

FOLDER = Path(os.environ.get("PYTEST_TIMELINE_DIR", "/tmp/pytest-timeline"))
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
recording = True  # False in xdist's controller: it hears every worker's tests again


def pytest_configure(config: pytest.Config) -> None:
    global recording
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller, or a run without workers
        shutil.rmtree(FOLDER, ignore_errors=True)
        recording = not getattr(config.option, "numprocesses", None)
    FOLDER.mkdir(parents=True, exist_ok=True)


def _write(kind: str, nodeid: str) -> None:
    if not recording:
        return
    with (FOLDER / f"{WORKER}.log").open("a") as log:
        log.write(f"{time.time():.2f} {_cpu_seconds():.2f} {kind} {nodeid}\n")


def _cpu_seconds() -> float:
    """This worker's CPU time and that of the children it has waited for (notebook kernels, CLI runs, graders'
    workers): a test that runs processes of its own costs more of the machine than its wall time says."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    _write("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    _write("end", nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for log in sorted(FOLDER.glob("*.log")):
        lines = [line.split(" ", 3) for line in log.read_text().splitlines()]
        if not lines:
            continue
        started: dict[str, tuple[float, float]] = {}
        seconds: dict[str, list[float]] = collections.OrderedDict()
        for stamp, cpu, kind, nodeid in lines:
            if kind == "start":
                started[nodeid] = (float(stamp), float(cpu))
            elif nodeid in started:
                name = nodeid.split("::")[0].rsplit("/", 1)[-1]
                spent = seconds.setdefault(name, [0.0, 0.0])
                spent[0] += float(stamp) - started[nodeid][0]
                spent[1] += float(cpu) - started[nodeid][1]
        span = float(lines[-1][0]) - float(lines[0][0])
        files = ", ".join(f"{name} {wall:.0f} ({cpu:.0f} CPU)" for name, (wall, cpu) in seconds.items())
        busy = sum(wall for wall, _ in seconds.values())
        cpu = sum(cpu for _, cpu in seconds.values())
        terminalreporter.write_line(f"timeline {log.stem}: {span:.0f} s, {busy:.0f} s in tests ({cpu:.0f} s of CPU): "
                                    f"{files}")
