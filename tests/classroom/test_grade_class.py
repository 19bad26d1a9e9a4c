"""Grading a class: sandboxed workers, verdicts the grader checks itself, the gradebook, and the
per-student jobs whose merge equals the roster's gradebook (issue 25); what grading loads (issue 21)."""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import classroom_fixtures as fixtures
import pytest
import torch
from commands import run_command

from puzzles.classroom.isolation import GIB, UID_BASE, Limits, can_switch_user, job_uid
from puzzles.classroom.roster import check_evidence
from puzzles.classroom.worker import encode_tensor
from puzzles.course import catalog
from puzzles.course.solution_source import reference_source
from puzzles.grading.cases import case_from_spec
from puzzles.grading.job import size_list
from puzzles.submissions import grade

ROOT = Path(__file__).resolve().parents[2]
P1_ID = catalog.get(1).id
worker_trigger = fixtures.worker_trigger  # the fixture, found here by pytest
without_compile_check = fixtures.without_compile_check  # the fixture, found here by pytest
FAST = ["--puzzle", "1", "--puzzle", "2", "--timeout", "2", "--seed", "7"]


def run_grade(*args: str) -> subprocess.CompletedProcess:
    """The grading command, run in this process (tests/support/commands.py); its `pid` gives its jobs' users
    (job_uid(slot) of that pid)."""
    return run_command(["grade", *args], ROOT)


def rows(table: Path) -> list[dict]:
    return list(csv.DictReader(table.open()))


