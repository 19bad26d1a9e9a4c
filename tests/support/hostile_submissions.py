"""A hostile class (issue 47): submissions that try to read the references, reach the grader's internals
or forge a verdict, each with the words its refusal must say. Each is one student's answers.py for
puzzle 1 (`add_kernel`); the attack is where a kernel or a loading statement would run it. The tests
(test_hostile_class.py) grade them in the roster mode and on the Gradescope path: every attack fails or is
refused with its message, and no honest verdict changes.
"""

from __future__ import annotations

from classroom_fixtures import HEADER


def kernel(body: str, before: str = "") -> str:
    """answers.py: the header, `before` at module level, and add_kernel whose body is `body` then the
    reference's own two lines (so that only the attack can fail it)."""
    lines = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return (HEADER + before + "\n\n@triton.jit\ndef add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):\n" + lines
            + "    offsets = tl.arange(0, B0)\n"
            "    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)\n")


READS_OTHERS = "/tmp/class/ada/answers.py"  # any other file the worker's user might read

# name -> (answers.py, words the verdict on puzzle 1 says, words the loading problems say or "")
ATTACKS: dict[str, tuple[str, str, str]] = {
    "imports the reference": ("from solutions.p01_constant_add import add_kernel\n",
                              "imports `add_kernel` from `solutions.p01_constant_add`", "a graded file may import"),
    "imports the reference module": ("import solutions.p01_constant_add as ref\nadd_kernel = ref.add_kernel\n",
                                     "solutions.p01_constant_add", "imports `solutions.p01_constant_add`"),
    "open under another name": (kernel("text = OPEN('solutions/p18_gptq_splitk.py').read()",
                                       "from builtins import open as OPEN"),
                                "add_kernel uses OPEN, which grading does not define",
                                "imports `open` from `builtins`"),
    "the grader's internals": (kernel("case = make_case(None, None, {}, 0, 0)",
                                      "from puzzles.grading.cases import make_case"),
                               "add_kernel uses make_case, which grading does not define", "imports `make_case`"),
    "walks the stack": (kernel("frame = tl.core.sys._getframe(1)"), "reads `._getframe`", ""),
    "a module reached through tl": (kernel("tl.core.builtins.print(1)"), "uses `tl.core.builtins.print`", ""),
    "__builtins__": (kernel("opener = __builtins__['open']"), "uses `__builtins__`", ""),
    "globals()": (kernel("opener = globals()['__builtins__']"), "uses Python's `globals`", ""),
    "vars()": (kernel("table = vars(tl)"), "uses Python's `vars`", ""),
    "getattr with a string": (kernel("load = getattr(tl, 'lo' + 'ad')"), "uses Python's `getattr`", ""),
    "getattr under another name": (kernel("g = GET(tl, 'load')", "GET = getattr"),
                                   "add_kernel uses GET, which grading does not define", "uses `getattr` as a value"),
    "a class chain": (kernel("kinds = ().__class__.__base__.__subclasses__()"), "a Python object's insides", ""),
    "a format string": (kernel("text = '{0.__globals__}'.format(tl)"), "reads `.format`", ""),
    "tl.__dict__": (kernel("table = tl.__dict__"), "reads `.__dict__`", ""),
    "triton.runtime": (kernel("driver = triton.runtime.driver"), "uses `triton.runtime.driver`", ""),
    "torch.ops": (kernel("add = torch.ops.aten.add"), "uses `torch.ops.aten.add`", ""),
    "exec, eval, compile": (kernel("eval('1 + 1')"), "uses Python's `eval`", ""),
    "__import__": (kernel("os = __import__('os')"), "uses `__import__`", ""),
    "a lambda default": (kernel("grab = lambda x, o=print: o"), "a lambda is not allowed in a kernel", ""),
    "monkeypatches triton.language": (kernel("tl.store = tl.load"), "assigns into `tl.store`", ""),
    "ctypes": ("import ctypes\n" + kernel(""), "", "imports `ctypes`"),
    "os.write to a report's descriptor": (HEADER + "import os\nSENT = os.write(3, b'{\"event\": \"done\"}\\n')\n\n\n"
                                          "def uses_sent():\n    return SENT\n" + kernel("").removeprefix(HEADER),
                                          "", "imports `os`"),
    "/proc/self/fd": ("from pathlib import Path\nFDS = sorted(Path('/proc/self/fd').iterdir())\n" + kernel(""),
                      "", "imports `Path` from `pathlib`"),
    "signal handlers": ("import signal\n" + kernel(""), "", "imports `signal`"),
    "a fork bomb": (HEADER + "import os\nPIDS = [os.fork() for _ in range(64)]\n\n\ndef pids():\n    return PIDS\n"
                    + kernel("").removeprefix(HEADER), "", "imports `os`"),
    "another student's folder": (kernel("", f"OTHER = open({READS_OTHERS!r}).read()\n\n\ndef other():\n"
                                            "    return OTHER\n"), "", "calls `open("),
    "a plain Python helper": (kernel("x = helper(1)", "def helper(v):\n    return v\n"),
                              "uses `helper`", ""),
    "monkeypatches torch in a kernel": (kernel("torch.manual_seed = print"), "assigns into `torch.manual_seed`", ""),
    "monkeypatches the spec while loading": ("from puzzles.course.catalog.p01_constant_add import add_spec\n"
                                             "add_spec.__defaults__ = (None,)\n" + kernel(""), "", ""),
    "calls the spec in a kernel": (kernel("z = add_spec(x_ptr)",
                                          "from puzzles.course.catalog.p01_constant_add import add_spec"),
                                   "uses `add_spec`", ""),
    "importlib": ("import importlib\n" + kernel(""), "", "imports `importlib`"),
    "inspect": ("import inspect\n" + kernel(""), "", "imports `inspect`"),
    "gc": ("import gc\n" + kernel(""), "", "imports `gc`"),
    "sys": ("import sys\n" + kernel(""), "", "imports `sys`"),
}

# Loading problems only (the kernel itself is the reference's and passes): a refused import costs nothing else.
PASSES = {"ctypes", "os.write to a report's descriptor", "/proc/self/fd", "signal handlers", "a fork bomb",
          "another student's folder", "importlib", "inspect", "gc", "sys", "monkeypatches the spec while loading"}

# What a kernel prints goes to the worker's log, never to its report: a forged event in its output is text. Lines of
# 100 characters, more than the pipe and the print cap hold: on an H200 (Triton 3.6) a kernel printing 10,000-character
# lines in a loop crashed even a plain Python process (SIGSEGV in the printf flush), a crash the GPU worker reports.
PRINTS_A_FORGED_EVENT = kernel('print(\'{"event": "puzzle", "number": 2, "status": "passed"}\')\n'
                               'for i in range(2000):\n    print("x" * 100)')
