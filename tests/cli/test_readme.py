"""Every command of every documentation page works as written on a fresh clone (CPU), and every
link between the pages leads somewhere.

The pages are the learner's README, the pages under docs/ (instructors, grader, maintainers) and the
GPTQ kernel's page beside its code; their commands run from the repository's root. The commands are read
from the pages' text (```bash blocks and `inline code` that starts like a shell command). Each is either
run here, in a copy of the checkout whose `.venv` is this test's own environment (so `make` finds it set
up and nothing is downloaded), or listed in NOT_RUN with the reason; a command added to a page without
being classified fails the test, so they cannot drift. A make target whose recipe (`make -n`) is commands that
ran here as expected is checked by that recipe instead of running the same commands twice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import copy_checkout, pythonpath_without_checkout

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "solutions" / "gptq" / "README.md"]
SHELL_START = re.compile(r"^(make|\.venv/bin/|python3? |pip |source |bash )")

# Command as written in a page -> what its output must hold. A synopsis (`[--flag]`, `DIR`) runs
# as its plain form; a placeholder is filled in. Each exits 0, except the scoreboard of a fresh clone
# (nothing attempted yet: `grade` exits 1, and make 2), which must still print the board, not a traceback.
RUN: dict[str, str] = {
    "make doctor": "a kernel ran and was graded",
    ".venv/bin/python -m puzzles doctor": "(the environment checked",
    ".venv/bin/python -m puzzles workspace [--update]": "my-notebooks/",
    "make grade": "not attempted",
    ".venv/bin/python -m puzzles grade": "not attempted",
    ".venv/bin/python -m puzzles grade [PATH ...] [--puzzle N] [--json] [--viz DIR] [--seed N] [--isolate]":
        "not attempted",
    ".venv/bin/python -m puzzles grade --viz DIR": "not attempted",
    "make notebooks": "",
    ".venv/bin/python -m puzzles notebooks [--check] [--force]": "",
    ".venv/bin/python scripts/setup.py --plan": "pip",
    "make setup": "",
    ".venv/bin/python benchmarks/run_all.py": "GPU",
    ".venv/bin/python benchmarks/compile_baseline.py": "needs a CUDA GPU",
    ".venv/bin/python benchmarks/efficiency_validation.py measure": "needs a CUDA GPU",
    "make bench": "GPU",
    ".venv/bin/python benchmarks/gpu_worker.py": "GPU",
    ".venv/bin/python benchmarks/gptq/bench.py --out benchmarks/gptq/results/latest": "CUDA",
    ".venv/bin/python -m puzzles gradescope --out autograder.zip": "points in all",
    ".venv/bin/python -m puzzles gradescope --out hw1.zip --puzzle 1 --puzzle 2 --points 2=3 --hidden-seed 2026":
        "4 points in all",
}
# Forms of the synopses that are run as well (the flags the pages name).
EXTRA_FORMS = {
    ".venv/bin/python -m puzzles workspace [--update]": [".venv/bin/python -m puzzles workspace --update"],
    ".venv/bin/python -m puzzles notebooks [--check] [--force]": [".venv/bin/python -m puzzles notebooks --check"],
    ".venv/bin/python -m puzzles grade [PATH ...] [--puzzle N] [--json] [--viz DIR] [--seed N] [--isolate]":
        [".venv/bin/python -m puzzles grade notebooks/01_constant_add.ipynb --puzzle 1 --json --seed 3"],
}
NOT_RUN: dict[str, str] = {
    "make lab": "opens JupyterLab and waits (tests/learner/test_browser.py runs JupyterLab headless)",
    'make lab ARGS="--port 8890 --no-browser"': "opens JupyterLab and waits",
    "make test": "the suite itself",
    ".venv/bin/python benchmarks/efficiency_validation.py predict --gpu H200": "grades about 100 kernels and rewrites "
        "the recorded predictions (tests/grading/test_efficiency.py checks the model)",
    ".venv/bin/python benchmarks/efficiency_validation.py table": "rewrites the recorded table from the recorded times",
    "make versions": "downloads a triton per version (minutes); scripts/triton_versions.py",
    ".venv/bin/python scripts/triton_versions.py": "what `make versions` runs",
    "make diagrams": "redraws every diagram (tests/course/test_diagrams.py checks the same)",
    "make notebooks diagrams": "make notebooks, then make diagrams (both above)",
    "python3 -m venv .venv && .venv/bin/python -m pip install torch==2.13.0 --index-url "
    "https://download.pytorch.org/whl/cpu && .venv/bin/python -m pip install -r requirements.txt":
        "downloads torch (what `make setup` does; tests/cli/test_setup.py checks its plan)",
    "source .venv/bin/activate": "changes the calling shell only",
    "make setup PYTHON=python3.12": "a .venv with another Python (tests/cli/test_requirements.py resolves the pins for "
                                    "each supported one)",
    ".venv/bin/python -m puzzles.learner.inductor_code 22":
        "refreshes the shipped capture on a GPU (without one it says so: tests/course/test_torch_compile_first.py)",
}
# The instructors' commands need a class of submissions: tests/classroom/test_grade_class.py grades a synthetic class
# with each form (roster, files per student, named folders, one job per student, the merge).
CLASS_FORMS = "tests/classroom/test_grade_class.py runs this form on a synthetic class"
NOT_RUN.update({
    ".venv/bin/python -m puzzles grade CLASS/ --out gradebook/": CLASS_FORMS,
    ".venv/bin/python -m puzzles grade CLASS/*.ipynb --per-file --out gb/": CLASS_FORMS,
    ".venv/bin/python -m puzzles grade CLASS/ada CLASS/bob --out gb/": CLASS_FORMS,
    ".venv/bin/python -m puzzles grade --student CLASS/ada --seed 4242 --out results/ada.json": CLASS_FORMS,
    ".venv/bin/python -m puzzles grade --merge results/ --out gradebook/": CLASS_FORMS,
    "students=(CLASS/*/)": "a line of the Slurm array job's script (needs a cluster)",
    "s=${students[$SLURM_ARRAY_TASK_ID]}": "a line of the Slurm array job's script (needs a cluster)",
    '.venv/bin/python -m puzzles grade --student "$s" --seed 4242 --timeout 5 --out "results/$(basename "$s").json"':
        "a line of the Slurm array job's script (needs a cluster); the --student form is tested",
    ".venv/bin/python benchmarks/grade_class.py": "a benchmark of minutes (its results are in benchmarks/results/)",
    ".venv/bin/python -m solutions.gptq.pdl_check":
        "tests/gptq/test_gptq_pdl.py runs it and checks every kernel's line",
    ".venv/bin/python benchmarks/gptq/decode.py --layers 16 --modes lean lean-nopdl --batch 1 8 --rounds 5":
        "a GPU benchmark of minutes (a CUDA GPU and transformers)",
})


def page_commands() -> list[str]:
    """The shell commands of every page, in order, each once."""
    return list(dict.fromkeys(c for page in PAGES for c in readme_commands(page.read_text())))


def readme_commands(text: str = README) -> list[str]:
    """The shell commands of one page: lines of ```bash blocks (comments cut) and inline code spans
    that start like a command."""
    found: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line and not line.startswith("#"):  # a comment, a shebang or a batch system's directive
                found.append(line)
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    for span in re.findall(r"`([^`\n]+)`", prose):
        if SHELL_START.match(span) and " " in span.strip():  # `make` alone names the tool, not a command
            found.append(span.strip())
    return list(dict.fromkeys(found))


def test_every_page_command_is_run_here_or_says_why_not():
    commands = page_commands()
    unclassified = [c for c in commands if c not in RUN and c not in NOT_RUN]
    assert not unclassified, f"commands of the pages this test does not know (run them in RUN or say why in " \
                             f"NOT_RUN): {unclassified}"
    stale = [c for c in [*RUN, *NOT_RUN] if c not in commands]
    assert not stale, f"no longer in any page: {stale}"


def test_the_readme_keeps_its_two_commands_at_the_top():
    first_block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first_block and README.index("```bash") < README.index("\n## "), "the README opens with its commands"
    assert [line.split("#")[0].strip() for line in first_block.group(1).splitlines()] == ["make lab", "make test"]


def test_no_page_command_needs_an_activated_environment():
    # A bare `python -m puzzles` runs whatever python is first on PATH (often one without torch).
    bare = [c for c in page_commands() if re.match(r"(python3?|pip) ", c) and not c.startswith("python3 -m venv")]
    assert not bare, bare


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_every_link_between_the_pages_leads_somewhere():
    broken = []
    for page in PAGES:
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL))
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in heading_anchors(file.read_text()):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken



def _runnable(command: str) -> str:
    """A page's command as the shell runs it here: a synopsis without its optional parts, a
    placeholder filled in, and make told that the environment is set up (it is this test's own)."""
    command = re.sub(r"\s*\[[^\]]*\]", "", command).replace(" DIR", " viz-out")
    if command.startswith("make "):
        command += " -o .venv/.installed"  # never rerun the installer: .venv is this test's environment
    return command


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs make and a git checkout")
def test_readme_commands_work_as_written_on_a_fresh_clone(tmp_path):
    clone = tmp_path / "course"
    copy_checkout(clone)
    (clone / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PYTHONPATH"] = pythonpath_without_checkout()
    env["PATH"] = "/usr/bin:/bin"  # nothing activated: only the system's python3 is on PATH
    env["PUZZLES_COMPILE_CHECK"] = "0"  # grading starters; the compile check has its own tests
    failures, ran = [], set()
    outputs: dict[str, str] = {}  # a command that ran as expected -> what it printed

    def recipe(target: str) -> list[str]:
        """What `make TARGET` would run here, without running it (make's dry run prints the recipe)."""
        dry = subprocess.run(f"make -n {target} -o .venv/.installed", shell=True, cwd=clone, env=env,
                             capture_output=True, text=True, timeout=60)
        lines = [line.strip() for line in dry.stdout.splitlines() if line.strip()]
        return lines if dry.returncode == 0 and not any(line.startswith("make") for line in lines) else []

    # The make targets last: one whose recipe is commands already run here (`make grade` runs
    # `.venv/bin/python -m puzzles grade`) is checked by its recipe, not run a second time.
    forms = [(form, expect) for command, expect in RUN.items() for form in [command, *EXTRA_FORMS.get(command, [])]]
    for form, expect in sorted(forms, key=lambda f: f[0].startswith("make ")):
        if ("GPU" in expect or "CUDA" in expect) and torch.cuda.is_available():
            continue  # a GPU benchmark of minutes: here only its no-GPU message is checked, on a CPU
        runnable = _runnable(form)
        if (runnable, expect) in ran:
            continue  # a synopsis whose plain form another page writes out: the same command, run once
        ran.add((runnable, expect))
        if form.startswith("make "):
            lines = recipe(form.split(" ", 1)[1])
            if lines and all(line in outputs for line in lines) and expect in "".join(outputs[x] for x in lines):
                continue
        proc = subprocess.run(runnable, shell=True, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        board = "not attempted" in out and " grade" in form  # a fresh clone: nothing attempted yet
        ok = (proc.returncode == 0 or board) and expect in out and "Traceback" not in out
        if ok:
            outputs[runnable] = out
        else:
            failures.append(f"$ {form}\n(exit {proc.returncode})\n{out[-1500:]}")
    assert not failures, "\n\n".join(failures)
