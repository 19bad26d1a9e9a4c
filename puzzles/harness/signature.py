"""Step 1 of grading: the kernel's signature, checked before anything runs, and how to call it.

A signature the grader cannot call correctly is reported with the expected one, never as an
error from inside Triton.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from puzzles.execution import (
    KernelError,
    def_line,
    unwrap_kernel,
)
from puzzles.harness.cases import _Case
from puzzles.inputs import (
    spec_input_names,
)
from puzzles.puzzle import Puzzle


def _check_kernel(kernel: Any, spec: Callable[..., Any], p: Puzzle | None) -> KernelError | None:
    """A signature the grader cannot call correctly, told with the expected one (never an
    error from inside Triton, which is what calling it anyway would give)."""
    inputs = list(p.tensor_lists.pointers) if p and p.tensor_lists else list(spec_input_names(spec))
    expected = p.expected_signature() if p else None
    want_names = _expected_params(expected, inputs)
    expected = expected or f"kernel({', '.join(want_names)}, <sizes>, <blocks>: tl.constexpr)"
    want = f"\n  expected: {expected}"
    fn = unwrap_kernel(kernel)
    if fn is None:
        name = getattr(kernel, "__name__", type(kernel).__name__)
        hint = "decorate it with @triton.jit" if callable(kernel) else "pass the kernel function itself"
        where = _def_line(kernel) if hasattr(kernel, "__code__") else ()
        return KernelError("signature", f"{name} is not a Triton kernel: {hint}{want}", *where)
    params = list(inspect.signature(fn).parameters.values())
    n_ptr = len(inputs) + 1
    ptr_names = want_names[:n_ptr]
    known = set(p.canonical) if p else set()
    for s in p.sizes if p else []:
        known |= set(s)

    def bad(message: str) -> KernelError:
        return KernelError("signature", f"{fn.__name__} {message}{want}", *_def_line(fn))

    if len(params) < n_ptr:
        return bad(f"takes {len(params)} parameters but needs a pointer for each of {', '.join(ptr_names)}")
    for i, param in enumerate(params[:n_ptr]):
        # A size or a constexpr where a pointer belongs: a pointer is missing, and Triton would
        # fail deep inside with "invalid operands of type pointer<fp32> and int32".
        if param.name in known or _is_constexpr(param.annotation):
            return bad(f"has {param.name} where the pointer {ptr_names[i]} belongs (is a pointer parameter "
                       "missing?): the pointers come first, in this order")
    got, wanted = [_base(q.name) for q in params[:n_ptr]], [_base(n) for n in ptr_names]
    if got != wanted and sorted(got) == sorted(wanted):
        order = ", ".join(q.name for q in params[:n_ptr])
        return bad(f"takes its pointers as ({order}) but they are passed in the order "
                   f"({', '.join(ptr_names)}): swap them back")
    for param in params[n_ptr:]:
        if p and param.name not in known:
            return bad(f"has a parameter {param.name!r} that this puzzle does not provide "
                       f"(it provides {', '.join(sorted(known))})")
        if param.name.startswith("B") and not _is_constexpr(param.annotation):
            return bad(f"declares block size {param.name} without tl.constexpr: write `{param.name}: tl.constexpr` "
                       "(tl.arange and block shapes need compile-time sizes)")
    if p is not None:
        declared = {q.name for q in params}
        missing = [n for n in want_names[n_ptr:] if n not in declared and n not in p.unused_sizes]
        if missing:
            return bad(f"has no parameter {', '.join(missing)}: the kernel cannot know "
                       f"{'that size' if len(missing) == 1 else 'those sizes'} without it")
    return _forbidden_call(fn, p) if p and p.forbidden_calls else None


def _expected_params(signature: str | None, inputs: list[str]) -> list[str]:
    """The parameter names in the puzzle's kernel signature (pointers, then sizes), or the
    pointers a spec implies (`x_ptr`, ..., `z_ptr`) for an unknown puzzle."""
    if signature is None:
        return [f"{n}_ptr" for n in inputs] + ["z_ptr"]
    inside = signature.split("(", 1)[1].rsplit(")", 1)[0]
    return [part.split(":")[0].split("=")[0].strip() for part in inside.split(",") if part.strip()]


def _base(name: str) -> str:
    """`x_ptr`, `x_pointer` and `x` all name the tensor x."""
    for suffix in ("_ptr", "_pointer", "_p"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _forbidden_call(fn: Callable[..., Any], p: Puzzle) -> KernelError | None:
    """The first call in the kernel's own source to a function the puzzle's statement rules out."""
    import ast
    import linecache
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None  # no source to read: the result is still graded
    def called(node: ast.Call) -> str | None:  # `dot` for tl.dot(...) and for dot(...)
        return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)

    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and called(node) in p.forbidden_calls]
    if not calls:
        return None
    first = min(calls, key=lambda node: node.lineno)
    name = called(first)
    line, filename = fn.__code__.co_firstlineno + first.lineno - 1, fn.__code__.co_filename
    return KernelError("rule", f"Puzzle {p.number} asks you not to use tl.{name} (its statement says why), and "
                       f"{fn.__name__} calls it", line, linecache.getline(filename, line), filename)


def _is_constexpr(annotation: Any) -> bool:
    import triton.language as tl

    name = getattr(annotation, "__name__", "")
    return annotation is tl.constexpr or name == "constexpr" or annotation in ("tl.constexpr", "constexpr")


def _def_line(fn: Callable[..., Any]) -> tuple[int, str, str]:
    """(line, source, file) of the kernel's signature, for a signature error."""
    import linecache

    line, filename = def_line(fn), fn.__code__.co_filename
    return line, linecache.getline(filename, line), filename


def _bind(kernel: Any, spec: Callable[..., Any],
          p: Puzzle | None = None) -> Callable[[_Case], tuple[list[Any], dict[str, Any]]]:
    """How to call the kernel: pointers in spec order, then the sizes it declares, by name."""
    params = list(inspect.signature(unwrap_kernel(kernel)).parameters)
    n_inputs = len(p.tensor_lists.pointers) if p and p.tensor_lists else len(spec_input_names(spec))
    size_params = params[n_inputs + 1 :]

    def args_for(case: _Case) -> tuple[list[Any], dict[str, Any]]:
        tensors = [case.arena.tensors[n] for n in case.input_names] + [case.arena.tensors["z"]]
        return tensors, {name: case.sizes[name] for name in size_params}

    return args_for