def digests(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def job_processes(grader_pid: int | None = None) -> list[str]:
    """Processes of the jobs' own users (the killer's orphans, a loader still looping): of the grader
    `grader_pid`'s jobs only, when given (tests run in parallel may be grading a class of their own)."""
    left = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
            uid = int(next(line.split()[1] for line in lines if line.startswith("Uid:")))
        except (OSError, StopIteration, ValueError):
            continue
        if any(line.startswith("State:") and line.split()[1] in ("Z", "X") for line in lines):
            continue  # dead, only waiting to be reaped
        mine = grader_pid is None or UID_BASE + grader_pid * 256 <= uid < UID_BASE + (grader_pid + 1) * 256
        if uid >= UID_BASE and mine:
            left.append(status.parent.name)
    return left


def graded_class(folder: Path, book: Path, students: list[str]) -> subprocess.CompletedProcess:
    """Grade the class folder with two jobs; check each student's verdicts and reasons (classroom_fixtures.py)."""
    proc = run_grade(str(folder), *FAST, "--jobs", "2", "--out", str(book))
    assert proc.returncode == 0, proc.stdout + proc.stderr  # graded, though students failed
    got = {(r["student"], int(r["puzzle"][:2])): r for r in rows(book / "grades.csv")}
    assert {student for student, _ in got} == set(students)
    for student in students:
        for number, status in fixtures.EXPECTED[student].items():
            row = got[(student, number)]
            assert row["status"] == status, (student, number, row)
            assert row["seed"] == "7"
    for (student, number), words in fixtures.REASONS.items():
        if student in students:
            assert words in got[(student, number)]["message"], (student, number, got[(student, number)])
    return proc


@pytest.mark.usefixtures("without_compile_check")  # graded in the sandbox by the test after this one
def test_a_class_with_hostile_students_is_graded_right_and_left_untouched(tmp_path):
    folder = fixtures.build_class(tmp_path)
    shutil.rmtree(folder / "switcher")  # its subject is the compile check: the next test
    before = digests(folder)
    proc = graded_class(folder, tmp_path / "book", [s for s in fixtures.EXPECTED if s != "switcher"])
    if can_switch_user():  # as root each worker is a user of its own: no write outside its folder
        assert digests(folder) == before
        assert not job_processes(proc.pid), "processes of the jobs' users were left behind"
        record = json.loads((tmp_path / "book" / "students" / "tamperer.json").read_text())
        assert any("unprivileged user" in p for p in record["protections"])
        assert any(p.startswith("processes limit") for p in record["protections"])
    # The vandal's class is refused before anything runs (a write outside the folder as the worker's own
    # user: test_a_worker_killed_mid_puzzle_..., from the test side); its kernel is still graded.
    record = json.loads((tmp_path / "book" / "students" / "tamperer.json").read_text())
    assert any(fixtures.REFUSED in p and "line 5" in p for p in record["problems"]), record["problems"]
    honest = json.loads((tmp_path / "book" / "students" / "honest_ref.json").read_text())
    assert honest["points"] == honest["max_points"] == 2.0
    killer = (tmp_path / "book" / "feedback" / "killer.txt").read_text()
    assert "add_kernel uses TRAP, which grading does not define" in killer and fixtures.REFUSED in killer, killer
    assert "students" in proc.stderr  # the progress bar


def test_a_student_who_switches_the_compile_check_off_is_still_checked_in_the_sandbox(tmp_path):
    """The compile check runs in each student's sandbox (as the student's user, the submission loaded beside it):
    the switcher's kernel, which the interpreter runs, fails it; the honest student's passes it."""
    folder = fixtures.build_class(tmp_path)
    for student in folder.iterdir():
        if student.name not in ("switcher", "honest_ref"):
            shutil.rmtree(student)
    graded_class(folder, tmp_path / "book", ["switcher", "honest_ref"])


@pytest.mark.usefixtures("without_compile_check")
def test_per_student_jobs_merged_give_the_roster_gradebook(tmp_path):
    folder = tmp_path / "class"
    whole = fixtures.build_class(tmp_path / "all")
    folder.mkdir()
    for name in ("honest_ref", "starter"):  # one passing both puzzles, one failing both
        (whole / name).rename(folder / name)
    roster = run_grade(str(folder), *FAST, "--jobs", "2", "--out", str(tmp_path / "roster"))
    assert roster.returncode == 0, roster.stderr
    jobs = [run_grade("--student", str(d), *FAST, "--out", str(tmp_path / "results" / f"{d.name}.json"))
            for d in sorted(folder.iterdir())]  # a batch system's jobs, one after the other here
    assert all(job.returncode == 0 for job in jobs), [job.stderr for job in jobs]
    merged = run_grade("--merge", str(tmp_path / "results"), "--out", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr

    def table(book: str) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows(tmp_path / book / "grades.csv")]

    assert table("roster") == table("merged") and len(table("roster")) == 4


def test_a_claimed_pass_is_checked_against_the_spec():
    p = catalog.get(1)
    sizes = [dict(s) for s in p.sizes]
    right = [{"sizes": s, "seed": 5, "index": i, "output": encode_tensor(case_from_spec(p.spec, p, s, 5, i).expected)}
             for i, s in enumerate(sizes)]
    assert check_evidence(p, 5, right) is None
    wrong = [dict(item, output=encode_tensor(torch.zeros(s["N0"]))) for item, s in zip(right, sizes, strict=True)]
    assert "differ from the spec" in check_evidence(p, 5, wrong)
    assert len(right) > 1 and "no output" in check_evidence(p, 5, right[:1])
    assert "seed" in check_evidence(p, 6, right)
    huge = [dict(right[0], sizes={**sizes[0], "N0": 10**6})]
    assert "does not have" in check_evidence(p, 5, huge)
    assert "outputs for one puzzle" in check_evidence(p, 5, right * 100)  # each would cost an input build here


def test_grading_runs_the_assignments_a_kernel_needs_and_skips_experiments():
    source = ("import triton\nCONFIGS = [triton.Config({'B0': b}) for b in (32, 64)]\n"
              "x = torch.rand(8)\nresult = test(k, spec)\nz = k[(1,)](x)\nHELPER = make(CONFIGS)\n"
              "@triton.autotune(configs=HELPER, key=['N0'])\n@triton.jit\ndef k(x_ptr, N0):\n    pass\n")
    chosen = grade.select_definitions(ast.parse(source).body)
    names = [ast.unparse(n).split(" =")[0].split("\n")[0] for n in chosen]
    assert names == ["import triton", "CONFIGS", "HELPER", "@triton.autotune(configs=HELPER, key=['N0'])"]


def test_grading_never_runs_an_assignment_into_another_object():
    source = ("import os\nimport puzzles.grading.judging as judging\nos.environ['PUZZLES_COMPILE_CHECK'] = '0'\n"
              "judging.values_close = abs\nos.environ['A']: str = '1'\nB, [C, *D] = 1, [2, 3]\nE = F = 4\n")
    chosen = grade.select_definitions(ast.parse(source).body)
    assert [ast.unparse(n) for n in chosen] == ["import os", "import puzzles.grading.judging as judging",
                                                "B, [C, *D] = (1, [2, 3])", "E = F = 4"]


def test_a_notebook_that_switches_the_compile_check_off_is_still_checked(tmp_path, monkeypatch):
    """`os.environ[...] = ...` is not run, and an assignment a function needs that sets a variable
    is undone before grading: host Python in the kernel still fails the compile check."""
    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    (tmp_path / "a.py").write_text(fixtures.HEADER + fixtures.SWITCH_OFF_COMPILE_CHECK)
    (g,) = grade.grade([tmp_path / "a.py"], [catalog.get(1)], timeout=10)
    assert g.status == "failed" and fixtures.SWITCHER_REASON in g.reason, g.reason
    assert "PUZZLES_COMPILE_CHECK" not in os.environ


def test_what_loading_prints_never_reaches_the_scoreboards_stdout(tmp_path, capsys, monkeypatch):
    """What loading prints (an import that prints: `import this`, allowed here only, as no import of the load
    rules' own list prints) goes to stderr: stdout is the scoreboard's (`--json` lines a script reads), and a
    printed verdict must not pass for one."""
    from puzzles.submissions import load_rules

    monkeypatch.setattr(load_rules, "IMPORTABLE_MODULES", load_rules.IMPORTABLE_MODULES | {"this"})
    monkeypatch.delitem(sys.modules, "this", raising=False)  # imported once already: it would print nothing
    (tmp_path / "a.py").write_text(fixtures.HEADER + "import this\n\n\n"
                                   + reference_source(catalog.get(1)).replace("10.0", "11.0"))
    (g,) = grade.grade([tmp_path / "a.py"], [catalog.get(1)], timeout=10)
    out, err = capsys.readouterr()
    zen = "Beautiful is better than ugly."
    assert g.status == "failed" and zen not in out and zen in err


def test_loading_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    """No allowed construct sets a variable any more (`os.environ.update(...)` is refused); were one to
    (the test stands in for it), the grader's own variables are put back before the kernels are graded."""
    real = grade.load_file

    def load_and_switch_off(path):
        os.environ["PUZZLES_COMPILE_CHECK"] = "0"
        return real(path)

    monkeypatch.delenv("PUZZLES_COMPILE_CHECK", raising=False)
    monkeypatch.setattr(grade, "load_file", load_and_switch_off)
    (tmp_path / "a.py").write_text(fixtures.HEADER + fixtures.SWITCH_OFF_COMPILE_CHECK)
    (g,) = grade.grade([tmp_path / "a.py"], [catalog.get(1)], timeout=10)
    assert g.status == "failed" and fixtures.SWITCHER_REASON in g.reason, g.reason
    assert "PUZZLES_COMPILE_CHECK" not in os.environ


@pytest.mark.parametrize("content", [{"cells": [{"cell_type": "code", "source": [1, 2]}]}, {"cells": 5}, [1, 2],
                                     {"cells": ["x"]}], ids=["source", "cells", "list", "cell"])
def test_a_notebook_of_the_wrong_shape_cannot_be_read_and_the_grader_goes_on(tmp_path, content):
    """Valid JSON that is no notebook fails its puzzle as unreadable, never the grader (a "grader error")."""
    from puzzles.classroom.roster import attempted

    path = tmp_path / f"{P1_ID}.ipynb"
    path.write_text(json.dumps(content))
    assert attempted([path], [catalog.get(1)]) == set()
    (g,) = grade.grade([path], [catalog.get(1)])
    assert g.status == "failed" and "cannot be read (ValueError: not a notebook" in g.reason, g.reason


def test_an_autotuned_kernel_with_module_level_configs_passes(tmp_path):
    p = catalog.get(20)
    source = reference_source(p)
    start, end = source.index("configs=[") + len("configs="), source.index("],") + 1
    configs = source[start:end]
    text = ("import torch\nimport triton\nimport triton.language as tl\n\n"
            f"CONFIGS = [c for c in {configs}]\n\n" + source[:start] + "CONFIGS" + source[end:])
    (tmp_path / "a.py").write_text(text)
    (g,) = grade.grade([tmp_path / "a.py"], [p], timeout=10)
    assert g.status == "passed", g.reason


def test_a_renamed_kernel_is_named(tmp_path):
    p = catalog.get(2)
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(p).replace(p.kernel_name, "my_kernel"))
    (g,) = grade.grade([tmp_path / "a.py"], [p])
    assert g.status == "not attempted"
    assert f"no kernel named {p.kernel_name}; found my_kernel with the same parameters" in g.reason


