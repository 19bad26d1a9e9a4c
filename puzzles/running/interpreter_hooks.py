"""The interpreter internals the grader wraps, found on the installed Triton by what they receive.

Triton's CPU interpreter has no public hook for memory accesses. The grader (recording.py) wraps the builder's
methods that perform every load, store and atomic, and the language layer's methods that receive a load's
`other=` as the kernel wrote it (the builder may get None for it: see Recorder). Their names are private and
change between releases (Triton 3.8 renamed `TritonSemantic._load_legacy` to `load`, triton#9669, and a hook
on the old name was silently absent), so each is located here by its leading parameters and, for the builder's,
by the native memory function it calls; a builder method that reaches memory another way is a hook missing.
A Triton on which one cannot be found is refused in words (`hooks_problem`): a kernel is never judged
without its hooks.

The launch's other patches (interpreter.py) only make grading faster or undo the interpreter's language
patches; each is skipped where its internal is absent and cannot change a verdict, except `_patch_lang`,
which is the name the interpreter's launcher calls (found in its code, below).

This module imports triton only inside its functions: compat and the doctor import it without one.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The builder's methods through which every memory access of an interpreted kernel passes (a block pointer's,
# a tensor descriptor's and an atomic load's included), by the parameters each receives first (the wrappers
# take them by position) and the native memory function each calls (what it does).
BUILDER_METHODS = {
    "load": ("ptrs", "mask", "other"),
    "store": ("ptrs", "value", "mask"),
    "atomic": ("rmwOp", "ptr", "val", "mask"),
    "atomic_cas": ("ptr", "cmp", "val"),
}
MEMORY_CALLS = {"load": "load", "store": "store", "atomic": "atomic_rmw", "atomic_cas": "atomic_cas"}
_MEMORY_CALL = re.compile(r"\b_interpreter\.(load|store|atomic_\w+)\(")
# The language layer's methods that receive tl.load's pointer, mask and `other=` (3.5 to 3.7: `load`,
# `_load_legacy`, `_load_block_pointer`; 3.8 and later: `load`).
LOAD_WITH_OTHER = ("ptr", "mask", "other")


class HooksMissing(RuntimeError):
    """An internal the grader must wrap is not found on this Triton."""


@dataclass(frozen=True)
class Hooks:
    """Where the wrapped internals are on this Triton."""

    builder_methods: dict[str, str]  # role (BUILDER_METHODS) -> the builder's method name
    semantic_class: type
    load_methods: tuple[str, ...]  # the semantic class's methods that receive (ptr, mask, other, ...)
    patch_lang: str  # the interpreter module's function its launcher calls to patch triton.language


def leading_parameters(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of a method's positional parameters after `self` (read from its code: inspect.signature
    is a hundred times slower, and this runs over every method of two classes)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return tuple(code.co_varnames[1:code.co_argcount]) if code is not None else ()


def methods_taking(cls: type, leading: tuple[str, ...]) -> list[str]:
    """The methods of `cls` (its bases' included) whose parameters after `self` start with `leading`."""
    return sorted(name for name, member in inspect.getmembers(cls, inspect.isfunction)
                  if leading_parameters(member)[:len(leading)] == leading)


def _version() -> str:
    import triton

    return triton.__version__


def _launcher_patch_function(interpreter: Any) -> str | None:
    """The name of the interpreter module's function that its launchers (the grid executor, the interpreted
    function) call to patch the language: the one patching function their methods name."""
    names = set()
    for cls in (getattr(interpreter, "GridExecutor", None), getattr(interpreter, "InterpretedFunction", None)):
        for member in vars(cls).values() if cls is not None else ():
            names.update(getattr(getattr(member, "__code__", None), "co_names", ()))
    found = [n for n in names if "patch" in n and inspect.isfunction(getattr(interpreter, n, None))]
    return found[0] if len(found) == 1 else None


def memory_calls(cls: type) -> dict[str, set[str]] | None:
    """Method name -> the interpreter's native memory functions it calls (`_interpreter.load`, ...), for the
    methods of `cls` that call one; None where Triton's source cannot be read."""
    found: dict[str, set[str]] = {}
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if "_interpreter" not in member.__code__.co_names:  # cheap: a call of _interpreter.x names it
            continue
        try:
            source = inspect.getsource(member)
        except (OSError, TypeError):
            return None
        calls = set(_MEMORY_CALL.findall(source))
        if calls:
            found[name] = calls
    return found


@functools.lru_cache(maxsize=1)
def locate() -> Hooks:
    """Find every wrapped internal on the installed Triton, or raise HooksMissing saying which is not there."""
    from triton.runtime import interpreter

    missing = []
    builder = getattr(interpreter, "interpreter_builder", None)
    builder_methods = {}
    for role, leading in BUILDER_METHODS.items():
        found = methods_taking(type(builder), leading) if builder is not None else []
        if len(found) == 1:
            builder_methods[role] = found[0]
        else:
            missing.append(f"the builder's {role} method taking ({', '.join(leading)}, ...)"
                           + (f" (several: {', '.join(found)})" if found else ""))
    semantic = getattr(interpreter, "interpreter_semantic", None)
    load_methods = tuple(methods_taking(type(semantic), LOAD_WITH_OTHER)) if semantic is not None else ()
    if not load_methods:
        missing.append("the language layer's load taking (ptr, mask, other, ...)")
    patch_lang = _launcher_patch_function(interpreter)
    if patch_lang is None:
        missing.append("the function the interpreter's launcher calls to patch triton.language")
    for name in ("TensorHandle", "InterpretedFunction", "InterpreterError"):
        if not hasattr(interpreter, name):
            missing.append(f"triton.runtime.interpreter.{name}")
    calls = memory_calls(type(builder)) if builder is not None else None
    if calls is not None:
        for role, name in builder_methods.items():
            if MEMORY_CALLS[role] not in calls.get(name, set()):
                missing.append(f"the builder's {role} method ({name} does not call _interpreter.{MEMORY_CALLS[role]})")
        unchecked = sorted(set(calls) - set(builder_methods.values()))
        if unchecked:
            missing.append(f"builder methods that reach memory around the checked ones: {', '.join(unchecked)}")
    if builder is not None and not callable(getattr(builder, "set_grid_idx", None)):
        missing.append("the builder's program index (set_grid_idx)")
    if missing:
        raise HooksMissing("; ".join(missing))
    return Hooks(builder_methods, type(semantic), load_methods, patch_lang)


def hooks_problem() -> str | None:
    """None when every hook is found on the installed Triton, else one line for the learner: which Triton,
    what is missing, what is supported and what to install."""
    from puzzles.running import compat

    try:
        locate()
    except HooksMissing as err:
        return (f"the grader cannot check kernels on triton {_version()}: its hooks into Triton's interpreter do "
                f"not fit this version (not found: {err}). The course supports triton {compat.SUPPORTED}: "
                f"{compat.INSTALL}")
    return None


def require() -> Hooks:
    """The hooks, or HooksMissing with `hooks_problem`'s words (grading never runs without them)."""
    problem = hooks_problem()
    if problem:
        raise HooksMissing(problem)
    return locate()


# -- what the installed Triton can run, for the doctor and the course's advice ----------------------------

def has_block_pointers() -> bool:
    """tl.make_block_ptr and tl.advance exist (Triton 3.9 removed them: tl.advance is gone and make_block_ptr
    raises NotImplementedError)."""
    import triton.language as tl

    return hasattr(tl, "make_block_ptr") and hasattr(tl, "advance")


def has_tensor_descriptors() -> bool:
    """Device-side tensor descriptors (tl.make_tensor_descriptor) exist and the interpreter runs them."""
    import triton.language as tl
    from triton.runtime import interpreter

    return (hasattr(tl, "make_tensor_descriptor")
            and callable(getattr(interpreter.InterpreterBuilder, "create_make_tensor_descriptor", None)))


def has_warp_specialized_range() -> bool:
    """Device-side tensor descriptors run, and tl.range takes warp_specialize (puzzle 31's K loop). Read from
    triton.language's source, not from tl.range: once a kernel has run in this process the interpreter has put a
    function taking **kwargs in tl.range's place (3.5), whose signature names nothing."""
    import inspect

    import triton.language.core as core

    if inspect.isclass(core.range):
        return has_tensor_descriptors() and "warp_specialize" in inspect.signature(core.range.__init__).parameters
    try:
        source = inspect.getsource(core)
    except (OSError, TypeError):
        return False
    return has_tensor_descriptors() and "warp_specialize" in source


def interprets_dot_scaled() -> bool:
    """The interpreter runs tl.dot_scaled (3.8 and later; 3.7's has no builder method for it)."""
    from triton.runtime import interpreter

    return callable(getattr(interpreter.InterpreterBuilder, "create_dot_scaled", None))
