"""The compile check folded into the grader's verdict: started before the interpreted run, its
failures then fail the sizes the interpreter passed (puzzles/grading calls `begin` and `fold`, and
builds its verdict from what `fold` returns)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from puzzles.running.compile_check.checking import Check, CompileProblem, start
from puzzles.running.compile_check.settings import ALWAYS_TARGETS, BUDGET, FULL_GRACE, T4, enabled

# TF32 keeps 10 bits of mantissa (a relative rounding of 2^-11 per product): puzzles whose tolerance is
# at least this allow it (the matmul puzzles, whose references use tl.dot on a GPU's tensor cores).
TF32_TOLERANCE = 1e-3


@dataclass
class NotStarted:
    """`grade` asked for the check and it could not begin: no size of the kernel passes unchecked."""

    why: str


class CompileJob(Protocol):
    """What the check reads of a grading job (puzzles/grading/job.py's `GradingJob`, a layer above this one):
    the kernel's handle, the puzzle, test()'s compile_check flag (True, False or "full") and the verdict's title."""

    @property
    def handle(self) -> Any: ...

    @property
    def puzzle(self) -> Any: ...

    @property
    def compile_check(self) -> bool | str: ...

    @property
    def title(self) -> str: ...


def begin(job: CompileJob, args_for: Any, cases: list[Any]) -> Check | NotStarted | None:
    """The harness's hook, before the interpreted run: start checking at every case's size. When it
    cannot, a notebook's cell goes on without it; `grade` (flag "full") fails the kernel instead. A puzzle
    graded on its compiled code (Puzzle.compiled_rule) gets that compile where the check is off (on a GPU,
    or switched off) too."""
    kernel, puzzle, flag = job.handle, job.puzzle, job.compile_check
    rule = getattr(puzzle, "compiled_rule", None)
    if not enabled(flag) and rule is None:
        return None
    try:
        min_sm = getattr(job, "compile_min_sm", getattr(puzzle, "min_sm", T4))  # a job of grading/job.py's
        check = start(kernel, [args_for(case) for case in cases], min_sm,
                      tuple(getattr(puzzle, "forbidden_calls", ())), getattr(puzzle, "rtol", 0.0) < TF32_TOLERANCE,
                      rule, rule_only=not enabled(flag))
        why = "its source, the globals it reads or its arguments cannot be described to the compiler"
    except Exception as err:  # noqa: BLE001 - the check must never break grading
        check, why = None, f"{type(err).__name__}: {err}"
    return NotStarted(why) if check is None and (flag == "full" or rule is not None) else check


def fold(check: Check | NotStarted | None, outcomes: list[Any], job: CompileJob, started: float) -> list[str]:
    """The check's word on the interpreted sizes: a compile failure fails (in `outcomes`) the sizes the
    interpreter passed; returns the notes for the verdict."""
    title, flag = job.title, job.compile_check
    notes: list[str] = []
    if check is None:
        return notes
    if isinstance(check, NotStarted):
        from puzzles.running.errors import KernelError

        error = KernelError("compile", f"could not be checked for a GPU: {check.why}")
        for outcome in outcomes:
            _fail_if_passed(outcome, error)
        return notes
    import linecache

    def where_of(target: int) -> str:
        return "a GPU" if target in ALWAYS_TARGETS else f"sm_{target} (Colab's T4)"

    from puzzles.running.errors import KernelError

    report = check.report(True if flag == "full" else 0.0)  # the front end, always
    if flag != "full" and report.pending:
        report = check.report(min(FULL_GRACE, max(0.0, BUDGET - (time.perf_counter() - started))))
    errors: dict[tuple[str, int | None], KernelError] = {}
    unplaced: list[str] = []
    # One wording per distinct error: the GPU targets of every course first, then the T4.
    for problem in sorted(report.problems, key=lambda p: (p.target not in ALWAYS_TARGETS, p.sizes)):
        key = (problem.message, problem.line)
        if key not in errors:
            where = where_of(problem.target)
            source = linecache.getline(problem.filename, problem.line) if problem.filename and problem.line else ""
            if problem.rule or problem.compiled_rule:  # the message reads on from "Puzzle N"
                errors[key] = KernelError("rule", f"{str(title).split(':')[0]} {problem.message}",
                                          problem.line, source, problem.filename)
            else:
                errors[key] = KernelError("compile", f"runs in the interpreter but would not compile for {where}: "
                                          f"{problem.message}", problem.line, source, problem.filename)
        for index in problem.sizes:
            if index < len(outcomes):
                fail_outcome(outcomes[index], problem, errors[key], where_of(problem.target), unplaced)
    for unchecked in report.unchecked:  # no verdict is no pass: the interpreter accepts what a GPU may not
        error = KernelError("compile", f"could not be checked for {where_of(unchecked.target)}: {unchecked.why}")
        for index in unchecked.sizes:
            if index < len(outcomes):
                _fail_if_passed(outcomes[index], error)
    notes += [n for n in unplaced if n not in notes]
    notes += [n for n in report.notes if n not in notes]
    # A verdict that fails already gets nothing from "still compiling": the learner re-runs anyway.
    if report.pending and not report.problems and all(o.status == "passed" for o in outcomes):
        notes.append(pending_note(report.pending))
    return notes


_PENDING = ("compiles for a GPU; the full compile for ", " is still running: a re-run shows its notes "
            "(`python -m puzzles grade` waits for it)")


def pending_note(targets: Iterable[str]) -> str:
    """The note of a pass whose full compile for `targets` goes on in the background."""
    return f"{_PENDING[0]}{', '.join(sorted(set(targets)))}{_PENDING[1]}"


def merge_pending_notes(notes: list[str]) -> list[str]:
    """One "still running" note for the targets of all of them (an autotuned kernel's verdict gathers one per
    config, each with the targets its own compile had left), where the first of them stood."""
    pending = [n for n in notes if n.startswith(_PENDING[0]) and n.endswith(_PENDING[1])]
    if len(pending) < 2:
        return notes
    targets = {t for n in pending for t in n[len(_PENDING[0]):-len(_PENDING[1])].split(", ")}
    first = notes.index(pending[0])
    kept = [n for n in notes if n not in pending]
    return kept[:first] + [pending_note(targets)] + kept[first:]


def fail_outcome(outcome: Any, problem: CompileProblem, error: Any, where: str, unplaced: list[str]) -> None:
    """A compile failure at one size: it fails a size the interpreter passed; where the interpreter
    failed too, its error stands (unless the compiler names a known interpreter-only construct, at or
    before the line where the interpreter went wrong), and so does evidence of wrong values, with the
    compiler's message as a note."""
    from puzzles.running.errors import KernelError

    if outcome.status == "compile error":
        return
    if problem.compiled_rule:  # graded on the compiled code: right values first, then their code
        if outcome.status == "passed":
            outcome.status, outcome.error, outcome.status_map = "error", error, None
        return
    if problem.rule:  # breaking the puzzle's rule fails every size, whatever the interpreter made of it
        outcome.status, outcome.error, outcome.status_map = "error", error, None
        return
    if outcome.status == "passed":
        _fail_if_passed(outcome, error)
    elif outcome.status == "error" and outcome.error is not None and problem.construct:
        # The interpreter failed too, on a construct only it accepts (a nested def): the compiler's
        # message, with what to write instead, replaces its (if it does not say the same).
        if problem.message.split(" (")[0] not in outcome.error.message:
            outcome.status, outcome.status_map = "compile error", None
            outcome.error = KernelError("compile", f"would not compile for {where}: "
                                        f"{problem.message}", error.line, error.source, error.filename)
    elif (problem.construct and problem.line is not None and outcome.status not in ("error", "timeout")
          and (failed_at := _failure_line(outcome)) is not None and problem.line < failed_at):
        # The interpreter ran past a construct only it accepts (an `if` on a block) and went wrong further
        # down: the construct comes first, what the interpreter then did second.
        then = _WENT.get(outcome.status, f"failed ({outcome.status})")
        outcome.status, outcome.status_map = "compile error", None
        outcome.error = KernelError("compile", f"would not compile for {where}: {problem.message} (the interpreter "
                                    f"ran on past it, which a GPU cannot, and {then} at line {failed_at})",
                                    error.line, error.source, error.filename)
    elif problem.construct and problem.line is not None and outcome.status == "unwritten":
        # The interpreter ran past a construct only it accepts (a kernel that returns its result) and left
        # output unwritten: "still the starter?" would send the learner the wrong way.
        total = math.prod(outcome.output_shape)
        left = ("nothing was written into the output" if outcome.unwritten_count == total
                else f"{outcome.unwritten_count} of {total} output elements were never written")
        outcome.status, outcome.status_map = "compile error", None
        outcome.error = KernelError("compile", f"would not compile for {where}: {problem.message} (the interpreter "
                                    f"ran on past it, which a GPU cannot, and {left})",
                                    error.line, error.source, error.filename)
    elif outcome.status == "error" and outcome.error is not None and (
            problem.message.split(" (")[0] in outcome.error.message
            or (problem.line is not None and problem.line == outcome.error.line)):
        pass  # the interpreter's error says it already, or stopped on the same line: fix that one first
    else:
        text = error.describe().replace("\n  ", " ")
        if outcome.status in ("error", "timeout"):  # it did not run to the end in the interpreter either
            text = text.replace(f"runs in the interpreter but would not compile for {where}:",
                                f"would not compile for {where} either:", 1)
        if text not in unplaced:
            unplaced.append(text)


def _fail_if_passed(outcome: Any, error: Any) -> None:
    """A size the interpreter passed fails with the check's `error` (what a GPU would make of it)."""
    if outcome.status == "passed":
        outcome.status, outcome.error, outcome.status_map = "compile error", error, None


_WENT = {"out of bounds": "went out of bounds", "store into input": "stored into an input", "race": "raced"}


def _failure_line(outcome: Any) -> int | None:
    """The kernel line where the interpreter's run at this size went wrong, where one is known: its error's,
    or its first access out of bounds."""
    if outcome.error is not None and outcome.error.line is not None:
        return outcome.error.line
    return next((access.line for access in outcome.invalid_accesses if access.line is not None), None)
