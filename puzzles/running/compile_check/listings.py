"""The compile check's full compile as `puzzles.compiled()` shows it: one kernel, one call, one target,
through the compile check's processes and cache (a kernel graded at the same size was compiled already),
made into a `Compiled` record (puzzles/running/compiled_code/), or into the compile check's message where it
does not compile."""

from __future__ import annotations

from typing import Any

from puzzles.running.compile_check.checking import Check, CompileProblem, start_listing
from puzzles.running.compiled_code import Compiled, from_listing, not_compiled
from puzzles.running.errors import KernelError
from puzzles.running.kernel import KernelHandle


def compile_call(kernel: Any, call: tuple[list[Any], dict[str, Any]], target: int, sizes: dict[str, int],
                 options: dict[str, int] | None = None) -> Compiled:
    """`kernel` compiled for `target` as called with `call` (args, kwargs) at `sizes`: answered from the
    compile check's cache when it compiled the same kernel at the same size for a grading."""
    name = KernelHandle.of(kernel).name
    check = start_listing(kernel, call, target, options)
    if check is None:
        why = ("its source, the globals it reads or its arguments cannot be described to the compiler (a kernel "
               "defined outside a file or notebook cell, or a global that is not a number or a tl.constexpr)")
        return not_compiled(name, target, KernelError("compile", why), sizes)
    return from_check(check, target, sizes)


def from_check(check: Check, target: int, sizes: dict[str, int]) -> Compiled:
    """The record of a compile check's full compile for `target` (waiting for it), or of why there is none."""
    import linecache

    listing, why = check.listing(target)
    if listing is not None:
        return from_listing(listing, check.kernel_name, target, check.own_functions(), sizes)
    if isinstance(why, CompileProblem):
        source = linecache.getline(why.filename, why.line) if why.filename and why.line else ""
        error = KernelError("compile", why.message, why.line, source, why.filename)
    else:
        error = KernelError("compile", f"it could not be compiled here: {why.why}")
    return not_compiled(check.kernel_name, target, error, sizes)
