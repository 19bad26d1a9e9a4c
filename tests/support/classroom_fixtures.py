"""A synthetic class for the class-grading tests: honest students
(references, starters, a wrong kernel, a notebook) and hostile ones. The load rules
(puzzles/submissions/load_rules.py) refuse what used to run while loading (a class body replacing `test` or the
harness's judge, writing another student's file, a class whose metaclass kills the grading process
when the grader reads a global): those students now get the refusal as their message. The others
reach the layers behind the rules with allowed constructs only: a loop in C while loading that the
loader cannot interrupt (the worker's deadline), a huge list (the memory limits), a truncated
notebook, a submission that switches the compile check off. What no allowed construct can do any
more (a worker killed mid-puzzle, a forged pass, a write outside its folder, a hoarding child) is
triggered from the test side: see `worker_trigger` below.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from puzzles import on_gpu
from puzzles.classroom import isolation
from puzzles.course import catalog, notebooks
from puzzles.course.solution_source import reference_source, starter_source

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"
P1, P2 = catalog.get(1), catalog.get(2)

# student -> {puzzle number: expected status}; the hostile ones' expected reason words follow.
EXPECTED = {
    "honest_ref": {1: "passed", 2: "passed"},
    "honest_nb": {1: "passed", 2: "not attempted"},
    "starter": {1: "not attempted", 2: "not attempted"},
    "wrong": {1: "failed", 2: "passed"},
    "forged_test": {1: "failed", 2: "not attempted"},
    "forged_judge": {1: "failed", 2: "not attempted"},
    "tamperer": {1: "passed", 2: "not attempted"},  # its class is refused, its kernel graded
    "looper": {1: "failed", 2: "not attempted"},
    "hog": {1: "failed", 2: "not attempted"},
    "killer": {1: "failed", 2: "passed"},
    "truncated": {1: "failed", 2: "not attempted"},
    "switcher": {1: "failed", 2: "not attempted"},
}
REFUSED = "a class definition is not allowed in a graded file"
REASONS = {
    ("wrong", 1): "wrong",
    ("forged_test", 1): REFUSED,  # the do-nothing kernel is graded, and fails; the message names the refusal
    ("forged_judge", 1): REFUSED,
    ("looper", 1): "loading the submission did not finish",
    ("hog", 1): "memory",
    ("killer", 1): REFUSED,  # its kernel reads the refused class: that puzzle fails with the refusal, not puzzle 2
    ("truncated", 1): "cannot be read",
    ("switcher", 1): "",  # SWITCHER_REASON
}
# Where kernels run compiled (a GPU), the compiler itself refuses the switcher's lambda; elsewhere the
# ahead-of-time compile check must (the submission tried to switch it off).
SWITCHER_REASON = "Loop-carried variable" if on_gpu() else "would not compile for a GPU"
REASONS[("switcher", 1)] = SWITCHER_REASON

FORGED_TEST = '''
class Sneaky:  # a class body runs while loading: replace the grader's test() with a yes-man
    import puzzles.submissions.grade as grading

    class Passed:
        passed, seconds, seed = True, 0.0, 1

        def reason(self):
            return "passed"

    grading.test = lambda *args, **kwargs: Sneaky.Passed()
'''

FORGED_JUDGE = '''
class Sneaky:  # replace the harness's judge: every size "passed", whatever the output
    import puzzles.grading as harness
    from puzzles.grading.result import SizeOutcome

    harness.judge_runs = lambda kernel, cases, runs: [
        Sneaky.SizeOutcome(c.sizes, c.seed, "passed") for c in cases]
'''

# A kernel cannot reach os (the grader refuses it before it runs), but the grader looks at the globals
# a kernel reads: a class whose metaclass kills the process on any attribute lookup runs no code while
# loading, yet would kill the student's grading process when the grader inspects it. Refused.
TRAP = """
class Deadly(type):
    def __getattr__(cls, name):
        os.kill(os.getpid(), 9)


class TRAP(metaclass=Deadly):
    pass

"""
KILL_PARENT = "    if TRAP is None:  # a global the kernel reads\n        pass\n"

# A loop in C (sum over a range, holding the interpreter's lock): the loader's interruption never
# gets in, so only the worker's deadline stops it. Allowed: sum and range only compute.
STALL = """
STALL = sum(range(1 << 62))


def stalled():
    return STALL