@pytest.mark.usefixtures("without_compile_check")
@pytest.mark.parametrize("flag", ["--isolate"])
def test_one_learner_isolated_keeps_the_scoreboard(tmp_path, flag):
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(catalog.get(1)))
    proc = run_grade(str(tmp_path / "a.py"), flag, *FAST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✓   1 Constant add" in proc.stdout and "1 passed, 0 failed, 1 not attempted" in proc.stdout


def test_students_are_found_per_folder_or_per_file(tmp_path):
    from puzzles.__main__ import is_class_folder
    from puzzles.classroom.roster import discover

    for name in ("ada", "bob"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / f"{P1_ID}.ipynb").write_text("{}")
        (tmp_path / "files" / f"{name}.py").parent.mkdir(exist_ok=True)
        (tmp_path / "files" / f"{name}.py").write_text("")
    roster = discover([tmp_path / "class"])
    assert [(s.name, [f.name for f in s.files]) for s in roster] == [("ada", [f"{P1_ID}.ipynb"]),
                                                                     ("bob", [f"{P1_ID}.ipynb"])]
    # `grade student_*`: each folder is a student (not one learner whose kernels overwrite each other)
    assert is_class_folder([str(tmp_path / "class" / "ada"), str(tmp_path / "class" / "bob")])
    assert is_class_folder([str(tmp_path / "class")])
    assert not is_class_folder([str(tmp_path / "class" / "ada")])  # one learner's folder: the scoreboard
    assert [s.name for s in discover([tmp_path / "files"], per_file=True)] == ["ada", "bob"]


def test_an_endless_loop_while_loading_is_stopped_in_the_scoreboard_too(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grade, "LOAD_SECONDS", 1.0)
    p = catalog.get(1)
    spin = ("SPIN = sum(0 for _ in range(1 << 62))  # allowed: it only computes, for ever\n\n\n"
            "def spin():\n    return SPIN\n\n\n")
    (tmp_path / "a.py").write_text(fixtures.HEADER + spin + reference_source(p))
    (g,) = grade.grade([tmp_path / "a.py"], [p])
    assert g.status == "passed"  # the loop is reported (stderr), the kernel still graded
    assert "line 5: did not finish within 1 s while loading" in capsys.readouterr().err


@pytest.mark.parametrize("number", [p.number for p in catalog.all_puzzles()])
def test_the_grader_confirms_right_outputs_of_every_puzzle(number):
    """The check in the grader's process accepts the spec's own outputs at every size of every puzzle
    (sizes with floats, tensor lists, strided inputs, zero-initialised outputs) and rejects poison."""
    p = catalog.get(number)
    sizes = size_list(p, None, None, None)
    right = [{"sizes": dict(s), "seed": 3, "index": i,
              "output": encode_tensor(case_from_spec(p.spec, p, dict(s), 3, i).expected)} for i, s in enumerate(sizes)]
    assert check_evidence(p, 3, right) is None
    first = case_from_spec(p.spec, p, dict(sizes[0]), 3, 0).expected
    poisoned = [dict(right[0], output=encode_tensor(torch.full_like(first, 7)))] + right[1:]
    assert check_evidence(p, 3, poisoned) is not None


@pytest.mark.usefixtures("without_compile_check")
def test_without_a_user_of_its_own_grading_works_and_says_what_is_missing(tmp_path):
    from puzzles.classroom.roster import Options, Student, grade_student

    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(catalog.get(1)))
    result = grade_student(Student("solo", [tmp_path / "a.py"]), [catalog.get(1)], Options(timeout=2), seed=1, uid=None)
    assert [v.status for v in result.verdicts] == ["passed"], result
    assert any("own user" in m for m in result.missing_protections)
    assert any("memory limit" in a for a in result.protections)
    # the process count is per user: on the grader's own user it would count the grader's processes too
    assert not any(a.startswith("processes limit") for a in result.protections)
    assert any(m.startswith("processes limit") for m in result.missing_protections)


