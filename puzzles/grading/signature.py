"""Step 1 of grading: the kernel's signature, checked before anything runs, and how to call it.

A signature the grader cannot call correctly is reported with the expected one, never as an
error from inside Triton.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from puzzles.course.puzzle import Puzzle
from puzzles.grading.cases import Case
from puzzles.grading.job import GradingJob
from puzzles.grading.operations import forbidden_call_error
from puzzles.running.errors import KernelError
from puzzles.running.lines import def_line


def check_kernel(job: GradingJob) -> KernelError | None:
    """A signature the grader cannot call correctly, told with the expected one (never an
    error from inside Triton, which is what calling it anyway would give)."""
    kernel, p, fn = job.kernel, job.puzzle, job.fn
    inputs = job.input_names
    expected = job.expected_signature
    want_names = _expected_params(expected, inputs)
    expected = expected or f"kernel({', '.join(want_names)}, <sizes>, <blocks>: tl.constexpr)"
    want = f"\n  expected: {expected}"
    if fn is None:
        name = getattr(kernel, "__name__", type(kernel).__name__)
        hint = "decorate it with @triton.jit" if callable(kernel) else "pass the kernel function itself"
        where = _def_line(kernel) if hasattr(kernel, "__code__") else ()
        return KernelError("signature", f"{name} is not a Triton kernel: {hint}{want}", *where)
    params = list(job.handle.parameters)
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
    supplied = job.handle.supplied
    for param in params[n_ptr:]:
        provided = param.name in known or param.name in supplied or param.default is not inspect.Parameter.empty
        if p and not provided:
            return bad(f"has a parameter {param.name!r} that this puzzle does not provide "
                       f"(it provides {', '.join(sorted(known))}; a parameter with a default value, or one that "
                       "@triton.heuristics or an autotune config supplies, is fine too)")
        if param.name.startswith("B") and not _is_constexpr(param.annotation) and param.name not in supplied:
            return bad(f"declares block size {param.name} without tl.constexpr: write `{param.name}: tl.constexpr` "
                       "(tl.arange and block shapes need compile-time sizes)")
    if p is not None:
        declared = {q.name for q in params}
        missing = [n for n in want_names[n_ptr:] if n not in declared and n not in p.unused_sizes]
        if missing:
            return bad(f"has no parameter {', '.join(missing)}: the kernel cannot know "
                       f"{'that size' if len(missing) == 1 else 'those sizes'} without it")
        wrong_place = _positional_mismatch([q.name for q in params], n_ptr, p, job.expected_signature)
        if wrong_place:
            return bad(wrong_place)
    return forbidden_call_error(job.handle, p.forbidden_calls, p.number) if p and p.forbidden_calls else None


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


def _is_constexpr(annotation: Any) -> bool:
    import triton.language as tl

    name = getattr(annotation, "__name__", "")
    return annotation is tl.constexpr or name == "constexpr" or annotation in ("tl.constexpr", "constexpr")


def _def_line(fn: Callable[..., Any]) -> tuple[int, str, str]:
    """(line, source, file) of the kernel's signature, for a signature error."""
    import linecache

    line, filename = def_line(fn), fn.__code__.co_filename
    return line, linecache.getline(filename, line), filename


def _positional_sizes(p: Puzzle | None) -> tuple[str, ...]:
    """Sizes the notebook's own launch passes by position, right after the pointers (puzzle 20's
    benchmark: `silu_mul_kernel[grid](x, y, z, N0)`); every other size is passed by name."""
    return p.positional_sizes if p is not None else ()


def _launch_text(p: Puzzle, n_ptr: int, expected: str | None) -> str:
    pointers = [_base(n) for n in _expected_params(expected, [])[:n_ptr]]
    return f"{p.kernel_name}[grid]({', '.join(pointers + list(_positional_sizes(p)))})"


def _positional_mismatch(params: list[str], n_ptr: int, p: Puzzle, expected: str | None) -> str | None:
    for i, name in enumerate(_positional_sizes(p)):
        at = params[n_ptr + i] if n_ptr + i < len(params) else None
        if at != name:
            launch = _launch_text(p, n_ptr, expected)
            return (f"takes {at} where the notebook's own launch, `{launch}`, passes {name} by "
                    f"position: declare {name} right after the pointers, as the statement does")
    return None


def argument_order_note(job: GradingJob) -> str | None:
    """A note when the kernel declares the statement's sizes in another order (they are passed by name)."""
    fn, p = job.fn, job.puzzle
    if fn is None or p is None:
        return None
    wanted = _expected_params(job.expected_signature, [])
    declared = [n for n in job.handle.param_names if n in wanted]
    statement = [n for n in wanted if n in declared]
    if declared == statement:
        return None
    return (f"{fn.__name__} declares its parameters in the order ({', '.join(declared)}), the statement in the order "
            f"({', '.join(statement)}): the grader passes the pointers by position and the sizes by name (as "
            "Triton-Puzzles' test does), so the order of the sizes does not matter here; a launch that passes them "
            "by position would bind them wrong")


def bind_arguments(job: GradingJob) -> Callable[[Case], tuple[list[Any], dict[str, Any]]]:
    """How to call the kernel: pointers in spec order, then the sizes the notebook's launch passes by
    position, then the other sizes it declares, by name, and what its @triton.heuristics compute."""
    params = job.handle.param_names
    n_inputs = len(job.input_names)
    positional = _positional_sizes(job.puzzle)
    size_params = [n for n in params[n_inputs + 1 :] if n not in positional]
    heuristics = job.handle.heuristics

    def args_for(case: Case) -> tuple[list[Any], dict[str, Any]]:
        tensors = [case.arena.tensors[n] for n in case.input_names] + [case.arena.tensors["z"]]
        args = tensors + [case.sizes[n] for n in positional]
        kwargs = {name: case.sizes[name] for name in size_params if name in case.sizes}
        # The interpreted run calls the jitted function itself: apply the heuristics as Triton would
        # (outermost first, each seeing the arguments so far). On a GPU they compute the same values.
        for wrapper in heuristics:
            for name, rule in wrapper.values.items():
                kwargs[name] = rule({**dict(zip(params, args, strict=False)), **kwargs})
        return args, kwargs

    return args_for

