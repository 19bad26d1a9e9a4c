"""The Gradescope autograder (issue 37): the zip that `python -m puzzles gradescope` builds, run end to
end in a temporary folder standing in for /autograder, on an honest, a wrong and a hostile submission,
and on submissions that cannot be graded; every results.json is checked against the fields of
Gradescope's documented format (https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import classroom_fixtures as fixtures
import pytest
from conftest import pythonpath_without_checkout

from puzzles.__main__ import main
from puzzles.classroom import gradescope, hidden_sizes
from puzzles.classroom.gradescope import AutograderConfig, not_graded
from puzzles.classroom.gradescope_build import parse_points
from puzzles.course import catalog, notebooks

ROOT = Path(__file__).resolve().parents[2]
# Gradescope's documented results.json: the top level and each test, with the values it accepts.
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
              "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
               "visibility", "extra_data"}
VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
POINTS = {1: 2.0, 2: 3.0}

FORGED = '{"score": 1000.0, "output": "forged by the submission"}'
HOSTILE = fixtures.HEADER + fixtures.FORGED_TEST + f'''

class Forger:  # writes outside its folder: Gradescope's own results, and a file beside the submission
    open(RESULTS, "w").write({FORGED!r})
    open(OUTSIDE, "w").write("escaped")
''' + fixtures.DO_NOTHING


def check_format(results: dict) -> None:
    """results.json as Gradescope documents it: known fields, their types and values, the score the
    sum of the tests' scores."""
    assert set(results) <= TOP_FIELDS, set(results) - TOP_FIELDS
    assert isinstance(results["score"], float) and isinstance(results.get("execution_time", 0), int)
    assert isinstance(results["output"], str) and results["output"]
    assert results["visibility"] in VISIBILITY and results["stdout_visibility"] in VISIBILITY
    assert results.get("output_format", "text") in FORMATS
    assert isinstance(results["tests"], list) and results["tests"]
    for test in results["tests"]:
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert isinstance(test["score"], float) and isinstance(test["max_score"], float)
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITY
        assert test.get("output_format", "text") in FORMATS
        assert 0 <= test["score"] <= test["max_score"]
    assert results["score"] == sum(t["score"] for t in results["tests"])
    assert isinstance(results["extra_data"]["graded"], bool)


def assert_not_graded(results: dict, words: str) -> None:
    check_format(results)
    assert results["extra_data"]["graded"] is False
    assert results["output"].startswith("NOT GRADED") and words in results["output"], results["output"]
    assert "not a grade" in results["output"]
    assert [t["max_score"] for t in results["tests"]] == [0.0]  # no puzzle scored: nothing looks like a grade


