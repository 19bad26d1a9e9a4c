"""Gradescope's autograder, the grading side: what `run_autograder` runs for each submission.

    python -m puzzles.classroom.gradescope [--root /autograder]

Gradescope unpacks the zip that `python -m puzzles gradescope` builds (gradescope_build.py) into
`ROOT/source`, puts the student's files in `ROOT/submission` and shows `ROOT/results/results.json`.
The submission is graded exactly as one student of the roster mode is (roster.grade_student: a
sandboxed worker, the load rules, verdicts checked by this process); this module adds only the
results in Gradescope's format (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
Per puzzle: a test at the sizes the notebook lists, shown as the instructor chose (`visibility`,
visible by default), and, where the zip holds hidden sizes (hidden_sizes.py), a test at those, graded
by a second sandboxed worker and shown after the due date (`hidden_visibility`); with `--speed` on a
GPU, one more per puzzle with a speed goal (gradebook.speed_points). The summary names the seed and
only the points of the tests shown now.

The inputs' seed is the zip's, else the submission's id from Gradescope's submission_metadata.json (a
rerun of the autograder gives the same verdicts), else a fresh one; the metadata's due date is named
beside the hidden sizes. Nothing else in it is used (the students' names and earlier scores do not
change a verdict).

A file that cannot be read (bad encoding, a truncated notebook, over 50 MB) is skipped with a warning
naming it and what to do, and the rest is graded; a puzzle whose notebook it was fails with that reason.
A submission with nothing readable and a grader that fails are never reported as a grade: the results
say "NOT GRADED" and why, always visible, with `extra_data.graded` false. The score field is still 0
there, since Gradescope's format needs a number. `run_autograder` writes such a file itself when this
program cannot even start.
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
    from collections.abc import Callable

    from puzzles.classroom.roster import PuzzleVerdict, StudentResult

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
    visibility: str = "visible"  # the tests at the notebook's sizes, and the summary (Gradescope's values)
    stdout_visibility: str = "hidden"  # the grader's own log (Gradescope's "Autograder Output" box)
    course: dict = field(default_factory=dict)  # the course's version and commit the zip holds
    # Sizes the notebooks do not list, drawn when the zip was built (hidden_sizes.py), graded as a test of
    # their own per puzzle worth `hidden_share` of its points, shown `hidden_visibility` (after the due date).
    hidden_sizes: dict[int, list[dict]] = field(default_factory=dict)
    hidden_share: float = 0.5
    hidden_visibility: str = "after_due_date"
    hidden_seed: int | None = None  # the seed they were drawn from (the build's --hidden-seed)

    def to_json(self) -> str:
        record = asdict(self)
        record["points"] = {str(k): v for k, v in self.points.items()}
        record["hidden_sizes"] = {str(k): v for k, v in self.hidden_sizes.items()}
        return json.dumps(record, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> AutograderConfig:
        record = json.loads(text)
        record["points"] = {int(k): float(v) for k, v in record["points"].items()}
        record["hidden_sizes"] = {int(k): list(v) for k, v in record.get("hidden_sizes", {}).items()}
        return cls(**record)

    @property
    def total(self) -> float:
        return sum(self.points[n] for n in self.puzzles)

    def split(self, number: int) -> tuple[float, float]:
        """A puzzle's points at the notebook's sizes and at its hidden sizes (0 where it has none)."""
        points = self.points[number]
        if not self.hidden_sizes.get(number):
            return points, 0.0
        hidden = round(points * self.hidden_share, 6)
        return points - hidden, hidden


def course_label(course: dict) -> str:
    words = f"triton-puzzles-course {course.get('version', '?')}"
    if course.get("commit"):
        words += f" at commit {course['commit'][:12]}" + (" with local changes" if course.get("dirty") else "")
    return words


# -- the results ---------------------------------------------------------------------------------

def not_graded(reason: str, config: AutograderConfig, seconds: float = 0.0) -> dict:
    """Results that say the submission was not graded and why: one failing entry worth no points,
    the reason in the output the student sees, `extra_data.graded` false. Always visible, whatever the
    instructor chose for the grades: a student who is not told cannot submit again."""
    words = (f"NOT GRADED: {reason}\n\nNothing was graded, so the 0 shown is not a grade. "
             "Fix what is named above and submit again; if it names the grader, tell your instructor.")
    return {
        "score": 0.0,
        "execution_time": int(seconds),
        "output": words,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": config.stdout_visibility,
        "tests": [{"name": "Submission not graded", "score": 0.0, "max_score": 0.0, "status": "failed",
                   "output": words, "output_format": "text", "visibility": "visible"}],
        "extra_data": {"graded": False, "reason": reason, "course": config.course},
    }


WHEN = {"visible": "below", "after_due_date": "after the due date", "after_published": "when grades are published",
        "hidden": "to your instructor only"}
NOTEBOOK_ADVICE = "download the notebook again from Jupyter (File > Download) and upload that file"
TEXT_ADVICE = "save it as a plain UTF-8 text file and upload it again"


def advice(name: str) -> str:
    """What a student does about a file the grader could not read."""
    return NOTEBOOK_ADVICE if name.endswith(".ipynb") else TEXT_ADVICE


def verdict_text(verdict: PuzzleVerdict, seed: int, call: str, relative: Callable[[str], str]) -> str:
    """A verdict as a test's output: what is wrong and how to reproduce it (`call`, "" when it was not run),
    and the file graded."""
    message = relative(verdict.message)
    if verdict.status == "passed":
        output = f"passed at every size (seed {seed})"
    elif verdict.status == "not attempted":
        output = f"not attempted: {message}" if message else "not attempted"
    else:
        output = f"{message}\n\nreproduce it in the notebook: {call}" if call else message
    return output + (f"\ngraded: {relative(verdict.source)}" if verdict.source else "")


def _entry(name: str, number: str, verdict: PuzzleVerdict, points: float, output: str, visibility: str) -> dict:
    passed = verdict.status == "passed"
    return {"name": name, "number": number, "score": points if passed else 0.0, "max_score": points,
            "status": "passed" if passed else "failed", "output": output, "output_format": "text",
            "visibility": visibility}


def graded(result: StudentResult, config: AutograderConfig, submission: Path, hidden: StudentResult | None = None,
           skipped: dict[str, tuple[str, str]] | None = None, due_date: str = "") -> dict:
    """Results for a graded submission: per puzzle, a test at the notebook's sizes (shown as the instructor
    chose, `visibility`) and, where the zip has hidden sizes, one at those (`hidden_visibility`, after the due
    date by default); `skipped`: the files that could not be read (name -> why, the text legible in it)."""
    from puzzles.classroom.gradebook import speed_points
    from puzzles.classroom.roster import PuzzleVerdict
    from puzzles.course import catalog

    def relative(text: str) -> str:  # the student's own file names, not the container's paths
        return text.replace(f"{submission}/", "")

    skipped = skipped or {}
    by_number = {v.number: v for v in result.verdicts}
    at_hidden = {v.number: v for v in hidden.verdicts} if hidden is not None else {}
    tests, seed = [], result.seed
    for number in config.puzzles:
        p = catalog.get(number)
        shown_points, hidden_points = config.split(number)
        verdict = by_number.get(number) or PuzzleVerdict(number, "failed", "the grading process gave no verdict")
        unread = [name for name, (_, text) in skipped.items()
                  if Path(name).stem == p.id or f"def {p.kernel_name}(" in text]
        if verdict.status == "not attempted" and unread:  # its file was there, but could not be read
            verdict = PuzzleVerdict(number, "failed", f"{unread[0]} could not be read, so {p.kernel_name} was not "
                                                      f"graded: {advice(unread[0])}")
        name = f"Puzzle {p.number:02d}: {p.title} ({p.kernel_name})"
        output = verdict_text(verdict, seed, "" if unread and not verdict.source else f"test(..., seed={seed})",
                              relative)
        twice = [relative(x) for x in result.problems if x.startswith(f"{p.kernel_name} is defined in ")]
        output += "".join(f"\nwarning: {x}" for x in twice)
        tests.append(_entry(name, str(p.number), verdict, shown_points, output, config.visibility))
        if hidden_points:
            sizes = config.hidden_sizes[number]
            # Not graded there when not attempted (or unreadable) at the notebook's sizes: the same verdict.
            late = at_hidden.get(number) or (verdict if verdict.status != "passed" else
                                             PuzzleVerdict(number, "failed", "the grading process gave no verdict"))
            call = f"test({p.kernel_name}, {p.spec_name}, sizes={sizes}, seed={seed})"
            output = (f"at sizes the notebook does not list: {'; '.join(size_words(s) for s in sizes)}\n"
                      + verdict_text(late, seed, call if late.source or late is not verdict else "", relative))
            tests.append(_entry(f"{name}: sizes not in the notebook", f"{p.number}.h", late, hidden_points, output,
                                config.hidden_visibility))
        earned, most = speed_points(verdict, config.points[number]) if result.speed else (0.0, 0.0)
        if most:  # timed on a GPU against the puzzle's speed goal (a claim of the sandboxed worker)
            line = (verdict.speed or {}).get("line") or ("not timed: it did not pass" if verdict.status != "passed"
                                                         else "not timed")
            tests.append({"name": f"{name}: speed", "number": f"{p.number}.s", "score": earned, "max_score": most,
                          "status": "passed" if earned == most else "failed", "output": line, "output_format": "text",
                          "visibility": config.visibility})
    later = [t for t in tests if t["number"].endswith(".h")]  # the hidden sizes': never told in the summary
    shown = [t for t in tests if t not in later]
    lines = [f"{sum(t['score'] for t in shown):g} of {sum(t['max_score'] for t in shown):g} points at the sizes your "
             f"notebooks list, seed {seed} (`test(..., seed={seed})` reproduces each verdict in your notebook)."]
    if later:
        when = WHEN.get(config.hidden_visibility, config.hidden_visibility)
        if config.hidden_visibility == "after_due_date" and due_date:
            when += f" ({due_date})"
        lines.append(f"{sum(t['max_score'] for t in later):g} more points are for sizes the notebooks do not list, "
                     f"graded now and shown {when}: a kernel that is right for any size the statement allows "
                     "(masks, no hard-coded size) earns them.")
    lines.append(f"Graded by {course_label(config.course)}.")
    if config.speed and not result.speed:
        lines.append("Speed was not graded: this autograder's machine has no CUDA GPU (correctness points only).")
    if skipped:
        lines += ["", "Not read (the rest of your submission was graded):"]
        lines += [f" - {name}: {why}; {advice(name)}" for name, (why, _) in skipped.items()]
    if result.problems:
        lines += ["", "While loading your files:"] + [f" - {relative(p)}" for p in result.problems]
    return {
        "score": sum(t["score"] for t in tests),
        "execution_time": int(result.seconds + (hidden.seconds if hidden is not None else 0.0)),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": config.visibility,
        "stdout_visibility": config.stdout_visibility,
        "tests": tests,
        "extra_data": {"graded": True, "seed": seed, "course": config.course, "speed": result.speed,
                       "hidden_sizes": {str(k): v for k, v in config.hidden_sizes.items()},
                       "skipped": sorted(skipped),
                       "protections": result.protections, "missing_protections": result.missing_protections},
    }


def size_words(sizes: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


# -- one submission --------------------------------------------------------------------------------

def unreadable(files: list[Path], submission: Path) -> dict[str, tuple[str, str]]:
    """The submitted files that are not a readable notebook or Python file: their name in the submission ->
    (why, the text still legible in them). Read here as text or JSON only (nothing in them runs in this
    process); a file that reads but does not parse is the worker's to report (a loading problem)."""
    from puzzles.submissions.grade import code_cells

    found = {}
    for path in files:
        if path.is_symlink():  # never followed (roster.grade_student says why it is not graded)
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES >> 20} MB")
            code_cells(path)
        except (OSError, ValueError, UnicodeDecodeError) as err:
            try:
                legible = path.read_bytes()[:MAX_FILE_BYTES].decode(errors="replace")
            except OSError:
                legible = ""
            found[str(path.relative_to(submission))] = (f"{type(err).__name__}: {err}"[:300], legible)
    return found


