"""A hostile class (issue 47): the references and the grader's internals are out of a submission's reach,
names are resolved rather than matched, and the verdict is made where the kernel cannot reach. The attacks
are in tests/support/hostile_submissions.py; each is refused with its message on the scoreboard, in the roster mode
and on the Gradescope path, while the honest student's verdicts stay the same."""

from __future__ import annotations

import csv
import json
import os
import pickle
import shutil
import subprocess

import classroom_fixtures as fixtures
import hostile_submissions as hostile
import pytest
from commands import run_command
from conftest import pythonpath_without_checkout
from test_gradescope import autograder, lay_out, results_of, run_autograder  # noqa: F401 - the fixture, found by pytest

from puzzles.course import catalog
from puzzles.course.solution_source import ROOT
from puzzles.running.child import run_in_child
from puzzles.running.frames import FrameReader, send_frame
from puzzles.submissions import grade

P1 = catalog.get(1)
worker_trigger = fixtures.worker_trigger  # the fixture, found here by pytest
without_compile_check = fixtures.without_compile_check  # the fixture, found here by pytest
REFERENCE = ROOT / "solutions" / "p01_constant_add.py"


def student_name(attack: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in attack)


def check_verdict(attack: str, status: str, message: str, problems: str) -> None:
    text, words, loading = hostile.ATTACKS[attack]
    assert status == ("passed" if attack in hostile.PASSES else "failed"), (attack, status, message)
    assert words in message, (attack, message)
    assert loading in problems, (attack, problems)


def test_every_attack_is_refused_on_the_scoreboard(tmp_path):
    """In this process, as a learner's scoreboard grades: no attack runs, each says why."""
    for attack, (text, _, _) in hostile.ATTACKS.items():
        path = tmp_path / f"{student_name(attack)}.py"
        path.write_text(text)
        submission = grade.collect([path], [P1])
        verdict = grade.grade_puzzle(submission, P1, timeout=5)
        check_verdict(attack, verdict.status, verdict.reason, "\n".join(submission.problems))


@pytest.mark.usefixtures("without_compile_check")
def test_a_hostile_class_in_the_roster_mode(tmp_path):
    """Every attack a student of its own, beside an honest one, graded with two jobs: each attack fails (or,
    refused while loading, costs nothing but the refused lines), the honest verdict is unchanged, a symbolic
    link to a reference is not followed, and what a kernel prints never reaches the report."""
    folder = tmp_path / "class"
    files = {student_name(attack): text for attack, (text, _, _) in hostile.ATTACKS.items()}
    files |= {"honest": fixtures.HEADER + fixtures.reference_source(P1), "printer": hostile.PRINTS_A_FORGED_EVENT}
    for name, text in files.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "answers.py").write_text(text)
    (folder / "linker").mkdir()
    (folder / "linker" / "answers.py").symlink_to(REFERENCE)
    (folder / "nb_importer").mkdir()  # a notebook's cells are the file: its kernel cell imports the reference
    fixtures.write_notebook(folder / "nb_importer" / f"{P1.id}.ipynb", hostile.ATTACKS["imports the reference"][0])
    proc = run_command(["grade", str(folder), "--puzzle", "1", "--timeout", "5", "--seed", "7", "--jobs", "2",
                        "--out", str(tmp_path / "book")], ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "book" / "grades.csv").open())}
    for attack in hostile.ATTACKS:
        row = rows[student_name(attack)]
        record = json.loads((tmp_path / "book" / "students" / f"{student_name(attack)}.json").read_text())
        check_verdict(attack, row["status"], row["message"], "\n".join(record["problems"]))
    assert rows["honest"]["status"] == "passed", rows["honest"]
    assert rows["printer"]["status"] == "passed", rows["printer"]
    assert rows["linker"]["status"] == "not attempted"
    assert rows["nb_importer"]["status"] == "failed" and "imports `add_kernel` from `solutions" in \
        rows["nb_importer"]["message"]
    notebook = json.loads((tmp_path / "book" / "students" / "nb_importer.json").read_text())
    assert len(notebook["problems"]) == 1, notebook["problems"]  # the set-up cell's imports (os, sys) are not run
    linker = (tmp_path / "book" / "feedback" / "linker.txt").read_text()
    assert f"a symbolic link (to {REFERENCE}), not graded" in linker, linker
    assert "forged report" not in (tmp_path / "book" / "grades.csv").read_text()
    honest = json.loads((tmp_path / "book" / "students" / "honest.json").read_text())
    if os.geteuid() == 0:  # a user of its own, and the references under an empty folder
        assert any("reference solutions hidden" in p for p in honest["protections"]), honest["protections"]


