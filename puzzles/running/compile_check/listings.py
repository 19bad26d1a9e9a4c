"""The compile check's full compile as `puzzles.compiled()` shows it: one kernel, one call, one target,
through the compile check's processes and cache (a kernel graded at the same size was compiled already),
made into a `Compiled` record (puzzles/running/compiled_code/), or into the compile check's message where it
does not compile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from puzzles.running.compile_check.checking import Check, CompileProblem, listing_request, start_listing, submit_listing
from puzzles.running.compiled_code import Compiled, from_listing, not_compiled, reading
from puzzles.running.compiled_code.ptx_loops import InstructionCounts, instruction_counts
from puzzles.running.errors import KernelError
from puzzles.running.kernel import KernelHandle


def compile_call(kernel: Any, call: tuple[list[Any], dict[str, Any]], target: int, sizes: dict[str, int],
                 options: dict[str, int] | None = None, with_sass: bool = True) -> Compiled:
    """`kernel` compiled for `target` as called with `call` (args, kwargs) at `sizes`: answered from the
    compile check's cache when it compiled the same kernel at the same size for a grading. `with_sass`: False
    where only the numbers are wanted (registers, shared memory, warps): no disassembly, a few milliseconds."""
    name = KernelHandle.of(kernel).name
    check = start_listing(kernel, call, target, options)
    if check is None:
        why = ("its source, the globals it reads or its arguments cannot be described to the compiler (a kernel "
               "defined outside a file or notebook cell, or a global that is not a number or a tl.constexpr)")
        return not_compiled(name, target, KernelError("compile", why), sizes)
    return from_check(check, target, sizes, with_sass)


def from_check(check: Check, target: int, sizes: dict[str, int], with_sass: bool = True) -> Compiled:
    """The record of a compile check's full compile for `target` (waiting for it), or of why there is none."""
    import linecache

    listing, why = check.listing(target)
    if listing is not None:
        return from_listing(listing, check.kernel_name, target, check.own_functions(), sizes, with_sass)
    if isinstance(why, CompileProblem):
        source = linecache.getline(why.filename, why.line) if why.filename and why.line else ""
        error = KernelError("compile", why.message, why.line, source, why.filename)
    else:
        error = KernelError("compile", f"it could not be compiled here: {why.why}")
    return not_compiled(check.kernel_name, target, error, sizes)


@dataclass(frozen=True)
class LaunchNumbers:
    """What a compiled kernel asks of a multiprocessor: its warps, registers per thread (ptxas) and shared
    memory per program (bytes); the stack a thread spills registers to (bytes) and its PTX's instruction counts
    (ptx_loops.py; None: no PTX)."""

    num_warps: int
    registers: int | None
    shared: int
    spilled: int = 0
    instructions: InstructionCounts | None = None


NUMBERS: dict[str, LaunchNumbers] = {}  # compile key -> its numbers, read once per process


def launch_numbers(kernel: Any, call: tuple[list[Any], dict[str, Any]], target: int) -> LaunchNumbers | None:
    """`kernel`'s warps, registers, shared memory, spills and instruction counts compiled for `target` as called
    with `call` (an efficiency report's occupancy and issue time: read once per process, so a warm cell answers
    from memory); None where it does not compile or cannot be described."""
    request = listing_request(kernel, call, target)
    if request is None:
        return None
    spec, item = request
    if item["key"] not in NUMBERS:
        listing, _ = submit_listing(spec, item).listing(target)
        if listing is None:
            return None
        usage = reading.resources(listing.get("resources", ""), "", listing.get("ptx", ""))
        NUMBERS[item["key"]] = LaunchNumbers(int(listing.get("num_warps") or 0), usage.registers,
                                             int(listing.get("shared") or 0), usage.stack if usage.spills else 0,
                                             instruction_counts(listing.get("ptx", "")))
    return NUMBERS[item["key"]]