@pytest.fixture(scope="module")
def autograder():
    """The zip built for puzzles 1 and 2 (2 and 3 points, half of each at two hidden sizes), unpacked once as
    Gradescope would into a `source` folder that each test's root links to. Under a folder that others
    may read: the sandboxed worker runs as a user of its own and imports the course from there."""
    base = Path(tempfile.mkdtemp(prefix="gradescope-"))
    base.chmod(0o755)
    try:
        said = io.StringIO()
        with contextlib.redirect_stdout(said):
            built = main(["gradescope", "--out", str(base / "autograder.zip"), "--puzzle", "1", "--puzzle", "2",
                          "--points", "1=2", "--points", "2=3", "--timeout", "2", "--hidden-seed", "5"])
        assert built == 0 and "5 points in all" in said.getvalue(), said.getvalue()
        with zipfile.ZipFile(base / "autograder.zip") as archive:
            archive.extractall(base / "source")
            names = archive.namelist()
            modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        for name in ("setup.sh", "run_autograder"):  # at the zip's root, executable (the zip keeps the mode)
            (base / "source" / name).chmod(modes[name] & 0o777)
        (base / "source" / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # what setup.sh made
        yield base, names, modes
    finally:
        shutil.rmtree(base, ignore_errors=True)


def lay_out(base: Path, name: str, files: dict[str, str | bytes], source: Path | None = None,
            metadata: dict | None = None) -> Path:
    """A root as Gradescope lays it out: the unpacked zip in source/, run_autograder, the submission (and
    Gradescope's submission_metadata.json where given)."""
    root = base / name
    (root / "submission").mkdir(parents=True)
    (root / "source").symlink_to(source or base / "source", target_is_directory=True)
    shutil.copy2(base / "source" / "run_autograder", root / "run_autograder")
    for file, text in files.items():
        path = root / "submission" / file
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    return root


def run_autograder(base: Path, name: str, files: dict[str, str | bytes], source: Path | None = None,
                   metadata: dict | None = None) -> tuple[Path, subprocess.Popen]:
    """run_autograder started in a root of its own, as Gradescope starts it."""
    root = lay_out(base, name, files, source, metadata)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(AUTOGRADER_ROOT=str(root), PYTHONPATH=pythonpath_without_checkout(),
               PUZZLES_COMPILE_CHECK="0")  # the compile check in the sandbox: tests/classroom/test_grade_class.py
    proc = subprocess.Popen([str(root / "run_autograder")], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return root, proc


def results_of(root: Path, proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return json.loads((root / "results" / "results.json").read_text())


def test_the_zip_holds_gradescope_s_scripts_and_the_pinned_course(autograder):
    base, names, modes = autograder
    assert {"setup.sh", "run_autograder", "gradescope.json", "requirements.txt", "requirements-grading.txt",
            "scripts/setup.py", "puzzles/classroom/worker.py", "puzzles/submissions/load_rules.py",
            "puzzles/course/starters.json"} <= set(names)
    assert not [n for n in names if n.startswith("solutions/")]  # no reference kernel in the container
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert (base / "source" / "requirements.txt").read_bytes() == (ROOT / "requirements.txt").read_bytes()
    config = AutograderConfig.from_json((base / "source" / "gradescope.json").read_text())
    assert config.puzzles == [1, 2] and config.points == POINTS and config.timeout == 2.0
    assert config.visibility == "visible" and config.hidden_visibility == "after_due_date" and config.course["version"]
    # Two hidden sizes per puzzle, none the notebook lists, the same for the same --hidden-seed.
    for number in (1, 2):
        assert len(config.hidden_sizes[number]) == 2 and config.hidden_seed == 5
        assert not [s for s in config.hidden_sizes[number] if s in [dict(t) for t in catalog.get(number).sizes]]
        assert config.hidden_sizes[number] == hidden_sizes.draw(catalog.get(number), 5, 2, check=lambda p, s: True)
    # setup.sh installs as `make setup` does, the course's installer, but only what grading needs.
    plan = subprocess.run(["bash", str(base / "source" / "setup.sh"), "--plan"], capture_output=True, text=True,
                          timeout=120)
    assert plan.returncode == 0, plan.stderr
    assert "-r requirements-grading.txt" in plan.stdout and "requirements.txt" not in plan.stdout, plan.stdout


def by_name(results: dict) -> dict[str, dict]:
    return {t["name"]: t for t in results["tests"]}


P1_TEST, P2_TEST = (f"Puzzle {p.number:02d}: {p.title} ({p.kernel_name})" for p in (fixtures.P1, fixtures.P2))
HIDDEN = ": sizes not in the notebook"
DUE = "2026-12-01T23:00:00.000000-08:00"


def test_honest_wrong_hostile_and_messy_submissions_end_to_end(autograder):
    base, _, _ = autograder
    honest = fixtures.HEADER + fixtures.reference_source(fixtures.P1) + "\n\n" + fixtures.reference_source(fixtures.P2)
    wrong = honest.replace("10.0", "11.0", 1)
    hostile_root = base / "hostile"
    hostile = HOSTILE.replace("RESULTS", repr(str(hostile_root / "results" / "results.json"))) \
                     .replace("OUTSIDE", repr(str(hostile_root / "outside.txt")))
    # A truncated notebook, a stray file that does not parse, and a stale scratch file whose (wrong) kernel is
    # the one graded: each is named to the student, none voids the rest.
    p1_only = fixtures.HEADER + fixtures.reference_source(fixtures.P1)
    messy = {f"{fixtures.P2.id}.ipynb": notebooks.dumps(notebooks.puzzle_notebook(fixtures.P2))[:500],
             "answers.py": p1_only, "scratch.py": p1_only.replace("10.0", "11.0", 1),
             "stray.py": "def broken(:\n    pass\n"}
    started = [run_autograder(base, "honest", {"answers.py": honest},
                              metadata={"id": 4242, "assignment": {"due_date": DUE, "late_due_date": None}}),
               run_autograder(base, "wrong", {"answers.py": wrong}),
               run_autograder(base, "hostile", {"answers.py": hostile}),
               run_autograder(base, "messy", messy)]
    (honest_r, wrong_r, hostile_r, messy_r) = [results_of(root, proc) for root, proc in started]
    for results in (honest_r, wrong_r, hostile_r, messy_r):
        check_format(results)
        assert results["extra_data"]["graded"] is True and results["visibility"] == "visible"
        # The notebook's sizes now, the hidden ones after the due date: half of each puzzle's points.
        assert [(t["name"], t["max_score"], t["visibility"]) for t in results["tests"]] == [
            (P1_TEST, 1.0, "visible"), (P1_TEST + HIDDEN, 1.0, "after_due_date"),
            (P2_TEST, 1.5, "visible"), (P2_TEST + HIDDEN, 1.5, "after_due_date")]
        seed = results["extra_data"]["seed"]
        assert f"seed {seed}" in results["output"] and "2.5 more points are for sizes the notebooks do not list" \
            in results["output"]
    assert honest_r["score"] == 5.0 and {t["status"] for t in honest_r["tests"]} == {"passed"}
    # Gradescope's submission id seeds the inputs (a rerun gives the same verdicts), its due date is named.
    assert honest_r["extra_data"]["seed"] == 4242 % 999_999 + 1 and f"after the due date ({DUE})" in honest_r["output"]
    assert honest_r["output"].startswith("2.5 of 2.5 points at the sizes your notebooks list")  # hidden ones not told
    hidden_one = by_name(honest_r)[P1_TEST + HIDDEN]["output"]
    sizes = hidden_sizes.draw(catalog.get(1), 5, 2, check=lambda p, s: True)
    assert hidden_one.startswith("at sizes the notebook does not list: " + "; ".join(
        " ".join(f"{k}={v}" for k, v in s.items()) for s in sizes)), hidden_one
    wrong_tests = by_name(wrong_r)
    assert wrong_r["score"] == 3.0 and [t["status"] for t in wrong_r["tests"]] == ["failed", "failed", "passed",
                                                                                  "passed"]
    one = wrong_tests[P1_TEST]
    assert "elements wrong" in one["output"] and f"seed={wrong_r['extra_data']['seed']}" in one["output"]
    assert "graded: answers.py" in one["output"]  # the student's file, not the container's path
    assert f"test(add_kernel, add_spec, sizes={sizes}, seed=" in wrong_tests[P1_TEST + HIDDEN]["output"]
    # The hostile one: its class bodies are refused before they run, its do-nothing kernel fails, the
    # results are the grader's, and nothing was written outside its folder.
    assert hostile_r["score"] == 0.0 and hostile_r["tests"][0]["status"] == "failed"
    assert fixtures.REFUSED in hostile_r["tests"][0]["output"] and fixtures.REFUSED in hostile_r["output"]
    assert "forged" not in json.dumps(hostile_r)
    assert not (hostile_root / "outside.txt").exists()
    # The messy one is graded: the stale kernel with a warning in its test, the unreadable notebook named above
    # the tests and in its puzzle's test, the stray file's syntax error among the loading problems.
    messy_tests = by_name(messy_r)
    assert messy_r["score"] == 0.0
    assert "warning: add_kernel is defined in 2 places; graded the one in scratch.py, not answers.py" in \
        messy_tests[P1_TEST]["output"] and "graded: scratch.py" in messy_tests[P1_TEST]["output"]
    notebook = f"{fixtures.P2.id}.ipynb"
    assert f"{notebook} could not be read" in messy_tests[P2_TEST]["output"]
    assert "reproduce it" not in messy_tests[P2_TEST]["output"]
    assert "Not read (the rest of your submission was graded):" in messy_r["output"]
    assert f" - {notebook}: JSONDecodeError" in messy_r["output"] and "File > Download" in messy_r["output"]
    assert "stray.py: line 1: SyntaxError" in messy_r["output"]


def test_a_submission_that_cannot_be_graded_says_so_always_visibly(autograder):
    base, _, _ = autograder
    cases = {"empty": ({}, "no notebook (.ipynb) or Python file (.py)"),
             "binary": ({"answers.py": b"\xff\xfe\x00junk", "b.ipynb": "{"},
                        "no file of the submission can be read: answers.py: UnicodeDecodeError")}
    for name, (files, words) in cases.items():  # refused before any worker starts: run here, in this process
        root = lay_out(base, name, files)
        assert gradescope.run(root) == 0
        results = json.loads((root / "results" / "results.json").read_text())
        assert_not_graded(results, words)
        assert results["visibility"] == "visible" and results["tests"][0]["visibility"] == "visible"
    assert "b.ipynb: JSONDecodeError" in results["output"] and "File > Download" in results["output"]
    # A grader that cannot start at all (set-up never made its Python): run_autograder still writes the results.
    bare = base / "bare-source"
    shutil.copytree(base / "source", bare, symlinks=True, ignore=shutil.ignore_patterns(".venv"))
    root, proc = run_autograder(base, "no-python", {"answers.py": "x = 1\n"}, source=bare)
    results = results_of(root, proc)
    assert_not_graded(results, "the grader failed (exit status 127")
    assert results["visibility"] == "visible" and results["tests"][0]["visibility"] == "visible"


def test_the_grader_failing_is_not_a_grade():
    config = AutograderConfig(puzzles=[1], points={1: 1.0}, visibility="hidden")
    results = not_graded("the grader failed (not your code): boom", config)
    assert_not_graded(results, "boom")
    assert results["visibility"] == "visible"  # "submit again" is never held back


def test_points_are_checked():
    assert parse_points(["2=4.5"], [1, 2]) == {1: 1.0, 2: 4.5}
    for bad in (["3=1"], ["2"], ["x=1"], ["1=-1"]):
        with pytest.raises(ValueError):
            parse_points(bad, [1, 2])

def test_a_usage_error_names_what_is_wrong(capsys, tmp_path):
    assert main(["gradescope", "--puzzle", "1", "--points", "5=1", "--out", str(tmp_path / "a.zip")]) == 2
    assert "puzzle 5 is not graded here" in capsys.readouterr().err
    assert main(["gradescope", "--visibility", "sometimes", "--out", str(tmp_path / "a.zip")]) == 2
    assert "a visibility is one of visible, hidden" in capsys.readouterr().err
    assert not (tmp_path / "a.zip").exists()


def test_speed_points_are_a_test_of_their_own_and_a_machine_without_a_gpu_says_so(tmp_path):
    from puzzles.classroom.gradebook import SPEED_SHARE
    from puzzles.classroom.roster import PuzzleVerdict, StudentResult

    config = AutograderConfig(puzzles=[1, 2], points=POINTS, speed=True)
    timed = {"ms": 0.01, "compiled_ms": 0.01, "progress": 0.5, "line": "0.010 ms: half way to the goal"}
    verdicts = [PuzzleVerdict(1, "passed", speed=timed), PuzzleVerdict(2, "failed", "at N0=200: 3 elements wrong")]
    on_a_gpu = gradescope.graded(StudentResult("submission", [], 7, verdicts, speed=True), config, tmp_path)
    check_format(on_a_gpu)
    speed_one, speed_two = on_a_gpu["tests"][1], on_a_gpu["tests"][3]
    assert speed_one["name"].endswith(": speed") and speed_one["max_score"] == 2.0 * SPEED_SHARE
    assert speed_one["score"] == 0.5 * 2.0 * SPEED_SHARE and "half way" in speed_one["output"]
    assert speed_two["score"] == 0.0 and "it did not pass" in speed_two["output"]
    assert on_a_gpu["extra_data"]["speed"] is True and "Speed was not graded" not in on_a_gpu["output"]
    on_a_cpu = gradescope.graded(StudentResult("submission", [], 7, verdicts, speed=False), config, tmp_path)
    check_format(on_a_cpu)
    assert [t["max_score"] for t in on_a_cpu["tests"]] == [2.0, 3.0] and on_a_cpu["score"] == 2.0
    assert "Speed was not graded: this autograder's machine has no CUDA GPU" in on_a_cpu["output"]


def test_hidden_sizes_are_new_keep_the_listed_rules_and_depend_only_on_the_seed():
    from puzzles.grading.cases import case_from_spec

    for p in catalog.all_puzzles():
        drawn = hidden_sizes.draw(p, 11, 2, check=lambda p, s: True)
        assert drawn == hidden_sizes.draw(p, 11, 2, check=lambda p, s: True)
        if p.tensor_lists is not None:  # puzzle 21: lists of tensors, none
            assert drawn == []
            continue
        assert len(drawn) == 2 and drawn[0] != drawn[1], p.number
        for sizes in drawn:
            assert sizes not in [dict(s) for s in p.sizes] and set(sizes) == set(p.canonical)
            assert hidden_sizes.obeys_listed_rules(p, sizes)
            redrawn = hidden_sizes.redrawn(p)  # the rest (blocks, strides, scalars) is one listed size's
            kept = [k for k in p.canonical if k not in redrawn
                    and not any(all(s[k] == s[r] for s in p.sizes) for r in redrawn)]  # puzzle 1's B0 = N0
            assert any(all(sizes[k] == s[k] for k in kept) for s in p.sizes), (p.number, sizes)
            case_from_spec(p.spec, hidden_sizes.with_sizes(p, drawn), sizes, 3, drawn.index(sizes))  # the spec builds
    # The listed rules: puzzle 1's block stays its size, puzzle 12's MID a multiple of 64, puzzle 18's G divides K.
    assert all(s["B0"] == s["N0"] for s in hidden_sizes.draw(catalog.get(1), 3, 2, check=lambda p, s: True))
    assert all(s["MID"] % 64 == 0 for s in hidden_sizes.draw(catalog.get(12), 3, 2, check=lambda p, s: True))
    assert all(s["K"] % s["G"] == 0 for s in hidden_sizes.draw(catalog.get(18), 3, 2, check=lambda p, s: True))
    # The build keeps only sizes the reference passes at: a check that refuses all leaves none.
    assert hidden_sizes.draw(catalog.get(2), 3, 2, check=lambda p, s: False) == []
