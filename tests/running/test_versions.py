"""The supported Triton range, its refusal message, and the doctor on a machine missing packages.

`make versions` runs this file under each supported Triton (scripts/triton_versions.py)."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest
from commands import run_python

from puzzles.cli import doctor
from puzzles.course import catalog
from puzzles.grading import test as grade
from puzzles.running import compat, interpreter_hooks

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_triton_is_supported_and_its_interpreter_internals_exist():
    # Found by what they receive, whatever their names (tests/running/test_interpreter_hooks.py proves each effective).
    assert compat.triton_problem() is None
    assert interpreter_hooks.hooks_problem() is None


@pytest.mark.parametrize("version", [
    "3.5.0", "3.5.1", "3.6.0", "3.7.1", "3.7.0+git9f2d", "3.8.0", "3.9.0", "3.9.1+git77aa"])
def test_supported_versions(version):
    assert compat.triton_problem(version) is None


@pytest.mark.parametrize("version", ["3.4.0", "3.10.0", "4.0.0", "2.3.1"])
def test_unsupported_versions_say_what_to_install(version, monkeypatch):
    monkeypatch.delenv(compat.OVERRIDE, raising=False)
    message = compat.triton_problem(version)
    assert f"triton {version} is not supported" in message and compat.INSTALL in message


def test_grading_refuses_an_unsupported_triton_in_words(monkeypatch):
    monkeypatch.delenv(compat.OVERRIDE, raising=False)
    monkeypatch.setattr(compat, "installed_triton", lambda: "3.10.0")
    p = catalog.get(2)
    result = grade(p.reference(), p.spec, quiet=True)
    assert not result.passed and result.error.kind == "setup"
    assert "triton 3.10.0 is not supported" in result.reason() and compat.INSTALL in result.reason()
    checks = doctor.diagnose(run_kernel=True, gpu=False)
    failed = [message for ok, message in checks if not ok]
    assert any("triton 3.10.0 is not supported" in m for m in failed)
    assert failed[-1].startswith("no kernel was run")  # not a traceback from inside the harness


def test_every_tested_version_is_inside_the_supported_range():
    # `make versions` grades under TESTED; the range test() accepts must cover exactly those minors.
    minors = sorted({compat.parse(v) for v in compat.TESTED})
    assert minors[0] == compat.MINIMUM and minors[-1] < compat.BELOW
    assert compat.BELOW == (minors[-1][0], minors[-1][1] + 1), "a newer Triton is accepted but not tested"
    assert all(compat.triton_problem(v) is None for v in compat.TESTED)


def test_make_versions_says_when_a_newer_triton_ships():
    import importlib.util

    spec = importlib.util.spec_from_file_location("triton_versions", ROOT / "scripts" / "triton_versions.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    newest = max(compat.TESTED, key=lambda v: tuple(map(int, v.split("."))))
    assert script.untested_newer(newest) is None and script.untested_newer(None) is None
    assert script.untested_newer("3.5.0") is None
    assert "triton 3.10.0 is on the package index but not tested" in script.untested_newer("3.10.0")


@pytest.mark.parametrize("version, works", [("3.7.1", True), ("3.8.0", False), ("3.9.0", False)])
def test_doctor_says_triton_viz_does_not_import_with_triton_38_and_later(version, works):
    note = compat.triton_viz_note(version)
    assert (note is None) == works
    if not works:
        assert "does not import with triton 3.8" in note and "optional" in note


def test_triton_viz_is_optional_when_missing(monkeypatch):
    real = doctor._installed
    monkeypatch.setattr(doctor, "_installed", lambda name: None if name == "triton-viz" else real(name))
    for gpu in (True, False):
        checks = doctor.diagnose(run_kernel=False, gpu=gpu)
        viz = [(ok, m) for ok, m in checks if m.startswith("triton-viz")]
        assert viz and viz[0][0] and "optional" in viz[0][1]


def test_doctor_runs_without_torch_triton_numpy_or_jaxtyping(tmp_path):
    # A bare environment: `import puzzles` must not die, and the doctor names each missing package.
    env = tmp_path / "bare"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    environ = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(python), "-m", "puzzles", "doctor"], capture_output=True, text=True, cwd=tmp_path,
                          env=environ, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    # The advice names the Python it checked: a bare `pip` may install into another environment.
    assert f"at {python} (the environment checked" in proc.stdout, proc.stdout
    for name in ("torch", "jaxtyping", "numpy", "triton"):
        assert f"FAIL {name} is not installed: {python} -m pip install {name}" in proc.stdout, proc.stdout
    assert "download.pytorch.org/whl/cpu" in proc.stdout
    assert "ok   triton-viz is not installed (optional" in proc.stdout
    # Using the library there says what is missing, as an ImportError (not a bare ModuleNotFoundError).
    use = subprocess.run([str(python), "-c", "from puzzles import test"], capture_output=True, text=True,
                         cwd=tmp_path, env=environ, timeout=120)
    assert "ImportError: puzzles.test is unavailable: the course needs" in use.stderr
    assert "python -m puzzles doctor" in use.stderr
    # The README's commands run by a Python that is not the course's: which Python, and what to run instead.
    for command in ("grade", "workspace"):
        wrong = subprocess.run([str(python), "-m", "puzzles", command], capture_output=True, text=True,
                               cwd=tmp_path, env=environ, timeout=120)
        assert wrong.returncode == 1 and "Traceback" not in wrong.stderr, wrong.stderr
        assert f"this Python ({python}) has no" in wrong.stderr and ".venv/bin/python -m puzzles" in wrong.stderr


def test_an_error_in_the_courses_own_module_is_not_hidden(tmp_path):
    # A broken puzzles/ module must surface as the course's own import error, not as "install X".
    code = ("import sys, importlib.abc\n"
            "class Broken(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'puzzles.running.debug':\n"
            "            raise ImportError('cannot import name x', name='puzzles.running.debug')\n"
            "sys.meta_path.insert(0, Broken())\n"
            "import puzzles\n")
    proc = run_python(["-c", code], ROOT, timeout=120)
    assert proc.returncode != 0 and "the course's own module failed to import" in proc.stderr
