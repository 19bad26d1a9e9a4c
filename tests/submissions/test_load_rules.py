"""The load rules (puzzles/submissions/load_rules.py): what a graded file may run while it loads. Every reference and
every notebook of the course loads unrefused; code that could forge a verdict or trap the grader is
refused before anything runs, with its line and why, and costs only the puzzles that need it."""

from __future__ import annotations

import ast
import json

import classroom_fixtures as fixtures
import pytest

from puzzles.course import catalog
from puzzles.course.notebooks import NOTEBOOK_DIR
from puzzles.course.solution_source import ROOT, reference_source
from puzzles.submissions import grade
from puzzles.submissions.load_rules import LoadRules

HEADER = ("import math\nimport os\nimport torch\nimport triton\nimport triton.language as tl\nfrom triton import jit\n"
          "import puzzles.submissions.grade as grading\n")

ALLOWED = {
    "constexpr": "B = tl.constexpr(32)",
    "configs function": "def get_configs():\n    return [triton.Config({'B0': b}, num_warps=4) for b in (32, 64)]\n"
                        "@triton.autotune(configs=get_configs(), key=['N0'])\n@jit\ndef k(x, B0: tl.constexpr = 32):\n"
                        "    pass",
    "configs through a name": "def get_configs():\n    return [triton.Config({'B0': 32})]\nCONFIGS = get_configs()\n"
                              "@triton.autotune(configs=CONFIGS, key=['N0'])\n@jit\ndef k(x, B0: tl.constexpr):\n"
                              "    pass",
    "heuristic": "@triton.heuristics({'B0': lambda args: triton.next_power_of_2(args['N0'])})\n@triton.jit\n"
                 "def k(x, N0, B0: tl.constexpr):\n    pass",
    "math and builtins": "X = math.ceil(math.log2(7)) + min(3, 4) + len(range(5)) + sum(b for b in (1, 2))",
    "a wrap by call": "def f(x):\n    pass\nk = triton.autotune(configs=[], key=[])(triton.jit(f))",
    "a hook that is a lambda": "C = triton.Config({'B0': 32}, pre_hook=lambda args: None)",
    "dtypes and modules": "D = (tl.float16, torch.int8, math.pi, tl)",
    "a spec that is never called": "def spec(x):\n    return x.sum()",
    "the same import twice": "import triton.language as tl",
}
REFUSED = {
    "class": ("class A:\n    pass", "a class definition is not allowed in a graded file"),
    "metaclass trap": ("class M(type):\n    def __getattr__(cls, name):\n        os.kill(os.getpid(), 9)\n"
                       "class T(metaclass=M):\n    pass", "a class definition is not allowed"),
    "forged test in a default": ("def k(x, y=setattr(grading, 'test', abs)):\n    pass", "calls `setattr`"),
    "call in a decorator": ("def deco(f):\n    grading.test = abs\n    return f\n@deco\ndef k(x):\n    pass",
                            "calls `deco()`, a function of this file"),
    "builtin as a decorator": ("@print\ndef k(x):\n    pass", "calls `print`"),
    "call in an annotation": ("def k(x: os.getpid()):\n    pass", "calls `os.getpid`"),
    "call in a value": ("X = os.getpid()\ndef f():\n    return X", "calls `os.getpid`"),
    "rebinding an import": ("tl = os", "rebinds `tl`, which line 5 imports (triton.language)"),
    "an import that hides another": ("from triton.language import dot as jit\n@jit\ndef k(x):\n    pass",
                                     "`jit` is imported from 2 places"),
    "walrus": ("X = (y := 3)", "the assignment expression"),
    "star import": ("from os import *", "import the names you use"),
    "hook from a module": ("C = triton.Config({'B0': 32}, pre_hook=os.system)", "uses `os.system` as a value"),
    "hook of the file": ("def hook(args):\n    os.system('x')\nC = triton.Config({}, pre_hook=hook)",
                         "uses `hook`, a function of this file, as a value"),
    "hook lambda that calls out": ("C = triton.Config({}, pre_hook=lambda args: os.system('x'))", "calls `os.system`"),
    "key function": ("X = max([1, 2], key=os.system)", "uses `os.system` as a value"),
    "map": ("X = list(map(os.system, ['x']))", "calls `map`"),
    "a jitted function's Python": ("def f(x):\n    pass\nX = triton.jit(f).fn", "reads an attribute of a value"),
    "insides": ("X = triton.jit.__globals__", "an object's insides"),
    "builtins": ("__builtins__ = {}", "binds `__builtins__`"),
    "a builtin redefined": ("def min(a, b):\n    os.system('x')\n    return a\nX = min(1, 2)",
                            "calls `min()`, a function of this file"),
    "lambda default": ("F = lambda x=os.getpid(): 0", "calls `os.getpid`"),
    "a returning function that calls out": ("def r():\n    return os.getpid()\nX = r()", "calls `r()`"),
    "calling a parameter": ("def r(f):\n    return f()\nX = r(1)", "calls `r()`"),
    "environment": ("X = os.environ['HOME']", "uses `os.environ` as a value"),
    "a jitted function as a hook": ("def f(args):\n    os.system('x')\nK = triton.jit(f)\n"
                                    "C = triton.Config({}, pre_hook=K)", "uses `K`, a function of this file"),
    "getattr under another name": ("G = getattr", "uses `getattr` as a value"),
    "globals as a value": ("G = globals", "uses `globals` as a value"),
    "a name in a string": ("X = getattr(tl, 'lo' + 'ad')", "calls `getattr`"),
    "Triton's runtime": ("D = triton.runtime.driver", "uses `triton.runtime.driver` as a value"),
    "torch.ops": ("O = torch.ops.aten", "uses `torch.ops.aten` as a value"),
    "a module's table": ("X = tl.__dict__", "an object's insides"),
    "a class chain": ("X = ().__class__.__base__", "an object's insides"),
    "a module's insides": ("M = math.__loader__.load_module('posix')", "calls `math.__loader__.load_module`"),
}