@pytest.mark.usefixtures("without_compile_check")
def test_the_memory_watch_stops_a_process_tree_past_its_limit(tmp_path, worker_trigger):
    """A CUDA machine's memory limit (no address-space limit there), tested on any machine: the grader
    finds a child process that hoards memory in the worker's tree (64 MiB every 50 ms, up to 16 GiB,
    while the worker waits for it: only a measure of the whole tree sees it), kills the tree, and says why."""
    from puzzles.classroom.roster import Options, Student, grade_student

    pid_file = tmp_path / "hoarder.pid"
    worker_trigger(f"""
        import os, time
        import puzzles.submissions.grade as grade

        real_collect = grade.collect

        def collect_after_a_hoard(paths, puzzles):
            if os.fork() == 0:
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                chunks = []
                for _ in range(256):
                    chunks.append(b"x" * (1 << 26))
                    time.sleep(0.05)
                os._exit(0)
            os.wait()
            return real_collect(paths, puzzles)

        grade.collect = collect_after_a_hoard
    """)
    p = catalog.get(1)
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(p))
    options = Options(timeout=2, limits=Limits(memory_bytes=GIB, address_space=False))
    result = grade_student(Student("hog", [tmp_path / "a.py"]), [p], options, seed=1, uid=None)
    (verdict,) = result.verdicts
    assert verdict.status == "failed", verdict
    assert "loading the submission used more than the memory limit of 1 GiB" in verdict.message, verdict
    assert any("memory limit 1 GiB" in a for a in result.protections)
    assert not any("address space" in a for a in result.protections)
    assert_stopped(int(pid_file.read_text()), "the hoarding child")


