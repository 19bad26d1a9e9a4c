"""Class grading with `--speed` (issue 33): speed points beside the correctness points, from timings faked
here (the gradebook never times anything itself); on a CPU the flag says it needs a GPU and grades
correctness only."""

from __future__ import annotations

import argparse
import csv
import json

import classroom_fixtures as fixtures
import pytest

from puzzles.classroom import command, gradebook
from puzzles.classroom.roster import Options, PuzzleVerdict, Student, StudentResult, grade_student, speed_record
from puzzles.course import catalog
from puzzles.course.solution_source import reference_source

without_compile_check = fixtures.without_compile_check  # the fixture, found here by pytest

GOAL_2 = "goal (at least torch.compile's speed and 80% of the roofline)"


def timed(ms: float, progress: float | None, goal: str = "met (1.2x faster than torch.compile)") -> dict:
    """A speed record as a worker sends it (perf.PerfReport.record), with made-up times."""
    return {"ms": ms, "compiled_ms": 0.5, "progress": progress,
            "line": f"speed at N0=67108864 B0=1024: {ms * 1000:.1f} us\n{GOAL_2}: {goal}"}


def a_class() -> list[StudentResult]:
    fast = StudentResult("ada", ["ada.ipynb"], 7, [
        PuzzleVerdict(1, "passed", speed=timed(0.004, 1.0)),
        PuzzleVerdict(2, "passed", speed=timed(0.4, 1.0)),
    ], speed=True)
    slow = StudentResult("bob", ["bob.ipynb"], 7, [
        PuzzleVerdict(1, "passed", speed=timed(0.004, None, "cannot be judged here")),  # torch.compile failed
        PuzzleVerdict(2, "passed", speed=timed(1.6, 0.25, "not met (4.0x slower than torch.compile)")),
    ], speed=True)
    wrong = StudentResult("cy", ["cy.ipynb"], 7, [
        PuzzleVerdict(1, "failed", "1 of 32 elements wrong"),
        PuzzleVerdict(2, "not attempted", "no add_mask2_kernel found"),
    ], speed=True)
    return [fast, slow, wrong]


def test_speed_points_are_a_share_of_the_points_earned_toward_the_goal(tmp_path):
    share = gradebook.SPEED_SHARE
    records = {r.student: gradebook.student_record(r) for r in a_class()}
    assert [(r["points"], r["speed_points"], r["max_speed_points"]) for r in records.values()] == [
        (2.0, 2 * share, 2 * share), (2.0, 0.25 * share, 2 * share), (0.0, 0.0, 2 * share)]
    bob = records["bob"]["puzzles"]
    assert [(p["points"], p["speed_points"]) for p in bob] == [(1.0, 0.0), (1.0, 0.25 * share)]
    # The correctness points are those of a class graded without --speed.
    plain = [StudentResult(r.student, r.files, r.seed, r.verdicts) for r in a_class()]
    assert [gradebook.student_record(r)["points"] for r in plain] == [r["points"] for r in records.values()]
    assert all("speed_points" not in gradebook.student_record(r) for r in plain)


def test_the_gradebook_has_a_speed_column_and_the_feedback_the_goal_line(tmp_path):
    table = gradebook.write_gradebook(a_class(), tmp_path / "book")
    rows = list(csv.DictReader(table.open()))
    assert list(rows[0]) == ["student", "puzzle", "status", "seconds", "seed", "message", "speed_points", "speed"]
    by = {(r["student"], r["puzzle"]): r for r in rows}
    p2 = catalog.get(2).id
    assert by[("ada", p2)]["speed_points"] == "0.5" and by[("ada", p2)]["speed"] == f"{GOAL_2}: met (1.2x faster "\
        "than torch.compile)"
    assert by[("bob", p2)]["speed_points"] == "0.125" and "not met" in by[("bob", p2)]["speed"]
    assert by[("cy", catalog.get(1).id)]["speed_points"] == "0" and by[("cy", catalog.get(1).id)]["speed"] == ""
    feedback = (tmp_path / "book" / "feedback" / "bob.txt").read_text()
    assert "2 of 2 points, and 0.125 of 1 speed points (on a GPU, against each puzzle's speed goal)" in feedback
    assert f"speed (0.125/0.5): speed at N0=67108864 B0=1024: 1600.0 us\n   {GOAL_2}: not met" in feedback
    assert "speed (0/0.5): not timed (it did not pass)" in (tmp_path / "book" / "feedback" / "cy.txt").read_text()
    summary = gradebook.summary(a_class())
    assert "speed 1/1" in summary and "speed 0.125/1" in summary
    # Per-student JSON files merge back into the same gradebook, speed included.
    merged = gradebook.merge([tmp_path / "book" / "students"])
    again = gradebook.write_gradebook(merged, tmp_path / "merged")
    assert list(csv.DictReader(again.open())) == rows
    # Without --speed the table keeps its columns.
    plain = [StudentResult(r.student, r.files, r.seed, r.verdicts) for r in a_class()]
    header = next(csv.reader(gradebook.write_gradebook(plain, tmp_path / "plain").open()))
    assert header == ["student", "puzzle", "status", "seconds", "seed", "message"]


