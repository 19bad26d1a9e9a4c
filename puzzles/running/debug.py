"""Debugging helpers for kernels, interpreted or compiled for a GPU.

They keep a kernel's output to the programs you care about:

    @triton.jit
    def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
        pid = tl.program_id(0)
        offsets = pid * B0 + tl.arange(0, B0)
        print_if("offsets", offsets, pid_0=[1])     # only program 1 prints
        breakpoint_if(pid_0=[2])                    # stop in the debugger in program 2

Under Triton's interpreter (no GPU, or TRITON_INTERPRET=1) they are Python: `print_if` prints
the values as arrays, `breakpoint_if` opens the debugger. In a kernel compiled for a GPU
`print_if` becomes `tl.device_print` under a program-id test (a line per element with its
program id and index, repeated where several threads hold the element; at most four values; the
message must be a string literal and the program ids constants), and `breakpoint_if` does
nothing: a GPU has no debugger, and the grader says how to switch the notebook to the
interpreter (`STEP_THROUGH_ADVICE`).

Each helper is one object that is both: a `@triton.jit` function that the compiler inlines into
the kernel, and a Python function that the interpreter calls. So one kernel works in both modes,
and the grader's access check (which runs a GPU kernel again under the interpreter) prints from
the same programs.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction

from puzzles.running import bfloat16
from puzzles.running.kernel import KernelHandle, unwrap_kernel

# One sentence, shown with a verdict when a compiled kernel calls breakpoint_if.
STEP_THROUGH_ADVICE = (
    "breakpoint_if does nothing on a GPU: to step through the kernel, run "
    "`import os; os.environ[\"TRITON_INTERPRET\"] = \"1\"` first thing in the notebook (before `import puzzles`), "
    "restart the kernel, and grade with `test(..., isolate=False)`.")

PidSelection = Iterable[int] | int | None


class DebugHelper(JITFunction):
    """A helper a kernel can call in both modes: the Triton compiler sees the `@triton.jit`
    function `compiled` (it only ever reads the source and signature of a JITFunction), while a
    call from Python, which is how the interpreter runs a kernel, goes to `interpreted`."""

    def __init__(self, compiled: Callable[..., Any], interpreted: Callable[..., Any]) -> None:
        super().__init__(compiled)
        self.interpreted = interpreted
        self.__doc__ = interpreted.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.interpreted(*args, **kwargs)


# -- in the interpreter ---------------------------------------------------------------------------


def _program_id() -> tuple[int, int, int] | None:
    try:
        from triton.runtime.interpreter import interpreter_builder
    except ImportError:
        return None
    grid_idx = getattr(interpreter_builder, "grid_idx", None)
    return tuple(int(i) for i in grid_idx) if grid_idx is not None else None


def _selected(pid: tuple[int, int, int], pid_0: PidSelection, pid_1: PidSelection, pid_2: PidSelection) -> bool:
    for axis, wanted in enumerate((pid_0, pid_1, pid_2)):
        if wanted is None:
            continue
        wanted = [wanted] if isinstance(wanted, int) else list(wanted)
        if pid[axis] not in wanted:
            return False
    return True


def _plain(value: Any) -> Any:
    return bfloat16.readable(value)  # a block's values (bfloat16 ones as numbers, not their bit patterns)


def _compiling_for_a_gpu() -> bool:
    """The mode `import puzzles` chose (as the harness's `on_gpu`, which this module cannot import)."""
    return os.environ.get("TRITON_INTERPRET", "0") != "1" and torch.cuda.is_available()


def _print_if_interpreted(message: str, *values: Any, pid_0: PidSelection = None, pid_1: PidSelection = None,
                          pid_2: PidSelection = None) -> None:
    """Print `message` and the values only in the chosen program ids.

    `print_if("offsets", offsets, pid_0=[1])`: in the interpreter each value prints as an array,
    once per chosen program; compiled for a GPU, `tl.device_print` prints a line per element.
    """
    pid = _program_id()
    if pid is None or not _selected(pid, pid_0, pid_1, pid_2):
        return
    print(f"program {pid}: {message}", *[_plain(v) for v in values])


def _breakpoint_if_interpreted(pid_0: PidSelection = None, pid_1: PidSelection = None,
                               pid_2: PidSelection = None) -> None:
    """Enter the debugger only in the chosen program ids (in the interpreter; nothing on a GPU).

    Grade with `test(..., isolate=False)` so the debugger can talk to you (a child process has
    no terminal); `p offsets.handle.data` shows a block's values.
    """
    if _compiling_for_a_gpu():
        return  # the grader's access check re-runs a GPU kernel interpreted: stop only where the learner chose to
    pid = _program_id()
    if pid is None or not _selected(pid, pid_0, pid_1, pid_2):
        return
    import pdb

    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # out of DebugHelper.__call__: stop in the learner's kernel
    pdb.Pdb().set_trace(frame)


# -- compiled for a GPU ----------------------------------------------------------------------------
# The program ids to select are compile-time constants: None (every program), an int, or a list
# or tuple of ints (a list literal in a kernel is a tuple of constants to Triton's compiler).


@triton.jit
def program_chosen(axis: tl.constexpr, wanted):
    """True in the programs whose id along `axis` is `wanted` (None: every program)."""
    pid = tl.program_id(axis)
    if wanted is None:
        chosen = pid == pid
    elif isinstance(wanted, int):
        chosen = pid == wanted
    else:
        chosen = pid != pid
        for i in tl.static_range(len(wanted)):
            chosen = chosen | (pid == wanted[i])
    return chosen


@triton.jit
def _print_if_compiled(message: tl.constexpr, value0=None, value1=None, value2=None, value3=None,
                       pid_0=None, pid_1=None, pid_2=None):
    if program_chosen(0, pid_0) & program_chosen(1, pid_1) & program_chosen(2, pid_2):
        if value0 is None:
            tl.device_print(message)
        elif value1 is None:
            tl.device_print(message, value0)
        elif value2 is None:
            tl.device_print(message, value0, value1)
        elif value3 is None:
            tl.device_print(message, value0, value1, value2)
        else:
            tl.device_print(message, value0, value1, value2, value3)


@triton.jit
def _breakpoint_if_compiled(pid_0=None, pid_1=None, pid_2=None):
    pass  # a GPU has no debugger: the grader shows STEP_THROUGH_ADVICE instead


def _unwrapped(f: Any) -> Callable[..., Any]:
    return getattr(f, "fn", f)  # the plain function, whether triton.jit made it interpreted or compiled


print_if = DebugHelper(_unwrapped(_print_if_compiled), _print_if_interpreted)
breakpoint_if = DebugHelper(_unwrapped(_breakpoint_if_compiled), _breakpoint_if_interpreted)


def calls_breakpoint_if(kernel: Any) -> bool:
    """Whether the kernel, or a @triton.jit helper of the learner's that it calls, names
    `breakpoint_if` (as a name or a module's attribute, `puzzles.breakpoint_if`). Given test()'s
    `KernelHandle`, the sources it already parsed are read, not parsed again."""
    handle = KernelHandle.of(kernel)
    seen: set[int] = set()

    def visit(fn: Any) -> bool:
        if fn is None or id(fn) in seen or (getattr(fn, "__module__", "") or "").startswith("triton"):
            return False
        seen.add(id(fn))
        source = handle.source(fn)
        tree = source.tree if source is not None else None
        if tree is None:
            return False
        scope = dict(getattr(fn, "__globals__", {}))

        def resolve(node: ast.AST) -> Any:
            if isinstance(node, ast.Name):
                return scope.get(node.id)
            if isinstance(node, ast.Attribute):
                owner = resolve(node.value)
                return getattr(owner, node.attr, None) if inspect.ismodule(owner) else None
            return None

        for node in ast.walk(tree):
            value = resolve(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if value is breakpoint_if:
                return True
            if hasattr(value, "arg_names") and not isinstance(value, DebugHelper) and visit(unwrap_kernel(value)):
                return True
        return False

    return visit(handle.fn)


def check_tensors(*tensors: torch.Tensor, device: str | None = None) -> None:
    """Raise a clear error unless every tensor is contiguous (and on `device`, if given).

    Kernels index memory by hand, so a transposed or sliced view silently reads the wrong
    elements; call this before launching a kernel.
    """
    for index, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"argument {index} is a {type(t).__name__}, not a tensor")
        if not t.is_contiguous():
            raise ValueError(f"argument {index} (shape {tuple(t.shape)}, strides {t.stride()}) is not contiguous: "
                             "call .contiguous() first")
        if device is not None and t.device.type != torch.device(device).type:
            raise ValueError(f"argument {index} is on {t.device}, expected {device}")