@pytest.mark.usefixtures("without_compile_check")
def test_a_worker_killed_mid_puzzle_fails_that_puzzle_and_a_fresh_one_grades_the_rest(tmp_path, worker_trigger):
    """The first worker forks a child that would outlive it, then kills itself while grading puzzle 1:
    puzzle 1 fails with that reason, a fresh worker grades puzzle 2, the child is gone. As root the
    worker is a user of its own and first tries to write another student's file: it cannot."""
    from puzzles.classroom.roster import Options, Student, grade_student

    victim = tmp_path / "other_student.py"
    victim.write_text("# another student's answers\n")
    shared = worker_trigger.folder
    worker_trigger(f"""
        import os, signal, time
        from pathlib import Path
        import puzzles.submissions.grade as grade
        import puzzles.classroom.isolation as isolation

        real_apply, real_grade = isolation.apply_limits, grade.grade_puzzle

        def apply_then_tamper(*args, **kwargs):
            done = real_apply(*args, **kwargs)
            try:
                with open({str(victim)!r}, "a") as other:
                    other.write("# tampered")
                done.active.append("tamper attempt: it wrote")
            except OSError as err:
                done.missing.append(f"tamper attempt: {{type(err).__name__}}")
            return done

        def grade_then_die(submission, p, **kwargs):
            if p.number == 1 and Path.cwd().name == "run0":
                if os.fork() == 0:  # it outlives the worker, in its session (and as its user)
                    os.closerange(0, 1024)  # not the report's pipe: the grader sees the worker die at once
                    Path({str(shared / "orphan.pid")!r}).write_text(str(os.getpid()))
                    time.sleep(600)
                    os._exit(0)
                time.sleep(0.5)
                os.kill(os.getpid(), signal.SIGKILL)
            return real_grade(submission, p, **kwargs)

        isolation.apply_limits, grade.grade_puzzle = apply_then_tamper, grade_then_die
    """)
    own_user = can_switch_user()
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(catalog.get(1)) + "\n\n"
                                   + reference_source(catalog.get(2)))
    before = digests(tmp_path)
    result = grade_student(Student("killer", [tmp_path / "a.py"]), [catalog.get(1), catalog.get(2)],
                           Options(timeout=2), seed=1, uid=job_uid(0) if own_user else None)
    assert [v.status for v in result.verdicts] == ["failed", "passed"], result.verdicts
    assert "the kernel killed the process that graded it" in result.verdicts[0].message
    assert_stopped(int((shared / "orphan.pid").read_text()), "the dead worker's child")
    if own_user:
        assert "tamper attempt: PermissionError" in result.missing_protections, result.missing_protections
        assert digests(tmp_path) == before
        assert not job_processes(os.getpid())


