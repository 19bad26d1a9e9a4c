"""`test()`: the autograder cell of every notebook.

    test(add_kernel, add_spec, nelem={"N0": 32})

runs the kernel at the canonical size and at every variation its puzzle allows, on fresh
random inputs, with the output poisoned and every memory access recorded and guarded, and
returns a `TestResult`. On a machine without a GPU the kernel runs in Triton's interpreter
inside a child process (a wild pointer or an endless loop cannot hurt the notebook); on a
CUDA machine it is compiled and run on the GPU, with guard zones checked after the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from puzzles import catalog, compat
from puzzles.execution import (
    KernelError,
    RunOutput,
    can_fork,
    def_line,
    error_from_exception,
    kernel_file,
    launch_interpreted,
    run_in_child,
    time_limit,
    timeout_message,
    unwrap_kernel,
)
from puzzles.inputs import (
    SpecError,
    build_arena,
    call_spec,
    poison_,
    random_tensor,
    spec_input_names,
    spec_signature,
    unwritten_mask,
)
from puzzles.puzzle import Puzzle, Sizes, default_grid
from puzzles.recording import Recorder, Trace
from puzzles.result import MAX_SHOWN, Mismatch, SizeOutcome, TestResult

DEFAULT_TIMEOUT = 20.0  # seconds per size; the puzzles' references take well under one


def on_gpu() -> bool:
    """True when kernels are compiled for a CUDA GPU rather than interpreted."""
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"


@dataclass
class _Case:
    sizes: Sizes
    seed: int
    grid: tuple[int, ...]
    arena: Any
    input_names: list[str]
    expected: torch.Tensor
    zero_init: bool = False
    rtol: float = 1e-3
    atol: float = 1e-3


def test(
    kernel: Any,
    spec: Callable[..., Any] | None = None,
    nelem: Sizes | None = None,
    B: Sizes | None = None,
    *,
    puzzle: Puzzle | int | None = None,
    sizes: list[Sizes] | None = None,
    seed: int | None = None,
    viz: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    isolate: bool | None = None,
    record: bool = True,
    quiet: bool = False,
    perf: bool = False,
) -> TestResult:
    """Grade `kernel` against `spec` at the puzzle's sizes and return the verdict.

    nelem, B: the canonical sizes and blocks, as the classic notebooks pass them.
    sizes: test exactly these size dicts instead of the puzzle's own list.
    seed: reproduce a failure (every failure reports the seed it used).
    viz: draw the memory accesses under the verdict.
    isolate: run in a child process (default where the OS can fork); False runs in this
        process, so `breakpoint()` inside the kernel works.
    perf: on a GPU, once the kernel is right, time it at the puzzle's performance size and
        compare with this device's measured limits and with torch.
    """
    started = time.perf_counter()
    seed = random.randrange(1, 10**6) if seed is None else seed
    found = _resolve_puzzle(puzzle, spec, kernel)
    spec = spec if found is None else found.spec
    name = getattr(unwrap_kernel(kernel), "__name__", repr(kernel))
    title = f"Puzzle {found.number}: {found.title}" if found else getattr(spec, "__name__", "kernel")
    result = TestResult(title, name, [], 0.0, seed, device=_device_name())

    # The checked interpreter relies on Triton's internals: refuse an untested Triton in words.
    unsupported = compat.triton_problem()
    problem = KernelError("setup", unsupported) if unsupported else None
    if problem is None:
        problem = _check_kernel(kernel, spec, found) if spec is not None else KernelError(
            "spec", "pass the spec: test(kernel, spec, ...); this kernel's name matches no puzzle")
    size_list = [] if problem else _size_list(found, nelem, B, sizes)
    if problem is None:
        try:
            cases = [_make_case(spec, found, s, seed + i, found.input_scale(i) if found else 1.0)
                     for i, s in enumerate(size_list)]
        except (SpecError, TypeError, ValueError) as err:
            problem = KernelError("spec", f"cannot build inputs from the spec: {err}")
    if problem is not None:
        result.error = problem
    else:
        fn = _bind(kernel, spec)
        result.outcomes = _run_cases(kernel, fn, cases, timeout, isolate, record)
        if found is None:
            result.notes.append("unknown puzzle: tested only the sizes given")
        if perf and result.passed:
            _measure_speed(kernel, fn, spec, found, seed, result)
    result.seconds = time.perf_counter() - started
    if not quiet:
        _show(result)
    if viz:
        from puzzles import viz as _viz

        _viz.show(result, puzzle=found)
    return result


# -- which puzzle, which sizes ---------------------------------------------------------------------


def _resolve_puzzle(puzzle: Puzzle | int | None, spec: Any, kernel: Any) -> Puzzle | None:
    if isinstance(puzzle, Puzzle):
        return puzzle
    if isinstance(puzzle, int):
        return catalog.get(puzzle)
    by_spec = catalog.find(spec_name=getattr(spec, "__name__", None))
    if by_spec is not None:
        return by_spec
    fn = unwrap_kernel(kernel)
    return catalog.find(kernel_name=getattr(fn, "__name__", None)) if spec is None else None


def _size_list(p: Puzzle | None, nelem: Sizes | None, B: Sizes | None, sizes: list[Sizes] | None) -> list[Sizes]:
    if sizes is not None:
        return [dict(s) for s in sizes]
    given = {**(nelem or {}), **(B or {})}
    if p is None:
        if not given:
            raise ValueError("an unknown puzzle needs its sizes: test(kernel, spec, nelem={...}, B={...})")
        return [given]
    canonical = {**p.canonical, **given}
    rest = [dict(s) for s in p.sizes[1:] if s != canonical]
    return [canonical] + rest


def _make_case(spec: Callable[..., Any], p: Puzzle | None, sizes: Sizes, seed: int, scale: float) -> _Case:
    inputs, out = spec_signature(spec)
    shapes = {t.name: (t.shape(sizes), t.dtype) for t in inputs}
    shapes[out.name] = (out.shape(sizes), out.dtype)
    arena = build_arena(shapes)
    gen = torch.Generator().manual_seed(seed)
    for t in inputs:
        arena.tensors[t.name].copy_(random_tensor(shapes[t.name][0], t.dtype, gen, scale))
    if p is not None and p.output_init == "zeros":
        arena.tensors[out.name].zero_()
    else:
        poison_(arena.tensors[out.name])
    expected = call_spec(spec, [arena.tensors[t.name].clone() for t in inputs], sizes)
    if not isinstance(expected, torch.Tensor):
        raise SpecError(f"{spec.__name__} must return a tensor, returned {type(expected).__name__}")
    if tuple(expected.shape) != shapes[out.name][0] or expected.dtype != out.dtype:
        raise SpecError(
            f"{spec.__name__} returned {expected.dtype} of shape {tuple(expected.shape)} but its annotation says "
            f"{out.dtype} of shape {shapes[out.name][0]}")
    grid = (p.grid if p else default_grid)(sizes)
    rtol, atol = (p.rtol, p.atol) if p else (1e-3, 1e-3)
    zero_init = p is not None and p.output_init == "zeros"
    names = [t.name for t in inputs]
    return _Case(sizes, seed, grid, arena, names, expected, zero_init=zero_init, rtol=rtol, atol=atol)


# -- the kernel's signature --------------------------------------------------------------------------


def _check_kernel(kernel: Any, spec: Callable[..., Any], p: Puzzle | None) -> KernelError | None:
    fn = unwrap_kernel(kernel)
    if fn is None:
        hint = "decorate it with @triton.jit" if callable(kernel) else "pass the kernel function itself"
        return KernelError("signature", f"{kernel!r} is not a Triton kernel: {hint}")
    params = list(inspect.signature(fn).parameters.values())
    inputs = list(spec_input_names(spec))
    expected = p.expected_signature() if p else None
    want = f"\n  expected: {expected}" if expected else ""
    n_ptr = len(inputs) + 1
    if len(params) < n_ptr:
        return KernelError("signature", f"{fn.__name__} takes {len(params)} parameters but needs a pointer for each of "
                           f"{', '.join(inputs)} and the output z{want}", *_def_line(fn))
    known = set(p.canonical) if p else set()
    for s in p.sizes if p else []:
        known |= set(s)
    for param in params[n_ptr:]:
        if p and param.name not in known:
            return KernelError("signature", f"{fn.__name__} has a parameter {param.name!r} that this puzzle does not "
                               f"provide (it provides {', '.join(sorted(known))}){want}", *_def_line(fn))
        if param.name.startswith("B") and not _is_constexpr(param.annotation):
            return KernelError("signature", f"block size {param.name} must be declared `{param.name}: tl.constexpr` "
                               f"(tl.arange and block shapes need compile-time sizes){want}", *_def_line(fn))
    return _forbidden_call(fn, p) if p and p.forbidden_calls else None


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


def _bind(kernel: Any, spec: Callable[..., Any]) -> Callable[[_Case], tuple[list[Any], dict[str, Any]]]:
    """How to call the kernel: pointers in spec order, then the sizes it declares, by name."""
    params = list(inspect.signature(unwrap_kernel(kernel)).parameters)
    n_inputs = len(spec_input_names(spec))
    size_params = params[n_inputs + 1 :]

    def args_for(case: _Case) -> tuple[list[Any], dict[str, Any]]:
        tensors = [case.arena.tensors[n] for n in case.input_names] + [case.arena.tensors["z"]]
        return tensors, {name: case.sizes[name] for name in size_params}

    return args_for


# -- running -------------------------------------------------------------------------------------------


def _run_cases(kernel: Any, args_for: Callable, cases: list[_Case], timeout: float,
               isolate: bool | None, record: bool) -> list[SizeOutcome]:
    if on_gpu():
        runs = [_run_compiled_and_checked(kernel, args_for, case, timeout, record) for case in cases]
    else:
        jobs = [(lambda c=case: _run_interpreted(kernel, args_for, c, record)) for case in cases]
        if isolate is None:
            isolate = can_fork()
        runs = []
        if isolate:
            for status, payload in run_in_child(jobs, timeout):
                runs.append(payload if status == "ok" else RunOutput(error=KernelError(status, payload)))
        else:
            for job in jobs:
                with time_limit(timeout):
                    runs.append(job())
                if runs[-1].error is not None and runs[-1].error.kind == "timeout":
                    runs[-1].error.message = timeout_message(timeout)
                    break
    outcomes = [_judge(case, run, kernel_file(kernel)) for case, run in zip(cases, runs, strict=False)]
    outcomes += [SizeOutcome(c.sizes, c.seed, "not run") for c in cases[len(runs):]]
    return outcomes


def _run_interpreted(kernel: Any, args_for: Callable, case: _Case, record: bool) -> RunOutput:
    args, kwargs = args_for(case)
    arena = case.arena
    trace = Trace({n: (tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in arena.tensors.items()},
                  tuple(case.grid) + (1,) * (3 - len(case.grid)), recorded=record)
    recorder = Recorder(arena.regions(), {n: t.element_size() for n, t in arena.tensors.items()},
                        set(case.input_names), trace, kernel_file(kernel), record=record)
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        error = launch_interpreted(kernel, case.grid, args, kwargs, recorder)
    seconds = time.perf_counter() - started
    return RunOutput(arena.tensors["z"].clone(), trace, error, out.getvalue(), seconds)


def _run_compiled_and_checked(kernel: Any, args_for: Callable, case: _Case, timeout: float, record: bool) -> RunOutput:
    """The GPU's answer, with the interpreter's account of every access.

    A compiled kernel's out-of-bounds loads leave no trace and its stores only damage guard
    zones, so the same kernel also runs once under the guarded interpreter on CPU copies (in
    this process: CUDA forbids forking) to name each invalid access, its program and its line.
    """
    compiled = _run_compiled(kernel, args_for, case)
    if compiled.error is not None or not record:
        return compiled
    with time_limit(timeout):
        checked = _run_interpreted(kernel, args_for, case, record=True)
    compiled.stdout = checked.stdout  # what the kernel printed, as the interpreter ran it
    if checked.error is None:
        compiled.trace = checked.trace
    else:
        compiled.stdout += (f"(the access check under Triton's interpreter could not run: "
                            f"{checked.error.describe()})\n")
    return compiled


def _run_compiled(kernel: Any, args_for: Callable, case: _Case) -> RunOutput:
    """Compile and run on the GPU; out-of-bounds writes show up as damaged guard zones."""
    cpu = case.arena
    gpu = build_arena({n: (tuple(t.shape), t.dtype) for n, t in cpu.tensors.items()}, device="cuda")
    gpu.buffer.fill_(0xA5)
    for n, t in cpu.tensors.items():
        gpu.tensors[n].copy_(t)
    guard = gpu.buffer.clone()
    gpu_case = dataclasses.replace(case, arena=gpu)
    args, kwargs = args_for(gpu_case)
    started = time.perf_counter()
    try:
        kernel[case.grid](*args, **kwargs)
        torch.cuda.synchronize()
    except Exception as exc:  # compile errors and launch failures of the learner's kernel
        return RunOutput(error=error_from_exception(exc, kernel))
    seconds = time.perf_counter() - started
    # Every byte outside the tensors must still hold the guard pattern.
    damaged = gpu.buffer != guard
    for t in gpu.tensors.values():
        start = t.data_ptr() - gpu.buffer.data_ptr()
        damaged[start : start + t.numel() * t.element_size()] = False
    violations = []
    if damaged.any():
        # The guard zone after a tensor belongs to it (the arena spaces tensors that way).
        first = gpu.buffer.data_ptr() + int(torch.nonzero(damaged)[0])
        regions = gpu.regions()
        owner = max((r for r in regions if r[0] <= first), default=regions[0], key=lambda r: r[0])
        violations.append(f"a store wrote outside {owner[2]} ({int(damaged.sum())} bytes in guard zones)")
    return RunOutput(gpu.tensors["z"].cpu(), None, None, "", seconds, violations)


# -- judging ---------------------------------------------------------------------------------------------


def _judge(case: _Case, run: RunOutput, filename: str | None) -> SizeOutcome:
    o = SizeOutcome(case.sizes, case.seed, "passed", seconds=run.seconds, stdout=run.stdout,
                    output_shape=tuple(case.expected.shape), trace=run.trace, expected=case.expected)
    if run.error is not None:
        o.status = "timeout" if run.error.kind == "timeout" else "error"
        o.error = run.error
        return o
    out, expected = run.output, case.expected
    o.output = out
    if run.trace is not None:
        o.invalid_accesses = run.trace.invalid + run.trace.stores_to_inputs
    if run.guard_violations and not o.invalid_accesses:  # the interpreter's account is more precise
        o.error = KernelError("out of bounds", "; ".join(run.guard_violations))
        o.status = "out of bounds"
        return o
    recorded = run.trace is not None and run.trace.recorded
    if case.zero_init:
        # Accumulating outputs start at zero: only the recorded stores tell what was written.
        unwritten = _never_stored(run.trace, out.shape) if recorded else torch.zeros_like(out, dtype=torch.bool)
        race = _race(run.trace, filename) if recorded else None
        if race is not None:
            o.status, o.error = "race", race
            return o
    else:
        unwritten = unwritten_mask(out)
        if recorded:  # a kernel may legitimately write the poison value (an int8 output can)
            unwritten &= _never_stored(run.trace, out.shape)
    if expected.dtype.is_floating_point:
        e64, o64 = expected.double(), torch.where(unwritten, 0, out).double()
        close = (o64 - e64).abs() <= case.atol + case.rtol * e64.abs()
        close |= torch.isnan(e64) & torch.isnan(o64)
    else:
        close = out == expected
    wrong = ~close & ~unwritten
    o.status_map = (wrong.to(torch.int8) + 2 * unwritten.to(torch.int8)).numpy()
    o.unwritten_count = int(unwritten.sum())
    o.unwritten = [tuple(i) for i in torch.nonzero(unwritten)[:MAX_SHOWN].tolist()]
    o.mismatch_count = int(wrong.sum())
    o.mismatches = [Mismatch(tuple(i), _scalar(expected[tuple(i)]), _scalar(out[tuple(i)]))
                    for i in torch.nonzero(wrong)[:MAX_SHOWN].tolist()]
    if o.invalid_accesses:
        o.status = "out of bounds"
    elif o.unwritten_count:
        o.status = "unwritten"
    elif o.mismatch_count:
        o.status = "wrong"
    return o


def _race(trace: Trace, filename: str | None) -> KernelError | None:
    """Two programs writing one output element where one of them uses a plain store.

    Programs run one after another in the interpreter, so a load-add-store into a shared output
    gives the right sum here and a wrong one on a GPU, where they run at once: name it.
    """
    import linecache

    import numpy as np

    gx, gy, _ = trace.grid
    writers: dict[int, tuple[int, bool, Any]] = {}  # element -> (program, plain store?, access)
    for access in trace.accesses:
        if access.tensor != "z" or access.op == "load" or not access.elements.size:
            continue
        program = access.program[0] + gx * (access.program[1] + gy * access.program[2])
        for element in np.unique(access.elements).tolist():
            first = writers.setdefault(element, (program, access.op == "store", access))
            if first[0] != program and (first[1] or access.op == "store"):
                plain = first[2] if first[1] else access
                return KernelError(
                    "race",
                    f"programs {first[2].program} and {access.program} both write z element {element} and "
                    f"program {plain.program} uses a plain tl.store: on a GPU they run at the same time and one "
                    "overwrites the other (use tl.atomic_add to accumulate into a shared output)",
                    plain.line, linecache.getline(filename or "", plain.line or 0), filename)
    return None


def _never_stored(trace: Trace, shape: torch.Size) -> torch.Tensor:
    """Output elements that no store or atomic of the run reached."""
    written = torch.zeros(shape.numel(), dtype=torch.bool)
    for access in trace.accesses:
        if access.tensor == "z" and access.op != "load" and access.elements.size:
            written[torch.from_numpy(access.elements)] = True
    return ~written.view(shape)


def _scalar(t: torch.Tensor) -> float:
    v = t.item()
    return float(v) if not isinstance(v, bool) else float(v)


def _measure_speed(kernel: Any, args_for: Callable, spec: Callable[..., Any], p: Puzzle | None, seed: int,
                   result: TestResult) -> None:
    if not on_gpu():
        result.notes.append("speed is measured on a CUDA GPU; here the kernel ran in Triton's interpreter")
        return
    from puzzles import perf as _perf
    from puzzles.inputs import draw_inputs

    sizes = (p.perf_size if p and p.perf_size else None) or result.outcomes[0].sizes
    inputs, out = draw_inputs(spec, sizes, seed, device="cuda")
    arena = SimpleNamespace(tensors={**dict(zip(spec_input_names(spec), inputs, strict=True)), "z": out})
    case = _Case(sizes, seed, (p.grid if p else default_grid)(sizes), arena, spec_input_names(spec), out)
    args, kwargs = args_for(case)
    flops = p.flops(sizes) if p and p.flops else 0
    zero = p is not None and p.output_init == "zeros"

    def launch() -> None:
        if zero:
            out.zero_()
        kernel[case.grid](*args, **kwargs)

    result.perf = _perf.measure(launch, [*inputs, out], sizes, flops, lambda: call_spec(spec, inputs, sizes))


def _device_name() -> str:
    if on_gpu():
        return f"{torch.cuda.get_device_name()} (compiled)"
    return "CPU (Triton interpreter)"


def _show(result: TestResult) -> None:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and hasattr(shell, "kernel"):
        from IPython.display import display

        display(result)
    else:
        print(result)



test.__test__ = False  # the autograder, not a pytest test (test files import it by name)