def refusals(body: str) -> list[str]:
    """The body's refusals; the header's own imports of `os` and of the grader (refused: test_imports_...)
    stay in the file so that what the body does with them is refused for itself."""
    tree = ast.parse(HEADER + body)
    header_lines = HEADER.count("\n")
    return [f"line {r.line}: {r.why}" for r in LoadRules(tree.body).refusals(tree.body).values()
            if r.line > header_lines]


@pytest.mark.parametrize("name", ALLOWED)
def test_what_kernels_need_is_allowed(name):
    assert refusals(ALLOWED[name]) == []


@pytest.mark.parametrize("name", REFUSED)
def test_what_could_run_code_in_the_grader_is_refused(name):
    body, words = REFUSED[name]
    found = refusals(body)
    assert found and words in found[0], found


IMPORTS_REFUSED = ["from solutions.p01_constant_add import add_kernel", "import solutions.p18_gptq_splitk as s",
                   "from builtins import open as OPEN", "import builtins", "import sys", "import os",
                   "import gc", "import ctypes", "import importlib", "import inspect", "import puzzles",
                   "from puzzles.grading import cases", "from puzzles.classroom import worker",
                   "from puzzles.course.solution_source import reference_source", "from triton import runtime",
                   "import triton.runtime.driver", "from torch import _C", "import torch._dynamo", "import numpy"]
IMPORTS_ALLOWED = ["import torch", "import triton", "import triton.language as tl", "import math",
                   "from jaxtyping import Float32, Int32", "from triton.language.extra import libdevice",
                   "from puzzles import test, Float32, Int32, Tensor, print_if", "from torch import Tensor",
                   "from puzzles.course.philox import rand", "from triton import jit, Config, cdiv",
                   "from puzzles.course.catalog.p02_constant_add_block import add2_spec"]


@pytest.mark.parametrize("line", IMPORTS_REFUSED)
def test_imports_beyond_what_the_notebooks_import_are_refused_with_their_line(line):
    tree = ast.parse("import torch\n" + line)
    (refusal,) = LoadRules(tree.body).refusals(tree.body).values()
    assert refusal.line == 2 and "a graded file may import only triton" in refusal.why, refusal


def test_what_the_notebooks_import_is_allowed():
    tree = ast.parse("\n".join(IMPORTS_ALLOWED))
    assert LoadRules(tree.body).refusals(tree.body) == {}


