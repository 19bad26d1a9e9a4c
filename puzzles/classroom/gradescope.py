"""Gradescope's autograder, the grading side: what `run_autograder` runs for each submission.

    python -m puzzles.classroom.gradescope [--root /autograder]

Gradescope unpacks the zip that `python -m puzzles gradescope` builds (gradescope_build.py) into
`ROOT/source`, puts the student's files in `ROOT/submission` and shows `ROOT/results/results.json`.
The submission is graded exactly as one student of the roster mode is (roster.grade_student: a
sandboxed worker, the load rules, verdicts checked by this process); this module adds only the
results in Gradescope's format (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
one test per puzzle with its points and the verdict as its output (with `--speed` on a GPU, one more
per puzzle with a speed goal: its speed points, gradebook.speed_points), the seed, the total score,
and the visibility the instructor chose when building the zip.

A submission that cannot be read (no notebook or .py file, or a file that is not one) and a
grader that fails are never reported as a grade: the results say "not graded" and why, in the
output the student sees, with `extra_data.graded` false. The score field is still 0 there, since
Gradescope's format needs a number. `run_autograder` writes such a file itself when this program
cannot even start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: a broken torch must still give results that say so
    from puzzles.classroom.roster import StudentResult

ROOT_VARIABLE = "AUTOGRADER_ROOT"  # where Gradescope's folders are (default /autograder): a test sets it
CONFIG_NAME = "gradescope.json"  # written into the zip by gradescope_build.py
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
MAX_FILE_BYTES = 50 << 20  # a submitted file larger than this is not read by the grader's own process


@dataclass
class AutograderConfig:
    """What the instructor chose when building the zip (written as gradescope.json beside the course)."""

    puzzles: list[int]
    points: dict[int, float]  # puzzle number -> its points
    timeout: float = 5.0  # seconds per size, as for a class
    memory_gib: float = 6.0  # resident memory of the submission's grading processes (0: no limit)
    seed: int | None = None  # None: a fresh seed per submission, shown in the results
    speed: bool = False  # also speed points (gradebook.speed_points), where the container has a CUDA GPU
    visibility: str = "visible"  # of the results and of every test (Gradescope's values)
    stdout_visibility: str = "hidden"  # the grader's own log (Gradescope's "Autograder Output" box)
    course: dict = field(default_factory=dict)  # the course's version and commit the zip holds

    def to_json(self) -> str:
        record = asdict(self)
        record["points"] = {str(k): v for k, v in self.points.items()}
        return json.dumps(record, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> AutograderConfig:
        record = json.loads(text)
        record["points"] = {int(k): float(v) for k, v in record["points"].items()}
        return cls(**record)

    @property
    def total(self) -> float:
        return sum(self.points[n] for n in self.puzzles)


def course_label(course: dict) -> str:
    words = f"triton-puzzles-course {course.get('version', '?')}"
    if course.get("commit"):
        words += f" at commit {course['commit'][:12]}" + (" with local changes" if course.get("dirty") else "")
    return words


# -- the results ---------------------------------------------------------------------------------

def not_graded(reason: str, config: AutograderConfig, seconds: float = 0.0) -> dict:
    """Results that say the submission was not graded and why: one failing entry worth no points,
    the reason in the output the student sees, `extra_data.graded` false."""
    words = (f"NOT GRADED: {reason}\n\nNothing was graded, so the 0 shown is not a grade. "
             "Fix what is named above and submit again; if it names the grader, tell your instructor.")
    return {
        "score": 0.0,
        "execution_time": int(seconds),
        "output": words,
        "output_format": "text",
        "visibility": config.visibility,
        "stdout_visibility": config.stdout_visibility,
        "tests": [{"name": "Submission not graded", "score": 0.0, "max_score": 0.0, "status": "failed",
                   "output": words, "output_format": "text", "visibility": config.visibility}],
        "extra_data": {"graded": False, "reason": reason, "course": config.course},
    }


def graded(result: StudentResult, config: AutograderConfig, submission: Path) -> dict:
    """Results for a graded submission: one test per puzzle."""
    from puzzles.classroom.gradebook import speed_points
    from puzzles.classroom.roster import PuzzleVerdict
    from puzzles.course import catalog

    def relative(text: str) -> str:  # the student's own file names, not the container's paths
        return text.replace(f"{submission}/", "")

    by_number = {v.number: v for v in result.verdicts}
    tests = []
    for number in config.puzzles:
        p, points = catalog.get(number), config.points[number]
        verdict = by_number.get(number) or PuzzleVerdict(number, "failed", "the grading process gave no verdict")
        status, message = verdict.status, relative(verdict.message)
        if status == "passed":
            output = f"passed at every size (seed {result.seed})"
        elif status == "not attempted":
            output = f"not attempted: {message}" if message else "not attempted"
        else:
            output = f"{message}\n\nreproduce it in the notebook: test(..., seed={result.seed})"
        if verdict.source:
            output += f"\ngraded: {relative(verdict.source)}"
        name = f"Puzzle {p.number:02d}: {p.title} ({p.kernel_name})"
        tests.append({"name": name, "number": str(p.number), "score": points if status == "passed" else 0.0,
                      "max_score": points, "status": "passed" if status == "passed" else "failed",
                      "output": output, "output_format": "text", "visibility": config.visibility})
        earned, most = speed_points(verdict, points) if result.speed else (0.0, 0.0)
        if most:  # timed on a GPU against the puzzle's speed goal (a claim of the sandboxed worker)
            line = (verdict.speed or {}).get("line") or ("not timed: it did not pass" if status != "passed"
                                                         else "not timed")
            tests.append({"name": f"{name}: speed", "number": f"{p.number}.s", "score": earned, "max_score": most,
                          "status": "passed" if earned == most else "failed", "output": line, "output_format": "text",
                          "visibility": config.visibility})
    score, total = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
    lines = [f"{score:g} of {total:g} points, seed {result.seed} (`test(..., seed={result.seed})` "
             "reproduces each verdict in your notebook).", f"Graded by {course_label(config.course)}."]
    if config.speed and not result.speed:
        lines.append("Speed was not graded: this autograder's machine has no CUDA GPU (correctness points only).")
    if result.problems:
        lines += ["", "While loading your files:"] + [f" - {relative(p)}" for p in result.problems]
    return {
        "score": score,
        "execution_time": int(result.seconds),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": config.visibility,
        "stdout_visibility": config.stdout_visibility,
        "tests": tests,
        "extra_data": {"graded": True, "seed": result.seed, "course": config.course, "speed": result.speed,
                       "protections": result.protections, "missing_protections": result.missing_protections},
    }


# -- one submission --------------------------------------------------------------------------------

def unreadable(files: list[Path]) -> list[str]:
    """The submitted files that are not a readable notebook or Python file, with why: read here
    as text or JSON only (nothing in them runs in this process)."""
    from puzzles.cli.grade import code_cells

    problems = []
    for path in files:
        if path.is_symlink():  # never followed (roster.grade_student says why it is not graded)
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES >> 20} MB")
            code_cells(path)
        except (OSError, ValueError, UnicodeDecodeError) as err:
            problems.append(f"{path.name}: {type(err).__name__}: {err}"[:500])
    return problems


def grade_submission(root: Path, config: AutograderConfig) -> dict:
    """Grade ROOT/submission as one student of the roster mode; the results as Gradescope reads them."""
    from puzzles.classroom.isolation import GIB, Limits, can_switch_user, job_uid
    from puzzles.classroom.roster import Options, Student, grade_student, submission_files
    from puzzles.course import catalog
    from puzzles.running.kernel import on_gpu

    started = time.perf_counter()
    submission = (root / "submission").resolve()
    files = submission_files(submission) if submission.is_dir() else []
    if not files:
        return not_graded("no notebook (.ipynb) or Python file (.py) was found in the submission.", config)
    broken = unreadable(files)
    if broken:
        return not_graded("part of the submission cannot be read: " + "; ".join(broken) + ". Download the "
                          "notebook again from Jupyter (File > Download) and upload that file.", config)
    seed = config.seed if config.seed is not None else random.randrange(1, 10**6)
    speed = config.speed and on_gpu()  # kernels are timed compiled: on a CUDA GPU only
    options = Options(timeout=config.timeout, seed=seed, limits=Limits(memory_bytes=int(config.memory_gib * GIB)),
                      speed=speed)
    puzzles = [catalog.get(n) for n in config.puzzles]
    uid = job_uid(0) if can_switch_user() else None
    result = grade_student(Student("submission", files), puzzles, options, seed, uid)
    print(f"graded {[str(f.relative_to(submission)) for f in files]} with seed {seed} in {result.seconds:.1f} s; "
          f"protections: {', '.join(result.protections)}; not available: {'; '.join(result.missing_protections)}")
    if result.grader_error:
        return not_graded(f"the grader failed (not your code): {result.grader_error}", config,
                          time.perf_counter() - started)
    return graded(result, config, submission)


def write_results(results: dict, root: Path) -> Path:
    """Write results.json in one step (a file left there before is replaced, never merged)."""
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    partial = folder / f".results.{os.getpid()}.json"
    partial.write_text(json.dumps(results, indent=1) + "\n")
    os.replace(partial, path)
    return path


def run(root: Path) -> int:
    """Grade and write results.json; a failure of the grader is written there too, as not graded."""
    started = time.perf_counter()
    try:
        config = AutograderConfig.from_json((root / "source" / CONFIG_NAME).read_text())
    except (OSError, ValueError, KeyError, TypeError) as err:
        config = AutograderConfig(puzzles=[], points={})
        write_results(not_graded(f"the grader failed (not your code): its settings cannot be read "
                                 f"({type(err).__name__}: {err})", config), root)
        return 0
    try:
        results = grade_submission(root, config)
    except Exception as err:  # noqa: BLE001 - whatever failed, Gradescope gets results that say so
        import traceback

        traceback.print_exc()
        results = not_graded(f"the grader failed (not your code): {type(err).__name__}: {err}", config,
                             time.perf_counter() - started)
    path = write_results(results, root)
    print(f"wrote {path}: {results['score']:g} points" + ("" if results["extra_data"]["graded"] else " (NOT GRADED)"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puzzles.classroom.gradescope",
                                     description="Grade a Gradescope submission (what run_autograder runs).")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get(ROOT_VARIABLE, "/autograder")),
                        help=f"Gradescope's folder (default: ${ROOT_VARIABLE}, else /autograder)")
    return run(parser.parse_args(argv).root)


if __name__ == "__main__":
    sys.exit(main())
