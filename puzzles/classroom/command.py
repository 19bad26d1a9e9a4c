"""`python -m puzzles grade` for a class: the roster, one student as a batch job, the merge."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from puzzles.classroom import gradebook
from puzzles.classroom.isolation import GIB, Limits, can_switch_user, job_uid
from puzzles.classroom.roster import (
    CLASS_TIMEOUT,
    Options,
    Student,
    all_puzzles,
    discover,
    grade_class,
    grade_student,
    submission_files,
)
from puzzles.course.puzzle import Puzzle
from puzzles.running.kernel import on_gpu
from puzzles.submissions.grade import Grade

GRADED, USAGE, GRADER_FAILED = 0, 2, 3


SPEED_FROM_MODEL = ("--speed without a CUDA GPU: speed points come from the efficiency model (each passing kernel's "
                    "recorded run, predicted on an H100 against the reference), not from timing; the gradebook says so")


def options_from(args: argparse.Namespace, timeout: float | None = None) -> Options:
    memory = int((6.0 if args.memory is None else args.memory) * GIB)
    speed = bool(getattr(args, "speed", False))
    source = "gpu" if on_gpu() else "model"
    if speed and source == "model":
        print(f"note: {SPEED_FROM_MODEL}", file=sys.stderr)
    return Options(timeout=timeout or args.timeout or CLASS_TIMEOUT, seed=args.seed,
                   limits=Limits(memory_bytes=memory), speed=speed, speed_source=source)


def main(args: argparse.Namespace) -> int:
    """Exit 0 when every student was graded (whatever their verdicts), 3 when the grader failed
    for some student (named in the output), 2 on a usage error."""
    try:
        puzzles = all_puzzles(args.puzzle)
    except KeyError as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return USAGE
    if args.merge:
        if not args.out:
            print("error: --merge needs --out DIR (where the gradebook goes)", file=sys.stderr)
            return USAGE
        try:
            results = gradebook.merge([Path(p) for p in args.paths])
        except (OSError, ValueError, KeyError) as err:
            print(f"error: cannot merge: {err}", file=sys.stderr)
            return GRADER_FAILED
        return _finish(results, args)
    options = options_from(args)
    if args.student:
        if not args.student.is_dir():
            print(f"error: no such folder: {args.student}", file=sys.stderr)
            return USAGE
        student = Student(args.student.name, submission_files(args.student))
        seed = options.seed if options.seed is not None else 0
        uid = job_uid(0) if can_switch_user() else None
        result = grade_student(student, puzzles, options, seed, uid)
        out = args.out or Path(f"{gradebook.safe_name(student.name)}.json")
        gradebook.write_student(result, out)
        print(f"{student.name}: wrote {out}")
        if result.grader_error:
            print(f"grader error: {result.grader_error}", file=sys.stderr)
        return GRADER_FAILED if result.grader_error else GRADED
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"error: no such file or directory: {missing[0]}", file=sys.stderr)
        return USAGE
    students = discover([Path(p) for p in args.paths], per_file=args.per_file)
    if not students:
        print("error: no students found", file=sys.stderr)
        return USAGE
    jobs = args.jobs
    timed = options.speed and options.speed_source == "gpu"
    if timed and jobs is None:
        jobs = 1  # students timed at once would share the GPU, and each other's time
    elif timed and jobs > 1:
        print(f"note: --speed with --jobs {jobs}: students graded at once share the GPU, so their times are slower "
              "than alone", file=sys.stderr)
    results = grade_class(students, puzzles, options, jobs=jobs)
    return _finish(results, args)


def _finish(results: list, args: argparse.Namespace) -> int:
    if args.out:
        table = gradebook.write_gradebook(results, args.out)
        print(f"wrote {table}, {args.out / 'students'}/, {args.out / 'feedback'}/", file=sys.stderr)
    if args.json:
        for result in results:
            print(json.dumps(gradebook.student_record(result)))
    else:
        print(gradebook.summary(results))
    failed = [r.student for r in results if r.grader_error]
    if failed:
        print(f"the grader failed for {len(failed)} student(s): {', '.join(failed)}", file=sys.stderr)
    return GRADER_FAILED if failed else GRADED


def isolated_grades(paths: list[Path], puzzles: list[Puzzle], args: argparse.Namespace, timeout: float,
                    ) -> list[Grade]:
    """One learner's files graded in a sandboxed process, as the scoreboard's grades."""
    options = options_from(args, timeout)
    seed = options.seed if options.seed is not None else 0
    result = grade_student(Student("you", paths), puzzles, options, seed,
                           job_uid(0) if can_switch_user() else None)
    if result.grader_error:
        print(f"error: the grader failed: {result.grader_error}", file=sys.stderr)
    by_number = {v.number: v for v in result.verdicts}
    grades = []
    for p in puzzles:
        v = by_number.get(p.number)
        grades.append(Grade(p, v.status, v.message, v.source, v.seconds, seed=seed) if v else
                      Grade(p, "failed", result.grader_error or "not graded"))
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return grades