def test_every_import_of_every_generated_notebook_is_allowed():
    """The cells the course generates, set-up cell aside (the grader does not run its imports)."""
    from puzzles.course import notebooks

    books = [notebooks.puzzle_notebook(p) for p in catalog.all_puzzles()]
    for book in books:
        for cell in book["cells"]:
            text = grade.strip_magics("".join(cell["source"]))
            if cell["cell_type"] != "code" or notebooks.is_setup_cell(text):
                continue
            tree = ast.parse(text)
            imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
            assert LoadRules(imports).refusals(imports) == {}, text


def test_a_kernel_imported_from_the_references_fails_with_the_refusal(tmp_path):
    (tmp_path / "a.py").write_text("from solutions.p01_constant_add import add_kernel\n")
    (got,) = grade.grade([tmp_path / "a.py"], [catalog.get(1)], timeout=10)
    assert got.status == "failed" and "line 1: imports `add_kernel` from `solutions.p01_constant_add`" in got.reason


def test_a_kernel_that_reads_a_refused_name_is_refused_with_its_cause():
    found = refusals("class T:\n    pass\n@triton.jit\ndef k(x):\n    if T is None:\n        pass")
    assert found[1].startswith("line 11: k uses T, which grading does not define (line 8: a class definition"), found


def test_every_reference_and_every_notebook_loads_unrefused(tmp_path):
    """The solutions, the shipped notebooks (starters) and the notebooks filled with the references."""
    paths = sorted((ROOT / "solutions").glob("p*.py")) + sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    for p in catalog.all_puzzles():
        nb = json.loads((NOTEBOOK_DIR / f"{p.id}.ipynb").read_text())
        for cell in nb["cells"]:
            if "starter" in cell.get("metadata", {}).get("tags", []):
                cell["source"] = reference_source(p)
        (tmp_path / f"{p.id}.ipynb").write_text(json.dumps(nb))
        paths.append(tmp_path / f"{p.id}.ipynb")
    for path in paths:
        loaded = grade.load_file(path)
        assert loaded.problems == [], (path, loaded.problems)


def test_a_refused_class_costs_only_the_puzzle_that_needs_it(tmp_path):
    """On the scoreboard: the kernel that reads the class fails with the refusal and its line; the other
    kernel of the file passes; a failing kernel of a file with a refusal is told what was not run."""
    p1, p2 = catalog.get(1), catalog.get(2)
    reads_trap = reference_source(p1).replace("    offsets =", fixtures.KILL_PARENT + "    offsets =", 1)
    (tmp_path / "a.py").write_text(fixtures.HEADER + fixtures.TRAP + reads_trap + "\n\n" + reference_source(p2))
    first, second = grade.grade([tmp_path / "a.py"], [p1, p2], timeout=10)
    assert first.status == "failed" and "add_kernel uses TRAP, which grading does not define" in first.reason
    assert "(line 11: a class definition is not allowed in a graded file" in first.reason, first.reason
    assert second.status == "passed", second.reason
    (tmp_path / "b.py").write_text(fixtures.HEADER + fixtures.FORGED_TEST + fixtures.DO_NOTHING)
    (forged,) = grade.grade([tmp_path / "b.py"], [p1], timeout=10)
    assert forged.status == "failed" and "never written" in forged.reason
    assert "grading did not run 1 statement(s) of this file" in forged.reason
    assert "line 6: a class definition is not allowed in a graded file" in forged.reason, forged.reason


def test_a_pre_hook_that_zeroes_an_output_is_told_of_reset_to_zero():
    """Refused like any method call while loading, with the way the autotuner offers to do the same."""
    found = refusals("C = triton.Config({'B0': 64}, pre_hook=lambda nargs: nargs['z_ptr'].zero_())")
    assert len(found) == 1 and "reset_to_zero=[\"z_ptr\"]" in found[0], found
    other = refusals("C = triton.Config({'B0': 64}, pre_hook=lambda nargs: os.system('x'))")
    assert other and "reset_to_zero" not in other[0], other


def test_a_graded_file_may_import_exactly_the_courses_public_names():
    """`from puzzles import X` is allowed for the names of `puzzles.__all__`, listed again in the load rules
    (which sit below the package's face): the two lists stay equal."""
    import puzzles
    from puzzles.submissions.load_rules import FROM_PUZZLES

    assert FROM_PUZZLES == set(puzzles.__all__)