def test_a_workers_speed_claim_is_kept_only_in_its_shape():
    assert speed_record(timed(0.4, 1.7))["progress"] == 1.0  # never more than the goal
    assert speed_record({"ms": 0.4, "progress": "all", "line": 3}) == {"ms": 0.4, "compiled_ms": None,
                                                                     "progress": None, "line": "3",
                                                                     "source": "a GPU"}
    assert speed_record({"ms": 0.4, "source": "the efficiency model (H100), on a CPU"})["source"].startswith("the eff")
    for forged in (None, [], {"ms": -1.0}, {"ms": 0}, {"ms": True}, {"ms": "fast"}, "speed"):
        assert speed_record(forged) is None, forged
    negative = speed_record({"ms": 0.4, "progress": -2.0})
    assert negative["progress"] is None


@pytest.mark.interpreter("on a GPU --speed times the kernels")
def test_on_a_cpu_speed_points_come_from_the_efficiency_model_and_it_says_so(capsys):
    args = argparse.Namespace(memory=None, timeout=None, seed=None, speed=True)
    options = command.options_from(args)
    assert options.speed is True and options.speed_source == "model"
    assert "speed points come from the efficiency model" in capsys.readouterr().err
    assert command.options_from(argparse.Namespace(memory=None, timeout=None, seed=None)).speed is False


def graded_for_speed(tmp_path, number: int) -> StudentResult:
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(catalog.get(number)))
    return grade_student(Student("solo", [tmp_path / "a.py"]), [catalog.get(number)], Options(timeout=2, speed=True),
                         seed=1, uid=None)


@pytest.mark.usefixtures("without_compile_check")
@pytest.mark.interpreter("on a GPU the kernel is timed (the test below)")
def test_a_student_graded_for_speed_where_no_gpu_times_it_gets_no_speed_points(tmp_path):
    # The request's speed flag reaches the sandboxed worker; off a GPU test(perf=True) measures nothing.
    result = graded_for_speed(tmp_path, 1)
    assert [v.status for v in result.verdicts] == ["passed"], result
    record = gradebook.student_record(result)
    assert record["points"] == 1.0 and record["max_speed_points"] == gradebook.SPEED_SHARE
    assert result.verdicts[0].speed is None and record["speed_points"] == 0.0
    json.dumps(record)


@pytest.mark.usefixtures("without_compile_check")
@pytest.mark.interpreter("the efficiency model reads the interpreter's run")
def test_without_a_gpu_speed_points_come_from_the_model_in_the_sandbox_and_the_feedback_says_so(tmp_path):
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(catalog.get(2)) + "\n\n"
                                   + reference_source(catalog.get(7)))
    result = grade_student(Student("solo", [tmp_path / "a.py"]), [catalog.get(2), catalog.get(7)],
                           Options(timeout=2, speed=True, speed_source="model"), seed=1, uid=None)
    assert [v.status for v in result.verdicts] == ["passed", "passed"], result
    for verdict in result.verdicts:  # the sandbox has no solutions/: the CPU goals are judged without them
        assert verdict.speed is not None and "efficiency model" in verdict.speed["source"], verdict.speed
        assert verdict.speed["progress"] == 1.0 and "the CPU speed goal is met" in verdict.speed["line"]
    record = gradebook.student_record(result)
    assert record["speed_points"] == record["max_speed_points"] == 2 * gradebook.SPEED_SHARE
    text = gradebook.feedback_text(result)
    assert "speed points (from the efficiency model (H100), on a CPU" in text and "from the efficiency model" in text


@pytest.mark.gpu
def test_on_a_gpu_a_student_graded_for_speed_gets_speed_points_from_the_sandbox(tmp_path):
    result = graded_for_speed(tmp_path, 2)
    assert [v.status for v in result.verdicts] == ["passed"], result
    speed = result.verdicts[0].speed
    record = gradebook.student_record(result)
    print(speed, record["speed_points"])
    assert speed is not None and speed["ms"] > 0 and speed["compiled_ms"], speed  # torch.compile in the sandbox
    assert "goal (" in speed["line"] and speed["progress"] is not None
    assert record["speed_points"] == pytest.approx(gradebook.SPEED_SHARE * speed["progress"], abs=1e-3)
