"""`python -m puzzles.classroom.worker`: grades one submission inside the sandbox (puzzles/classroom/isolation.py).

Started by the class grader with a JSON request on stdin (or forked, set up the same way, from
`python -m puzzles.classroom.worker --launcher`: puzzles/classroom/launcher.py). In order, before any submitted code
runs: apply the limits (and drop to its own user), import the grader, and say so; then load the
submission's definitions and grade each puzzle, reporting one JSON line per step on the channel
it was started with (what the submission prints goes to a log instead).

The load rules (puzzles/submissions/load_rules.py) leave the submission no code of its own to run here while
it loads, and none behind attribute access (no class), only its kernels (checked before they run)
and the lambdas Triton calls, under the same rules. This process is still not trusted once the
submission is loaded: its verdicts are claims. With each
verdict it returns the evidence, every output the kernel produced and the size, seed and index
of the inputs it was given, so that the grader, in its own process, rebuilds those inputs and
compares the outputs itself (puzzles/classroom/roster.py). The outputs are taken by an observer on the
grading job (`evidence_keeper`, test()'s `observe`) before anything judges them; the kernel's own run is
a forked child that holds no handle to the report channel (puzzles/running/child.py), and a graded
kernel's body is checked against an allowlist of resolved names before it runs (submissions/kernel_body.py).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

EVIDENCE_LIMIT = 1 << 22  # elements per output returned (the puzzles' sizes are far smaller)


def encode_tensor(tensor: Any) -> dict:
    array = tensor.detach().cpu().contiguous().numpy()
    return {"dtype": str(array.dtype), "shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode()}


WORKER_PID = 0  # set by main(): a worker forked from the launcher (launcher.py) is not the process that imported this


def _emit(channel: TextIO, event: str, **fields: Any) -> None:
    if os.getpid() != WORKER_PID:  # a forked kernel run that unwound into this code (its parent died)
        os._exit(70)
    channel.write(json.dumps({"event": event, **fields}, default=str) + "\n")
    channel.flush()


def evidence_keeper(store: list[dict]) -> Callable[[list, list], None]:
    """test()'s observer (`observe`): keep every (size, seed, index, output) a launch produced, raw, before
    anything judges it; the grader compares them with the spec itself (puzzles/classroom/roster.py)."""

    def keep(cases: list, runs: list) -> None:
        for index, (case, run) in enumerate(zip(cases, runs, strict=False)):
            if run.output is not None and run.output.numel() <= EVIDENCE_LIMIT:
                store.append({"sizes": dict(case.sizes), "seed": case.seed, "index": index,
                              "output": encode_tensor(run.output)})

    return keep


def _start_compilers(uid: int | None) -> None:
    """Start the compile check's processes before this one becomes its own user: that user may not
    be able to run the grader's Python at all (a Python under /root). They load the compiler, then
    become that user too before they read any request (puzzles/running/compile_check/worker.py)."""
    from puzzles.running import compile_check

    if uid is not None:
        os.environ[compile_check.USER_VARIABLE] = str(uid)
    compile_check.warm_up(("front", "full"))  # both now: the verdicts cache is not read here, each kernel compiles


def main() -> int:
    global WORKER_PID
    WORKER_PID = os.getpid()
    request = json.loads(sys.stdin.read())
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the submission's prints go to the log, never to the report channel
    sys.stdout = sys.stderr
    from puzzles.classroom.isolation import Limits, apply_limits

    limits = Limits(**request["limits"])
    from puzzles.course import catalog
    from puzzles.course.solution_source import preload_starters

    # What grading reads of the references (starters, signatures), read now: hidden, or out of the
    # user's reach, once the limits are applied (isolation.hide_references).
    preload_starters([catalog.get(n) for n in request["puzzles"]])
    protections = apply_limits(limits, Path.cwd(), lambda: _start_compilers(limits.uid))
    _emit(channel, "started", active=protections.active, missing=protections.missing)

    from puzzles.running.compile_check import settings
    from puzzles.submissions import grade

    settings.READ_CACHE = False  # what a kernel wrote into the folder's cache never answers for another
    # Sizes other than the catalog's where the grader asks for them (Gradescope's hidden sizes: hidden_sizes.py).
    sizes = request.get("sizes") or {}
    puzzles = [dataclasses.replace(catalog.get(n), sizes=tuple(sizes[str(n)])) if str(n) in sizes else catalog.get(n)
               for n in request["puzzles"]]
    evidence: list[dict] = []
    keep = evidence_keeper(evidence)
    _emit(channel, "ready")
    submission = grade.collect([Path(f) for f in request["files"]], puzzles)
    _emit(channel, "loaded", problems=submission.problems)
    for p in puzzles:
        evidence.clear()
        try:
            modelled = bool(request.get("speed")) and request.get("speed_source") == "model"
            g = grade.grade_puzzle(submission, p, timeout=request["timeout"], seed=request["seed"],
                                   perf=bool(request.get("speed")) and not modelled, observe=keep,
                                   efficiency=True if modelled else None, isolate=True)
        except Exception as err:  # noqa: BLE001 - the submission may have broken the harness itself
            _emit(channel, "puzzle", number=p.number, status="failed", seconds=0.0, source="",
                  reason=f"grading raised {type(err).__name__}: {err}", evidence=[])
            continue
        report = getattr(g.result, "perf", None) or (getattr(g.result, "efficiency", None) if modelled else None)
        _emit(channel, "puzzle", number=p.number, status=g.status, reason=g.reason, seconds=g.seconds,
              source=g.source, evidence=list(evidence), speed=report.record() if report is not None else None)
    _emit(channel, "done", problems=submission.problems[-20:])
    channel.close()
    os._exit(0)  # skip whatever exit handlers the submission registered


def serve_as_launcher() -> None:
    """`--launcher`: import what a worker imports before it reads its request, then fork a worker per
    request of the grader (puzzles/classroom/launcher.py). Nothing imported here starts a thread."""
    import puzzles.classroom.isolation
    import puzzles.course.catalog
    import puzzles.running.compile_check  # noqa: F401
    from puzzles.running import fork_server

    fork_server.serve(main)


if __name__ == "__main__":
    if sys.argv[1:] == ["--launcher"]:
        serve_as_launcher()
    else:
        sys.exit(main())
