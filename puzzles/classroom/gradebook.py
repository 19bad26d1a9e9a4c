"""The gradebook of a class: a CSV over every student and puzzle, one JSON per student with
points, one feedback text per student; and the merge of per-student results (the JSON files
that `python -m puzzles grade --student DIR --out results/NAME.json` writes, one job each on a
batch system) into the same gradebook.

    gradebook/grades.csv              student, puzzle, status, seconds, seed, message
                                      (with --speed: and speed_points, speed)
    gradebook/students/NAME.json      verdicts, points per puzzle, protections, problems
    gradebook/feedback/NAME.txt       the verdicts' messages, for the student

Speed points (`--speed`): a puzzle with a speed goal is worth `SPEED_SHARE` of its points more, earned by a
passing kernel in proportion to how far it got toward the goal (all of them when it is met: `perf.goal_progress`
on a GPU; without one, from the efficiency model's prediction against the reference's, grading/efficiency.py).
Each puzzle's speed record says where its numbers come from (`source`), and the feedback says so too.
Correctness points are the same with or without them.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
from pathlib import Path

from puzzles.classroom.roster import PuzzleVerdict, StudentResult
from puzzles.course import catalog

FORMAT = 1
SPEED_SHARE = 0.5  # a puzzle's speed points, as a share of its correctness points


def safe_name(student: str) -> str:
    """A file name for a student (folder names can hold anything)."""
    return re.sub(r"[^A-Za-z0-9._@-]", "_", student).lstrip(".") or "student"


def student_record(result: StudentResult) -> dict:
    """The per-student JSON: what a batch job writes and the merge reads back."""
    puzzles = []
    for v in result.verdicts:
        weight = float(catalog.get(v.number).points)
        entry = {**dataclasses.asdict(v), "id": catalog.get(v.number).id,
                 "points": weight if v.status == "passed" else 0.0, "max_points": weight}
        if result.speed:
            entry["speed_points"], entry["max_speed_points"] = speed_points(v)
        puzzles.append(entry)
    record = {"format": FORMAT, "student": result.student, "files": result.files, "seed": result.seed,
              "points": sum(p["points"] for p in puzzles), "max_points": sum(p["max_points"] for p in puzzles),
              "puzzles": puzzles, "protections": result.protections,
              "missing_protections": result.missing_protections, "problems": result.problems,
              "grader_error": result.grader_error, "seconds": round(result.seconds, 2), "speed": result.speed}
    if result.speed:
        record["speed_points"] = round(sum(p["speed_points"] for p in puzzles), 3)
        record["max_speed_points"] = sum(p["max_speed_points"] for p in puzzles)
    return record


def speed_points(v: PuzzleVerdict, points: float | None = None) -> tuple[float, float]:
    """(earned, most) speed points of one verdict: a share of the puzzle's points (the catalog's, or
    `points` where the instructor set them) for a puzzle with a speed goal, earned by a pass in proportion
    to its progress toward the goal (0 where it could not be judged)."""
    p = catalog.get(v.number)
    most = float(p.points if points is None else points) * SPEED_SHARE if p.speed_goal is not None else 0.0
    progress = (v.speed or {}).get("progress")
    if v.status != "passed" or progress is None:
        return 0.0, most
    return round(most * min(max(float(progress), 0.0), 1.0), 3), most


def result_from_record(record: dict) -> StudentResult:
    if record.get("format") != FORMAT:
        raise ValueError(f"not a per-student result of format {FORMAT}")
    verdicts = [PuzzleVerdict(p["number"], p["status"], p.get("message", ""), p.get("seconds", 0.0),
                              p.get("source", ""), p.get("speed")) for p in record["puzzles"]]
    return StudentResult(record["student"], record["files"], record["seed"], verdicts, record["protections"],
                         record["missing_protections"], record["problems"], record["grader_error"],
                         record.get("seconds", 0.0), bool(record.get("speed", False)))


def write_student(result: StudentResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(student_record(result), indent=1) + "\n")


def feedback_text(result: StudentResult) -> str:
    record = student_record(result)
    sources = sorted({(p.get("speed") or {}).get("source", "a GPU") for p in record["puzzles"] if p.get("speed")})
    where = ("on a GPU" if sources in ([], ["a GPU"]) else "from " + " and ".join(sources))
    speed = (f", and {record['speed_points']:g} of {record['max_speed_points']:g} speed points ({where}, "
             "against each puzzle's speed goal)" if result.speed else "")
    lines = [f"Triton puzzles: feedback for {result.student}",
             f"{record['points']:g} of {record['max_points']:g} points{speed} (seed {result.seed}: "
             f"`test(..., seed={result.seed})` reproduces each verdict)", ""]
    if result.grader_error:
        lines += [f"Your submission could not be graded (the grader failed, not your code): {result.grader_error}", ""]
    for p in record["puzzles"]:
        puzzle = catalog.get(p["number"])
        lines.append(f"{puzzle.number:2d} {puzzle.title}: {p['status']} ({p['points']:g}/{p['max_points']:g})")
        if p["message"]:
            lines.append("   " + p["message"].replace("\n", "\n   "))
        if result.speed and p["max_speed_points"]:
            line = (p.get("speed") or {}).get("line") or ("not timed (it did not pass)" if p["status"] != "passed"
                                                          else "not timed")
            source = (p.get("speed") or {}).get("source", "")
            lines.append(f"   speed ({p['speed_points']:g}/{p['max_speed_points']:g}"
                         + (f", from {source}" if source and source != "a GPU" else "") + "): "
                         + line.replace("\n", "\n   "))
    if result.problems:
        lines += ["", "While loading your files:"] + [f" - {problem}" for problem in result.problems]
    return "\n".join(lines) + "\n"


def write_gradebook(results: list[StudentResult], out: Path) -> Path:
    """Write the CSV, the per-student JSON and feedback; return the CSV's path."""
    out.mkdir(parents=True, exist_ok=True)
    table = out / "grades.csv"
    speed = any(r.speed for r in results)
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "puzzle", "status", "seconds", "seed", "message"]
                        + ["speed_points", "speed"] * speed)
        for result in sorted(results, key=lambda r: r.student):
            if result.grader_error:
                writer.writerow([result.student, "", "grader error", f"{result.seconds:.2f}", result.seed,
                                 result.grader_error] + ["", ""] * speed)
            for v in result.verdicts:
                row = [result.student, catalog.get(v.number).id, v.status, f"{v.seconds:.2f}",
                       result.seed, v.message.splitlines()[0] if v.message else ""]
                if speed:
                    earned, _ = speed_points(v)
                    goal_line = ((v.speed or {}).get("line") or "").splitlines()[1:2]
                    row += [f"{earned:g}", goal_line[0] if goal_line else ""]
                writer.writerow(row)
    for result in results:
        write_student(result, out / "students" / f"{safe_name(result.student)}.json")
        feedback = out / "feedback" / f"{safe_name(result.student)}.txt"
        feedback.parent.mkdir(parents=True, exist_ok=True)
        feedback.write_text(feedback_text(result))
    return table


def merge(paths: list[Path]) -> list[StudentResult]:
    """Per-student results (JSON files, or folders of them) back into one list."""
    files = [f for p in paths for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
    return [result_from_record(json.loads(f.read_text())) for f in files]


def summary(results: list[StudentResult]) -> str:
    """One line per student: points, passes, and what went wrong with the grader."""
    lines = []
    for result in sorted(results, key=lambda r: r.student):
        record = student_record(result)
        passed = sum(v.status == "passed" for v in result.verdicts)
        note = f"  GRADER ERROR: {result.grader_error}" if result.grader_error else ""
        speed = (f" speed {record['speed_points']:g}/{record['max_speed_points']:g}" if result.speed else "")
        lines.append(f"{result.student:24} {record['points']:6g}/{record['max_points']:<6g} "
                     f"{passed} passed{speed}{note}")
    if results and results[0].protections:
        lines.append(f"\nprotections: {', '.join(results[0].protections)}")
    missing = sorted({m for r in results for m in r.missing_protections})
    if missing:
        lines.append(f"not available here: {'; '.join(missing)}")
    return "\n".join(lines)
