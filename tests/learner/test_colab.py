"""The Colab path, without Colab: a fresh virtual environment in which only the preinstalled stack
(torch, triton, numpy, jaxtyping, Jupyter) is importable, the course installed by the notebook's own
set-up cell from a wheel (not editable, no checkout on the path), a notebook copied to a folder
outside the checkout and executed headless. Every puzzle's grading cell then works: the starter is
"Not yet"; the references of a sample of puzzles (one of each kind of grading) pass. That the wheel
holds every file of the course is checked against git's list, so no puzzle can lose its data there;
tests/course/test_notebooks.py runs every notebook with its reference in the checkout.

The set-up cell's Colab branch runs when `google.colab` is imported or TRITON_PUZZLES_PIP is set;
that variable also replaces `git+<repository>` (here: the wheel just built)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest
from commands import run_python
from conftest import pythonpath_without_checkout

from puzzles.course import catalog, notebooks
from puzzles.course.solution_source import reference_source

ROOT = Path(__file__).resolve().parents[2]
# The course's own distribution in this environment (an editable install) must not be visible.
HIDDEN = ("__editable__", "triton_puzzles_course", "puzzles", "solutions")

DRIVER = """
import sys
sys.modules["rfc3987_syntax"] = None  # an import of seconds that reading a notebook does not need: tests/conftest.py
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute()
nbformat.write(nb, sys.argv[1])
"""


# Puzzles whose references the wheel's notebook grades: a plain one, a split-K contract with a production
# baseline, autotune (configs of the grader's own), one launch over a table of tensors, a torch.compile
# capture read from package data, a rule on the compiled code.
REFERENCE_SAMPLE = (1, 18, 20, 21, 22, 23)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return _wheel(tmp_path_factory.mktemp("wheel"))


def _wheel(tmp: Path) -> Path:
    # Build from a copy of the package's files, so the checkout gets no build/ or egg-info.
    src = tmp / "src"
    for name in ("puzzles", "solutions"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    # With setuptools here, build offline; without it (a Python 3.12 venv), pip fetches the build backend.
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *offline,
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("triton_puzzles_course-*.whl")
    return wheel


def _venv(tmp: Path) -> Path:
    """A venv whose only packages are this environment's third-party ones, seen through a folder of
    links (so the editable course and its .pth files stay out)."""
    base = tmp / "preinstalled"
    base.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if not entry.name.startswith(HIDDEN) and entry.suffix != ".pth":
            (base / entry.name).symlink_to(entry)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    venv_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    Path(venv_site, "preinstalled.pth").write_text(f"{base}\n")
    return python


def _combined_notebook(work: Path) -> Path:
    """Notebook 1 copied as shipped, then for each puzzle of REFERENCE_SAMPLE its spec, starter and grading cell,
    and the reference with the grading cell again: one kernel grades them all (every starter and reference runs in
    its own notebook in tests/course/test_notebooks.py; every module of the course is in the wheel: next test)."""
    first = catalog.get(1)
    nb = nbformat.read(notebooks.NOTEBOOK_DIR / f"{first.id}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import puzzles\nprint(puzzles.__file__)"))
    # Outside a checkout the repository URL comes from the installed package's metadata.
    nb.cells.append(nbformat.v4.new_code_cell(
        "from puzzles.course.notebooks import COURSE_URL\nprint('url', COURSE_URL)"))
    for p in catalog.all_puzzles():
        book = nbformat.read(notebooks.NOTEBOOK_DIR / f"{p.id}.ipynb", as_version=4)
        spec = [c for c in book.cells if c.get("id", "").endswith("-spec")]
        starter = [c for c in book.cells if "starter" in c.metadata.get("tags", [])]
        grade = [c for c in book.cells if "grade" in c.metadata.get("tags", [])]
        if p.number not in REFERENCE_SAMPLE:
            continue
        if p is not first:
            nb.cells += spec + starter + grade
        reference = nbformat.v4.new_code_cell(reference_source(p))
        check = nbformat.v4.new_code_cell(grade[0].source, metadata={"tags": ["grade-reference"]})
        nb.cells += [reference, check]
    nb.cells.append(nbformat.v4.new_code_cell("from puzzles import progress\n\nprogress()",
                                              metadata={"tags": ["progress"]}))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"
    path = work / f"{first.id}.ipynb"
    nbformat.write(nb, path)
    return path


def _html(cell) -> str:
    def text(value) -> str:
        return "".join(value) if isinstance(value, list) else value

    return "".join(text(o.get("data", {}).get("text/html", "")) + text(o.get("text", "")) for o in cell["outputs"])


@pytest.mark.notebooks
@pytest.mark.skipif(sys.platform != "linux", reason="the course's CPU stack is tested on Linux")
def test_a_notebook_runs_from_the_wheel_outside_the_checkout(tmp_path, wheel):
    python = _venv(tmp_path)
    work = tmp_path / "content"  # as Colab's /content: no course anywhere above it
    work.mkdir()
    path = _combined_notebook(work)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = pythonpath_without_checkout()  # packages carried in that way stay "preinstalled"
    env["TRITON_PUZZLES_PIP"] = f"--no-index {wheel}"
    proc = subprocess.run([str(python), "-c", DRIVER, str(path)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    nb = json.loads(path.read_text())
    errors = [f"{o['ename']}: {o['evalue']}" for c in nb["cells"] if c["cell_type"] == "code"
              for o in c["outputs"] if o["output_type"] == "error"]
    assert errors == []
    # The course was installed by the set-up cell, into the fresh environment, not found in a checkout.
    where = [_html(c) for c in nb["cells"] if "print(puzzles.__file__)" in "".join(c["source"])]
    assert str(tmp_path / "venv") in where[0] and str(ROOT) not in where[0]
    (url,) = [_html(c) for c in nb["cells"] if "print('url'" in "".join(c["source"])]
    assert url.split()[-1] == notebooks.course_url()
    starters = [_html(c) for c in nb["cells"] if "grade" in c["metadata"].get("tags", [])]
    references = [_html(c) for c in nb["cells"] if "grade-reference" in c["metadata"].get("tags", [])]
    count = len(catalog.all_puzzles())
    assert len(starters) == len(references) == len(REFERENCE_SAMPLE)
    assert all("Not yet" in h for h in starters), [h[:300] for h in starters if "Not yet" not in h]
    assert all("Passed" in h and "Not yet" not in h for h in references)
    (board,) = [_html(c) for c in nb["cells"] if "progress" in c["metadata"].get("tags", [])]
    # The progress board grades the file on disk (its reference cells come last, so they are graded).
    passed = len(REFERENCE_SAMPLE)
    assert 'href="01_constant_add.ipynb"' in board and f"{passed} of {count} puzzles passed" in board


def test_the_wheel_holds_every_file_of_the_course(wheel):
    """Every tracked file of puzzles/ and solutions/ that Python or the course reads is in the wheel: a
    puzzle whose module, capture or reference the wheel lacked would fail on Colab only."""
    tracked = subprocess.run(["git", "ls-files", "puzzles", "solutions"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    if not tracked:
        pytest.skip("needs a git checkout")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    # A file the index lists but the tree lacks (moved in a copy whose index is older, as the GPU machine's) is
    # not part of this course.
    wanted = [name for name in tracked if (name.endswith(".py") or name.startswith("puzzles/course/captures/"))
              and (ROOT / name).exists()]
    missing = [name for name in wanted if name not in shipped]
    assert not missing, f"not in the wheel (pyproject.toml's package data?): {missing}"


def test_the_repository_url_is_one_setting(monkeypatch):
    text = (ROOT / "pyproject.toml").read_text()
    url = notebooks._repository_from_pyproject(text)
    assert url and url.startswith("https://github.com/") and notebooks.course_url() == url
    assert f"git+{url}" in notebooks.SETUP_SOURCE
    assert f"colab.research.google.com/github/{notebooks.github_repo(url)}/" in json.dumps(notebooks.all_notebooks())
    # Python 3.10 has no tomllib: the small reader finds the same line.
    monkeypatch.setitem(sys.modules, "tomllib", None)
    assert notebooks._repository_from_pyproject(text) == url
    forked = text.replace(url, "https://github.com/someone/fork")
    assert notebooks._repository_from_pyproject(forked) == "https://github.com/someone/fork"


def test_an_install_without_network_says_what_failed_and_what_to_do(tmp_path):
    # The set-up cell's Colab branch with an index that cannot answer: a message, not a CalledProcessError.
    code = ("import importlib.util\nimportlib.util.find_spec = lambda name, *a, **k: None  # the course is absent\n"
            + notebooks.SETUP_SOURCE)
    offline = "--no-index --find-links /nonexistent triton-puzzles-course==0.0.0.dev0"
    environ = dict(os.environ, TRITON_PUZZLES_PIP=offline)
    proc = run_python(["-c", code], tmp_path, env=environ, timeout=120)
    assert proc.returncode != 0
    assert "CalledProcessError" not in proc.stderr, proc.stderr
    assert "could not install the course: `pip install --no-index" in proc.stderr, proc.stderr
    assert "No matching distribution" in proc.stderr or "ERROR" in proc.stderr  # pip's own reason, quoted
    assert "reaches the internet" in proc.stderr and "TRITON_PUZZLES_PIP" in proc.stderr


def test_a_notebook_in_a_checkout_without_an_install_finds_the_checkout():
    # A GPU box with its own torch, the course cloned and not installed: the set-up cell finds the checkout
    # above the notebook (by its pyproject.toml and puzzles/__init__.py) and imports the course from there.
    code = ("import importlib.util\nimportlib.util.find_spec = lambda name, *a, **k: None  # not installed\n"
            + notebooks.SETUP_SOURCE + "\nimport puzzles\nprint(puzzles.__file__)\n")
    proc = run_python(["-c", code], ROOT / "notebooks", env={**os.environ, "PYTHONPATH": ""}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(ROOT / "puzzles" / "__init__.py")


def test_progress_in_a_folder_without_notebooks_says_what_it_looked_for(tmp_path, monkeypatch):
    from puzzles.learner import progress as grade

    # As on Colab: a notebook opened alone, the current folder holds no puzzle notebook, no checkout.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setattr(grade, "default_folder", lambda: tmp_path / "site-packages" / "notebooks")
    board = grade.progress()
    assert not board.found()
    text, html = str(board), board._repr_html_()
    for where in (str(tmp_path), str(tmp_path / "site-packages" / "notebooks") + " (no such folder)"):
        assert where in text
    assert "progress(\"path/to/folder\")" in text and "drive.mount" in text and "looked in" in html
    # A folder the learner names, and the folder of the open notebook (Jupyter Server says which).
    named = tmp_path / "mine"
    named.mkdir()
    shutil.copyfile(ROOT / "notebooks" / f"{catalog.get(1).id}.ipynb", named / f"{catalog.get(1).id}.ipynb")
    board = grade.progress(named)
    assert board.found() and board.folder == named and board.note() == ""
    monkeypatch.setenv("JPY_SESSION_NAME", str(named / "progress.ipynb"))
    assert grade.progress().folder == named.resolve()
    assert "no such folder" in str(grade.progress(tmp_path / "missing"))


FAKE_COLAB = """
import sys, types
calls = []
google, colab, output = types.ModuleType("google"), types.ModuleType("google.colab"), types.ModuleType("output")
output.serve_kernel_port_as_iframe = lambda port, height=None: calls.append(("iframe", port))
output.serve_kernel_port_as_window = lambda port, **kw: calls.append(("window", port))
colab.output, google.colab = output, colab
sys.modules.update({"google": google, "google.colab": colab, "google.colab.output": output})
import urllib.request
import puzzles, torch
from puzzles import viz
from puzzles.course import catalog
x, z = torch.arange(40, dtype=torch.float32), torch.empty(40)
url = viz.launch_triton_viz(catalog.get(2).reference(), x, z, 40, grid=(2,), port=0, B0=32)
port = int(url.rsplit(":", 1)[1].strip("/"))
assert calls == [("iframe", port)], calls
with urllib.request.urlopen(url, timeout=10) as response:  # what Colab's proxy forwards to
    assert response.status == 200
viz.stop_triton_viz()
print("proxied", port)
"""


def test_triton_viz_opens_through_colabs_port_proxy_on_colab():
    from puzzles.running import compat

    if compat.triton_viz_note():  # triton 3.8+: triton-viz does not import at all
        pytest.skip(compat.triton_viz_note())
    pytest.importorskip("triton_viz")
    done = subprocess.run([sys.executable, "-c", FAKE_COLAB], capture_output=True, text=True, timeout=90,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "proxied" in done.stdout and "Colab's port proxy" in done.stdout


def test_the_viewer_says_it_needs_triton_37_or_older(monkeypatch, capsys):
    from puzzles import viz
    from puzzles.running import compat

    monkeypatch.setattr(compat, "installed_triton", lambda: "3.9.0")
    assert viz.launch_triton_viz(None, grid=(1,)) is None
    assert "triton-viz 3.0 does not import with triton 3.8" in capsys.readouterr().out
