"""A synthetic class for the class-grading tests and benchmarks/grade_class.py: honest students
(references, starters, a wrong kernel, a notebook) and hostile ones (a forged `test`, a forged
judge, writing another student's file, an endless loop while loading, a huge allocation, a
global that kills its grading process when the grader reads it, a truncated notebook, a
submission that switches the compile check off)."""

from __future__ import annotations

import json
from pathlib import Path

from puzzles import catalog, notebooks, on_gpu
from puzzles.solution_source import reference_source, starter_source

HEADER = "import os\nimport torch\nimport triton\nimport triton.language as tl\n\n"
P1, P2 = catalog.get(1), catalog.get(2)

# student -> {puzzle number: expected status}; the hostile ones' expected reason words follow.
EXPECTED = {
    "honest_ref": {1: "passed", 2: "passed"},
    "honest_nb": {1: "passed", 2: "not attempted"},
    "starter": {1: "not attempted", 2: "not attempted"},
    "wrong": {1: "failed", 2: "passed"},
    "forged_test": {1: "failed", 2: "not attempted"},
    "forged_judge": {1: "failed", 2: "not attempted"},
    "tamperer": {1: "passed", 2: "not attempted"},
    "looper": {1: "failed", 2: "not attempted"},
    "hog": {1: "failed", 2: "not attempted"},
    "killer": {1: "failed", 2: "passed"},
    "truncated": {1: "failed", 2: "not attempted"},
    "switcher": {1: "failed", 2: "not attempted"},
}
REASONS = {
    ("wrong", 1): "wrong",
    ("forged_test", 1): "could not confirm",
    ("forged_judge", 1): "could not confirm",
    ("looper", 1): "loading the submission did not finish",
    ("hog", 1): "memory",
    ("killer", 1): "killed the process",
    ("truncated", 1): "cannot be read",
    ("switcher", 1): "",  # SWITCHER_REASON
}
# Where kernels run compiled (a GPU), the compiler itself refuses the switcher's lambda; elsewhere the
# ahead-of-time compile check must (the submission tried to switch it off).
SWITCHER_REASON = "unsupported AST node type: Lambda" if on_gpu() else "would not compile for a GPU"
REASONS[("switcher", 1)] = SWITCHER_REASON

FORGED_TEST = '''
class Sneaky:  # a class body runs while loading: replace the grader's test() with a yes-man
    import puzzles.grade as grading

    class Passed:
        passed, seconds, seed = True, 0.0, 1

        def reason(self):
            return "passed"

    grading.test = lambda *args, **kwargs: Sneaky.Passed()
'''

FORGED_JUDGE = '''
class Sneaky:  # replace the harness's judge: every size "passed", whatever the output
    import puzzles.harness as harness
    from puzzles.result import SizeOutcome

    harness.judge_runs = lambda kernel, cases, runs: [
        Sneaky.SizeOutcome(c.sizes, c.seed, "passed") for c in cases]
'''

# A kernel cannot reach os (the grader refuses it before it runs), but the grader looks at the globals
# a kernel reads: this one kills the student's grading process when it does.
TRAP = """
class Trap:
    def __getattr__(self, name):
        os.kill(os.getpid(), 9)


TRAP = Trap()

"""
KILL_PARENT = "    if TRAP is None:  # a global the kernel reads\n        pass\n"

STALL = """
class Stall:
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass

"""


def hoarding_child(pid_file: Path) -> str:
    """A class body that forks a child which takes memory, 64 MiB every 50 ms, up to 16 GiB, while
    the parent waits for it: only a measure of the whole process tree sees it. The child writes its
    id to `pid_file`, so that a test can tell it was stopped."""
    return f"""
class Hoard:
    import time

    if os.fork() == 0:
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        chunks = []
        for _ in range(256):
            chunks.append(b"x" * (1 << 26))
            time.sleep(0.05)
        os._exit(0)
    os.wait()

"""


# Switches the compile check off from the submission (a plain assignment into os.environ, and one with a
# call that a function uses), with a kernel that only the interpreter runs (a lambda): only the
# compile check, really run in the sandbox, can fail it.
SWITCH_OFF_COMPILE_CHECK = '''
os.environ["PUZZLES_COMPILE_CHECK"] = "0"
SWITCH = os.environ.update(PUZZLES_COMPILE_CHECK="0")


def uses_switch():
    return SWITCH


@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    plus_ten = lambda v: v + 10.0  # noqa: E731 - the interpreter runs it, the compiler refuses it
    tl.store(z_ptr + offsets, plus_ten(tl.load(x_ptr + offsets)))
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
        # a loop in a class body that swallows the loader's interruption: only the worker's deadline stops it
        "looper": HEADER + STALL + reference_source(P1),
        # a module-level tensor the kernel uses (a constexpr global, valid on a GPU too), 8 GiB filled:
        # over the address-space limit at once without CUDA, past the memory watch's limit with it
        "hog": HEADER + "SCALE = tl.constexpr(int(torch.ones(1 << 31)[-1]))\n\n"
        + reference_source(P1).replace("x + 10.0", "x + 10.0 * SCALE"),
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
