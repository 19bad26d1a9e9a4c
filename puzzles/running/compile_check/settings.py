"""The compile check's settings: which targets, how long a grading cell waits, where verdicts are
cached, and whether the check runs at all (see puzzles/running/compile_check/__init__.py)."""

from __future__ import annotations

import os
from pathlib import Path

VERSION = 18  # bump when what the worker checks changes (invalidates the cache)
ALWAYS_TARGETS = (80, 90)  # A100 and H100 class
T4 = 75  # Colab's free tier, where the puzzle allows it
BUDGET = 1.0  # seconds a grading cell may take, compile check included
# How long a cell waits for the full compile once the interpreted run and the front end are done
# (within BUDGET): it rarely fails where the front end passed, its notes show on the next run, and
# a learner should not wait for it on every edit. `grade` waits for all of it.
FULL_GRACE = 0.1
FRONT_WAIT = 60.0  # the front end is always waited for: it is where the real failures are
FULL_WAIT = 3600.0  # `grade` waits this long for the full compiles (a minute for huge blocks)
# Answer from the verdicts cached on disk. The class grader's worker turns it off before it loads a
# submission: a kernel runs as Python there (in a child of the worker), and could write a verdict
# of "compiles" into the cache for a kernel graded after it.
READ_CACHE = True
# The user a compiler process becomes once it has loaded the compiler, before it reads any request
# (the class grader's worker starts them while it may still run the grader's Python: see grade_worker.py).
USER_VARIABLE = "PUZZLES_COMPILE_WORKER_UID"


def enabled(flag: bool | str | None = None) -> bool:
    """On unless switched off; never on a GPU (there the kernel is really compiled)."""
    if flag is False or os.environ.get("PUZZLES_COMPILE_CHECK", "1").lower() in ("0", "false", "off", "no"):
        return False
    return os.environ.get("TRITON_INTERPRET", "0") == "1" or not has_gpu()


def has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


def targets_for(min_sm: int = T4) -> tuple[int, ...]:
    """The GPU targets a kernel is compiled for: sm_80 and sm_90, and the T4 where the puzzle allows it; sm_90 alone
    for a kernel whose API Triton compiles only for Hopper (min_sm 90) or a puzzle needing sm_89 (32: fp8 tl.dot)."""
    return tuple(sorted({*(t for t in ALWAYS_TARGETS if t >= min_sm), *([T4] if min_sm <= T4 else [])}))


def cache_dir() -> Path:
    """Where verdicts are cached (PUZZLES_COMPILE_CACHE, or ~/.cache/triton-puzzles/compile)."""
    root = os.environ.get("PUZZLES_COMPILE_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-puzzles" / "compile"