"""

# A list of 2**31 references (16 GiB) that the kernel's constexpr needs: over the address-space limit
# at once without CUDA, past the memory watch's limit with it. Allowed: len and a list only compute.
HOG = "SCALE = tl.constexpr(len([0] * (1 << 31)) >> 31)\n\n"


# Switches the compile check off from the submission (a plain assignment into os.environ, and one with a
# call that a function uses), with a kernel that only the interpreter runs (a scalar that becomes a block in
# a loop): only the compile check, really run in the sandbox, can fail it.
SWITCH_OFF_COMPILE_CHECK = '''
os.environ["PUZZLES_COMPILE_CHECK"] = "0"
SWITCH = os.environ.update(PUZZLES_COMPILE_CHECK="0")


def uses_switch():
    return SWITCH


@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    acc = 0.0
    for i in range(0, N0, B0):  # N0 == B0: once; the compiler refuses a loop-carried scalar that becomes a block
        acc += tl.load(x_ptr + offsets)
    tl.store(z_ptr + offsets, acc + 10.0)
'''


DO_NOTHING = '''
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pass
'''


def write_notebook(path: Path, puzzle_source: str) -> None:
    nb = json.loads(notebooks.dumps(notebooks.puzzle_notebook(P1)))
    for cell in nb["cells"]:
        if "starter" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = puzzle_source
    path.write_text(json.dumps(nb))


def build_class(root: Path) -> Path:
    """The class folder (one sub-folder per student); returns it."""
    folder = root / "class"
    files = {
        "honest_ref": HEADER + reference_source(P1) + "\n\n" + reference_source(P2),
        "starter": HEADER + starter_source(P1) + "\n\n" + starter_source(P2),
        "wrong": HEADER + reference_source(P1).replace("10.0", "11.0") + "\n\n" + reference_source(P2),
        "forged_test": HEADER + FORGED_TEST + DO_NOTHING,
        "forged_judge": HEADER + FORGED_JUDGE + DO_NOTHING,
        "looper": HEADER + STALL + reference_source(P1),
        "hog": HEADER + HOG + reference_source(P1).replace("x + 10.0", "x + 10.0 * SCALE"),
        "switcher": HEADER + SWITCH_OFF_COMPILE_CHECK,
        "killer": HEADER + TRAP + reference_source(P1).replace("    offsets =", KILL_PARENT + "    offsets =", 1)
        + "\n\n" + reference_source(P2),
    }
    for name, text in files.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "answers.py").write_text(text)
    victim = folder / "honest_ref" / "answers.py"
    (folder / "tamperer").mkdir()
    (folder / "tamperer" / "answers.py").write_text(
        HEADER + f"class Vandal:\n    open({str(victim)!r}, 'a').write('# tampered')\n\n" + reference_source(P1))
    (folder / "honest_nb").mkdir()
    write_notebook(folder / "honest_nb" / f"{P1.id}.ipynb", reference_source(P1))
    (folder / "truncated").mkdir()
    write_notebook(folder / "truncated" / f"{P1.id}.ipynb", reference_source(P1))
    whole = (folder / "truncated" / f"{P1.id}.ipynb").read_text()
    (folder / "truncated" / f"{P1.id}.ipynb").write_text(whole[: len(whole) * 2 // 3])
    return folder


@pytest.fixture
def worker_trigger(monkeypatch):
    """`worker_trigger(code)`: test-side code that every grading worker started from then on runs at
    its start (a sitecustomize on its path; a worker forked from a launcher, puzzles/classroom/launcher.py,
    runs it as its launcher did at its own start), in place of a submission: what the load rules no longer
    let a submission do (kill its worker, forge a pass, write outside its folder, fork a hoarder), to
    show that the layers behind them still hold. `worker_trigger.folder`: where every worker's user may write."""
    folder = Path(tempfile.mkdtemp(prefix="worker-trigger-"))
    folder.chmod(0o777)  # read by the worker, written by it as a user of its own
    real = isolation.worker_environment

    def install(code: str) -> Path:
        guarded = "import sys\nif 'puzzles.classroom.worker' in sys.orig_argv:  # a worker or its launcher\n"
        (folder / "sitecustomize.py").write_text(guarded + textwrap.indent(textwrap.dedent(code), "    "))
        (folder / "sitecustomize.py").chmod(0o644)

        def with_trigger(worker_folder: Path) -> dict[str, str]:
            env = real(worker_folder)
            env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
            return env

        monkeypatch.setattr(isolation, "worker_environment", with_trigger)
        return folder

    install.folder = folder
    yield install
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def without_compile_check(monkeypatch):
    """A class grading whose subject is not the compile check (the merge, the memory watch, a killed worker, a
    forged pass, the launcher): PUZZLES_COMPILE_CHECK=0, which the grader passes to its workers, spares each
    worker its two compiler processes (a third of a small class's grading here). The check in the sandbox is
    graded by test_grade_class.py's switcher, tests/classroom/test_launcher.py's forked worker and
    test_compile_check.py."""
    monkeypatch.setenv("PUZZLES_COMPILE_CHECK", "0")