@pytest.mark.usefixtures("without_compile_check")
def test_a_forged_pass_from_the_worker_is_not_confirmed(tmp_path, worker_trigger):
    """The parent's evidence check, behind the load rules: a worker whose `test` says "passed" with no
    output (puzzle 1), and one whose judge passes every output of a kernel that writes nothing
    (puzzle 2), both get "could not confirm"."""
    from puzzles.classroom.roster import Options, Student, grade_student

    worker_trigger("""
        import puzzles.submissions.grade as grade
        import puzzles.grading as harness
        from puzzles.grading.result import SizeOutcome

        real_test = grade.test

        class Passed:
            passed, seconds, seed = True, 0.0, 1

            def reason(self):
                return "passed"

        def forged_test(kernel, spec, puzzle=None, **kwargs):
            return Passed() if puzzle.number == 1 else real_test(kernel, spec, puzzle=puzzle, **kwargs)

        grade.test = forged_test
        harness.judge_runs = lambda kernel, cases, runs: [SizeOutcome(c.sizes, c.seed, "passed") for c in cases]
    """)
    nothing = fixtures.DO_NOTHING + fixtures.DO_NOTHING.replace("add_kernel", "add_mask2_kernel")
    (tmp_path / "a.py").write_text(fixtures.HEADER + nothing)
    result = grade_student(Student("forger", [tmp_path / "a.py"]), [catalog.get(1), catalog.get(2)],
                           Options(timeout=2), seed=1, uid=None)
    assert [v.status for v in result.verdicts] == ["failed", "failed"], result.verdicts
    first, second = (v.message for v in result.verdicts)
    assert "could not confirm: no output at" in first, first
    assert "could not confirm" in second and "differ from the spec" in second, second


def assert_stopped(pid: int, what: str) -> None:
    deadline = time.monotonic() + 5
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)  # SIGKILL is delivered at once; the reaping is init's
    assert not running(pid), f"{what} was left behind"


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1] != "Z"
    except OSError:
        return False
