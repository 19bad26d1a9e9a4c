"""The class grader's workers forked from a warm launcher (puzzles/classroom/launcher.py) are set up as the
workers it starts itself: same protections, folder, environment, standard streams and nothing of the
launcher's; a launcher that died is replaced; one that cannot start leaves the grader starting workers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import classroom_fixtures as fixtures
import pytest

from puzzles.classroom import isolation, launcher
from puzzles.classroom.isolation import can_switch_user, job_uid
from puzzles.classroom.roster import Options, Student, grade_student
from puzzles.course import catalog
from puzzles.course.solution_source import reference_source

pytestmark = pytest.mark.skipif(not launcher.can_fork_workers(), reason="workers are forked only without CUDA")
worker_trigger = fixtures.worker_trigger  # the fixture, found here by pytest
without_compile_check = fixtures.without_compile_check  # the fixture, found here by pytest
P1 = catalog.get(1)

# In the worker, when it grades: what a started worker and a forked one must agree on.
DESCRIBE = """
    import json, os, tempfile
    from pathlib import Path
    import puzzles.submissions.grade as grade

    real_grade = grade.grade_puzzle

    def describe_then_grade(submission, p, **kwargs):
        streams = []
        for fd in sorted(os.listdir("/proc/self/fd"), key=int):
            try:
                streams.append(os.readlink(f"/proc/self/fd/{{fd}}").split(":")[0].replace(os.getcwd(), "FOLDER"))
            except OSError:
                pass  # the listing's own
        Path({out!r}, f"{{os.getpid()}}.json").write_text(json.dumps({{
            "session_leader": os.getsid(0) == os.getpid(),
            "streams": streams,
            "folder": os.getcwd(), "home": os.environ["HOME"], "temp": tempfile.gettempdir(),
            "environment": sorted(os.environ), "uid": os.getuid(),
        }}))
        return real_grade(submission, p, **kwargs)

    grade.grade_puzzle = describe_then_grade
"""


def grade_one(tmp_path: Path, forked: bool, worker_trigger, monkeypatch) -> tuple[object, dict]:
    """Grade puzzle 1's reference with a worker forked or started; the worker's description of itself."""
    out = worker_trigger.folder / ("forked" if forked else "started")
    out.mkdir()
    out.chmod(0o777)  # written by the worker's own user (it cannot enter tmp_path)
    worker_trigger(DESCRIBE.format(out=str(out)))
    monkeypatch.setattr(isolation, "can_fork_workers", lambda: forked)
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(P1))
    result = grade_student(Student("ada", [tmp_path / "a.py"]), [P1], Options(timeout=2), seed=1,
                           uid=job_uid(0) if can_switch_user() else None)
    assert list(out.glob("*.json")), repr(result)[:3000]
    (record,) = [json.loads(p.read_text()) for p in out.glob("*.json")]
    return result, record


def test_a_forked_worker_is_set_up_as_a_started_one(tmp_path, worker_trigger, monkeypatch):
    started, started_record = grade_one(tmp_path, False, worker_trigger, monkeypatch)
    forked, forked_record = grade_one(tmp_path, True, worker_trigger, monkeypatch)
    assert [v.status for v in started.verdicts] == [v.status for v in forked.verdicts] == ["passed"]
    assert forked.protections == started.protections and forked.missing_protections == started.missing_protections
    for record in (started_record, forked_record):
        folder = record["folder"]
        assert record["session_leader"] and record["home"] == folder and record["temp"] == folder
    # The same kinds of open files in the same places (standard streams, the report's pipe, the compilers'
    # pipes): no socket, so nothing leads back to the launcher.
    assert forked_record["streams"] == started_record["streams"]
    assert "socket" not in forked_record["streams"]
    assert forked_record["environment"] == started_record["environment"]
    assert forked_record["uid"] == started_record["uid"]


@pytest.mark.usefixtures("without_compile_check")
def test_a_launcher_that_died_is_replaced(tmp_path):
    (tmp_path / "a.py").write_text(fixtures.HEADER + reference_source(P1))
    student = Student("ada", [tmp_path / "a.py"])

    def grade() -> list[str]:
        return [v.status for v in grade_student(student, [P1], Options(timeout=2), seed=1).verdicts]

    assert grade() == ["passed"]
    first = list(launcher.LAUNCHERS.values())[-1]  # the one used last
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()
    assert grade() == ["passed"]
    second = list(launcher.LAUNCHERS.values())[-1]
    assert second is not first and second.process.poll() is None


def test_a_launcher_that_cannot_start_is_not_tried_again(tmp_path, monkeypatch):
    # Its Python cannot start (no standard library there): the worker is started instead (None).
    env = {**isolation.worker_environment(tmp_path), "PYTHONHOME": str(tmp_path / "nowhere")}
    assert launcher.launch(tmp_path, env, 2) is None
    monkeypatch.setattr(launcher, "Launcher", None)  # another try would fail here
    assert launcher.launch(tmp_path, env, 2) is None


def test_a_notebook_kernel_forked_from_the_warm_parent_is_set_up_as_a_started_one(tmp_path):
    # tests/support/warm_forks.py (the notebook executions' kernels): the same folder, path and client's pid (it ends
    # with its client) as a kernel jupyter_client starts; besides, a session of its own whose parent is the fork
    # server, with torch and Triton loaded (under this process's TRITON_INTERPRET, which the kernel has too) and not
    # `puzzles`.
    import nbformat
    from nbclient import NotebookClient
    from warm_forks import kernels_forked_from_a_warm_parent

    code = ("import json, os, sys\nprint(json.dumps({'cwd': os.getcwd(), 'path': sys.path, 'client': "
            "get_ipython().kernel.parent.parent_handle, 'parent': os.getppid(), 'leader': os.getsid(0) == os.getpid(), "
            "'loaded': [m in sys.modules for m in ('torch', 'triton', 'puzzles')]}))")

    def kernel(forked: bool) -> dict:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        with kernels_forked_from_a_warm_parent() if forked else contextlib.nullcontext():
            NotebookClient(nb, timeout=120, kernel_name="python3",
                           resources={"metadata": {"path": str(tmp_path)}}).execute()
        return json.loads(nb.cells[0].outputs[0]["text"])

    started, forked = kernel(False), kernel(True)
    assert [forked[k] for k in ("cwd", "path", "client")] == [started[k] for k in ("cwd", "path", "client")]
    assert started["parent"] == os.getpid() != forked["parent"] and forked["leader"]
    assert forked["loaded"] == [True, True, False]
