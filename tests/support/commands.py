"""The course's command line run in the test's own process: `python -m puzzles ARGS` as `puzzles.__main__.main(ARGS)`,
its exit code and what it printed, in the shape `subprocess.run` gives. The tests of a command's output use it (as
pytest and nbgrader test theirs); a few tests start real processes where the start itself is what they check (a copy
outside the checkout, a Python without the course's packages, a class's sandboxed workers)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from puzzles.__main__ import main


def run_command(args: list[str], cwd: Path | str) -> subprocess.CompletedProcess:
    """`python -m puzzles *args` run from `cwd`, in this process."""
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:  # argparse's refusals, and commands that exit
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
                if isinstance(stop.code, str):
                    print(stop.code, file=err)
    finally:
        os.chdir(before)
    done = subprocess.CompletedProcess(["python", "-m", "puzzles", *args], code or 0, out.getvalue(), err.getvalue())
    done.pid = os.getpid()  # the grading command's process: a class's job users are derived from it
    return done


def run_python(args: list[str], cwd: Path | str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """A Python started as a learner's or a shell's would be (`python ARGS`): for the tests whose subject is the
    process itself (a copy outside the checkout, a broken module, triton-viz's patching)."""
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