def test_hostile_submissions_on_the_gradescope_path(autograder):  # noqa: F811 - the fixture
    """The autograder's container holds no reference; a submission that imports one, links to one, or opens
    one under another name gets no point, and says why."""
    base, names, _ = autograder
    assert not any(name.startswith("solutions/") for name in names)
    opener, _, _ = hostile.ATTACKS["open under another name"]
    started = [run_autograder(base, "importer", {"answers.py": hostile.ATTACKS["imports the reference"][0]}),
               run_autograder(base, "opener", {"answers.py": opener}),
               run_autograder(base, "walker", {"answers.py": hostile.ATTACKS["walks the stack"][0]})]
    linker_root = lay_out(base, "linker", {})
    (linker_root / "submission" / "answers.py").symlink_to(REFERENCE)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(AUTOGRADER_ROOT=str(linker_root), PYTHONPATH=pythonpath_without_checkout(), PUZZLES_COMPILE_CHECK="0")
    started.append((linker_root, subprocess.Popen([str(linker_root / "run_autograder")], cwd=linker_root, env=env,
                                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    importer, opened, walker, linker = [results_of(root, proc) for root, proc in started]
    for results in (importer, opened, walker):
        assert results["score"] == 0.0 and results["tests"][0]["status"] == "failed"
    assert "imports `add_kernel` from `solutions.p01_constant_add`" in importer["tests"][0]["output"]
    assert "imports `open` from `builtins`" in opened["output"]
    assert "reads `._getframe`" in walker["tests"][0]["output"]
    assert linker["score"] == 0.0 and "a symbolic link" in json.dumps(linker), linker


def test_the_forked_run_keeps_only_its_result_pipe():
    """The child that runs a kernel holds stdin, stdout, stderr and the pipe its results go back on: no
    report channel, no compile check pipe, nothing else of its parent's."""
    read_fd, write_fd = os.pipe()  # stands for the class worker's report channel
    try:
        (status, open_fds), = run_in_child([lambda: sorted(int(n) for n in os.listdir("/proc/self/fd"))], 30)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert status == "ok"
    assert read_fd not in open_fds and write_fd not in open_fds
    assert len([fd for fd in open_fds if fd > 2]) <= 2, open_fds  # its result pipe (and the listing's own)


class Explodes:
    def __reduce__(self):
        return (os.system, ("touch EXPLODED",))


def test_a_frame_that_is_not_data_runs_nothing(tmp_path, monkeypatch):
    """What a kernel's process sends back is read as data only: a pickle that names a function is refused."""
    monkeypatch.chdir(tmp_path)
    read_fd, write_fd = os.pipe()
    send_frame(write_fd, ("ok", Explodes()))
    os.close(write_fd)
    status, message = FrameReader(read_fd).receive(5)
    assert status == "crash" and "not data" in message and "interfered" in message, message
    assert not (tmp_path / "EXPLODED").exists()
    read_fd, write_fd = os.pipe()
    send_frame(write_fd, ("ok", {"x": pickle.loads(pickle.dumps(fixtures.P1.sizes))}))
    os.close(write_fd)
    assert FrameReader(read_fd).receive(5)[0] == "ok"


FIND_CHANNEL = """
import gc, io, os, stat

def channel():
    for thing in gc.get_objects():
        if isinstance(thing, io.TextIOWrapper) and thing.writable() and not thing.closed:
            try:
                if thing.fileno() > 2 and stat.S_ISFIFO(os.fstat(thing.fileno()).st_mode):
                    return thing
            except (OSError, ValueError):
                continue
    return None
"""


# As if the worker's process had loaded CUDA (where a fork is otherwise avoided): its runs must still be forked.
CUDA_LOADED = """
import torch
torch.cuda.is_initialized = lambda: True
"""


@pytest.mark.usefixtures("without_compile_check")
@pytest.mark.parametrize("cuda_loaded", [False, True], ids=["plain", "cuda-loaded"])
def test_a_kernel_cannot_reach_the_report_channel(tmp_path, worker_trigger, cuda_loaded):
    """The kernel's forked child looks for the worker's report channel as the forger did (in the process's
    objects) and writes a pass for puzzle 2: the descriptor is closed there, nothing reaches the grader. So too
    where the worker's process has loaded CUDA (on a GPU machine), which the grader's own fork otherwise avoids."""
    from puzzles.classroom.roster import Options, Student, grade_student

    marker = worker_trigger.folder / "child-write"
    worker_trigger((CUDA_LOADED if cuda_loaded else "") + FIND_CHANNEL + f"""
import puzzles.grading.runs as runs

real_run = runs.run_interpreted

def forging_run(*args, **kwargs):
    found = channel()
    try:
        found.write('{{"event": "puzzle", "number": 2, "status": "passed", "evidence": []}}\\n')
        found.flush()
        outcome = "written"
    except (AttributeError, OSError, ValueError) as err:
        outcome = type(err).__name__
    with open({str(marker)!r}, "a") as out:
        out.write(outcome + "\\n")
    return real_run(*args, **kwargs)

runs.run_interpreted = forging_run
""")
    (tmp_path / "a.py").write_text(fixtures.HEADER + fixtures.reference_source(P1) + fixtures.DO_NOTHING.replace(
        "add_kernel", "add_mask2_kernel"))
    result = grade_student(Student("reacher", [tmp_path / "a.py"]), [P1, catalog.get(2)], Options(timeout=2),
                           seed=1, uid=None)
    assert [v.status for v in result.verdicts] == ["passed", "failed"], result.verdicts
    assert "written" not in marker.read_text() and marker.read_text().strip(), marker.read_text()
    assert not any("forged report" in v.message for v in result.verdicts)


@pytest.mark.usefixtures("without_compile_check")
def test_a_forged_report_fails_every_puzzle_and_says_what_was_attempted(tmp_path, worker_trigger):
    """Should anything write the report channel (here the test's own code in the worker: no submission can),
    a verdict out of order (puzzle 2's while puzzle 1 is graded, with outputs the spec made) voids every verdict
    of that worker, and the message names what was attempted."""
    from puzzles.classroom.roster import Options, Student, grade_student

    worker_trigger(FIND_CHANNEL + """
import json
import puzzles.submissions.grade as grade
from puzzles.classroom.worker import encode_tensor
from puzzles.course import catalog
from puzzles.grading.cases import case_from_spec
from puzzles.grading.job import size_list

real_grade = grade.grade_puzzle

def forging_grade(submission, p, **kwargs):
    if p.number == 1:
        two = catalog.get(2)
        evidence = [{"sizes": s, "seed": kwargs["seed"], "index": i,
                     "output": encode_tensor(case_from_spec(two.spec, two, s, kwargs["seed"], i).expected)}
                    for i, s in enumerate(size_list(two, None, None, None))]
        channel().write(json.dumps({"event": "puzzle", "number": 2, "status": "passed", "reason": "",
                                    "seconds": 0.0, "source": "", "evidence": evidence}) + "\\n")
        channel().flush()
    return real_grade(submission, p, **kwargs)

grade.grade_puzzle = forging_grade
""")
    (tmp_path / "a.py").write_text(fixtures.HEADER + fixtures.reference_source(P1) + fixtures.DO_NOTHING.replace(
        "add_kernel", "add_mask2_kernel"))
    result = grade_student(Student("forger", [tmp_path / "a.py"]), [P1, catalog.get(2)], Options(timeout=2),
                           seed=1, uid=None)
    assert [v.status for v in result.verdicts] == ["failed", "failed"], result.verdicts
    for verdict in result.verdicts:
        assert "forged report" in verdict.message and "'puzzle' event for puzzle 2" in verdict.message, verdict
        assert "where the verdict on puzzle 1 was due" in verdict.message, verdict.message


def test_the_worker_reads_starters_not_answers(monkeypatch, tmp_path):
    """Grading reads of a reference only its starter and signature: preloaded, they answer without solutions/,
    and the starters file the Gradescope zip ships holds no solution line."""
    from puzzles.course import solution_source

    record = solution_source.starters_record(catalog.all_puzzles())
    for p in catalog.all_puzzles():
        starter = record[p.solution_module]["starter"]
        assert "Finish me" in starter and solution_source.reference_source(p) not in starter, p.id
    monkeypatch.setattr(solution_source, "PRELOADED", {})
    solution_source.preload_starters([P1])
    monkeypatch.setattr(solution_source, "solution_path", lambda p: shutil.rmtree(tmp_path / "nowhere"))
    assert solution_source.is_starter(solution_source.starter_source(P1), P1)
    assert P1.expected_signature().startswith("add_kernel(")
