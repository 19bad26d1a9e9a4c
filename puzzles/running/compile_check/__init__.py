"""Would this kernel compile for a real GPU? Checked ahead of time on a machine without one.

Triton's interpreter runs Python that its GPU compiler rejects (`tl.arange(j, j + B)` with a
start that is not a constant, a `lambda`, a nested `def`, a loop variable that changes type, a
global that is not `tl.constexpr`), so a kernel graded "passed" on a CPU could fail on the
learner's first GPU. Triton compiles for a GPU target without a GPU, so `test()` also compiles
the kernel for sm_80 and sm_90 (and sm_75, Colab's free T4, where the puzzle allows it):

- the front end (Python to Triton IR to GPU IR) at every tested size: this is where the
  interpreter-only constructs fail, and it is cheap;
- the whole compile (down to a cubin, through ptxas) at the canonical size, per target, which
  also tells the shared memory and the register spills the kernel would need. It specializes as a
  launch does (pointers 16-byte aligned, integers that are multiples of 16 marked so, an integer 1
  a constant) and keeps the listings (TTIR, TTGIR, PTX, SASS) beside its verdict, for
  `puzzles.compiled()` and for a puzzle graded on its compiled code (`Puzzle.compiled_rule`, whose
  target's full compile a grading then waits for, on a GPU too).

The compiler runs in worker processes: `import puzzles` turned on the interpreter in this one
(every `@triton.jit` here, Triton's own `tl.sum` included, is an interpreted function), and the
interpreter patches `triton.language` while it runs. The workers start with the compiler on,
rebuild the learner's functions from their source (at their own file and lines, so an error names
the learner's line) and compile beside the interpreted run, on the other core: one does the front
ends, one (at a lower CPU priority) the full compiles, so a slow full compile never holds up the
next cell. `import puzzles` starts the front end's, so the compiler is loaded before the first grading cell;
the full compiles' starts with the first full compile the cache cannot answer (the class grader's worker
starts both before it becomes its job's user).

No verdict is no pass: a size the compiler's process never answered (it stopped, or its front end
ran past FRONT_WAIT), or could not rebuild the kernel for, fails, and so does a kernel the check
cannot begin on under `grade`. A kernel that compiles but asks whether it is interpreted is the
harness's to fail (puzzles/grading/operations.py): the compiler folds such a branch away.

Verdicts are cached on disk (~/.cache/triton-puzzles/compile), keyed by the functions' source,
the globals they read, the argument types and the target: a re-run costs nothing.
Switch it off with PUZZLES_COMPILE_CHECK=0 or `test(..., compile_check=False)`.

By job: settings.py (targets, time budget, cache place, on/off), checking.py (describe the kernel
and its calls, answer from the cache, collect the verdicts: `start`, `Check`), verdict.py (fold them
into the grader's result: `begin`, `fold`), pool.py (the compiler processes seen from the grader),
listings.py (a full compile's listing as puzzles.compiled() shows it: puzzles/running/compiled_code/),
and, in the compiler process, worker.py (run as a script: rebuild, front end, full compile) with
messages.py (what a compile error means, hints for the interpreter-only constructs). worker.py and
messages.py import only the standard library: the compiler process must not import torch or
`puzzles` (which would turn the interpreter on again).
"""

from puzzles.running.compile_check.checking import Check, CompileProblem, CompileReport, describe_args, start
from puzzles.running.compile_check.pool import WORKERS, Worker, start_worker_and_wait, wait_idle, warm_up, worker_for
from puzzles.running.compile_check.settings import (
    ALWAYS_TARGETS,
    BUDGET,
    FRONT_WAIT,
    FULL_GRACE,
    T4,
    USER_VARIABLE,
    VERSION,
    cache_dir,
    enabled,
    targets_for,
)
from puzzles.running.compile_check.verdict import begin, fold, merge_pending_notes, pending_note

__all__ = [
    "ALWAYS_TARGETS", "BUDGET", "FRONT_WAIT", "FULL_GRACE", "T4", "VERSION", "WORKERS", "Check", "CompileProblem",
    "CompileReport", "Worker", "begin", "cache_dir", "describe_args", "enabled", "fold", "merge_pending_notes",
    "pending_note", "start",
    "start_worker_and_wait", "targets_for", "USER_VARIABLE", "wait_idle", "warm_up", "worker_for",
]