def submission_metadata(root: Path) -> dict:
    """Gradescope's ROOT/submission_metadata.json ({} where absent or unreadable): the submission's id
    seeds its inputs when the zip fixes none, and the assignment's due date is named with hidden sizes."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def seed_and_due_date(config: AutograderConfig, metadata: dict) -> tuple[int, str]:
    """The inputs' seed: the zip's, else the submission's id (a rerun of the autograder on the same submission
    gives the same verdicts), else a fresh one; and the due date results shown after it fall on."""
    submission_id = metadata.get("id")
    if config.seed is not None:
        seed = config.seed
    elif isinstance(submission_id, int) and not isinstance(submission_id, bool):
        seed = submission_id % 999_999 + 1
    else:
        seed = random.randrange(1, 10**6)
    assignment = metadata.get("assignment") if isinstance(metadata.get("assignment"), dict) else {}
    due = assignment.get("late_due_date") or assignment.get("due_date") or ""  # Gradescope waits for the later
    return seed, str(due)[:40]


def grade_submission(root: Path, config: AutograderConfig) -> dict:
    """Grade ROOT/submission as one student of the roster mode; the results as Gradescope reads them."""
    from puzzles.classroom.hidden_sizes import with_sizes
    from puzzles.classroom.isolation import GIB, Limits, can_switch_user, job_uid
    from puzzles.classroom.roster import Options, Student, grade_student, submission_files
    from puzzles.course import catalog
    from puzzles.running.kernel import on_gpu

    started = time.perf_counter()
    submission = (root / "submission").resolve()
    files = submission_files(submission) if submission.is_dir() else []
    if not files:
        return not_graded("no notebook (.ipynb) or Python file (.py) was found in the submission.", config)
    broken = unreadable(files, submission)
    readable = [f for f in files if str(f.relative_to(submission)) not in broken]
    if not readable:
        return not_graded("no file of the submission can be read: " + "; ".join(
            f"{name}: {why} ({advice(name)})" for name, (why, _) in broken.items()) + ".", config)
    seed, due_date = seed_and_due_date(config, submission_metadata(root))
    speed = config.speed and on_gpu()  # kernels are timed compiled: on a CUDA GPU only
    options = Options(timeout=config.timeout, seed=seed, limits=Limits(memory_bytes=int(config.memory_gib * GIB)),
                      speed=speed)
    uid = job_uid(0) if can_switch_user() else None
    student = Student("submission", readable)
    result = grade_student(student, [catalog.get(n) for n in config.puzzles], options, seed, uid)
    print(f"graded {[str(f.relative_to(submission)) for f in readable]} with seed {seed} in {result.seconds:.1f} s"
          f"{'; not read: ' + ', '.join(broken) if broken else ''}; protections: {', '.join(result.protections)}; "
          f"not available: {'; '.join(result.missing_protections)}")
    if result.grader_error:
        return not_graded(f"the grader failed (not your code): {result.grader_error}", config,
                          time.perf_counter() - started)
    # The hidden sizes: a second sandboxed worker, for the puzzles attempted at the notebook's sizes.
    attempted = {v.number for v in result.verdicts if v.status != "not attempted"}
    later = [with_sizes(catalog.get(n), config.hidden_sizes[n]) for n in config.puzzles
             if config.hidden_sizes.get(n) and n in attempted]
    hidden = None
    if later:
        options.speed = False
        hidden = grade_student(student, later, options, seed, uid)
        print(f"graded the hidden sizes of puzzles {[p.number for p in later]} in {hidden.seconds:.1f} s")
        if hidden.grader_error:
            return not_graded(f"the grader failed (not your code): {hidden.grader_error}", config,
                              time.perf_counter() - started)
    return graded(result, config, submission, hidden, broken, due_date)


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
