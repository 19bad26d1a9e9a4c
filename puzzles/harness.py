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
from puzzles import compile_check as _compile_check
from puzzles.autotune import autotune_missing, is_autotuned, test_every_config
from puzzles.execution import (
    KernelError,
    KernelTimeout,
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
from puzzles.layouts import storage_numel, strided_view, strides_of
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
    row_tolerance: bool = False
    guarded: list[str] | None = None  # regions no store may touch, when more than the kernel's inputs
    relink: Callable[[Any], None] | None = None  # rewrites an address table for another arena (GPU copy)


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
    compile_check: bool | str = True,
) -> TestResult:
    """Grade `kernel` against `spec` at the puzzle's sizes and return the verdict.

    nelem, B: the canonical sizes and blocks, as the classic notebooks pass them.
    sizes: test exactly these size dicts instead of the puzzle's own list.
    seed: reproduce a failure (every failure reports the seed it used).
    viz: draw the memory accesses under the verdict.
    timeout: seconds per size; the first size that runs past it is reported (with the line
        the kernel was on) and no later size runs.
    isolate: run in a child process (default where the OS can fork); False runs in this
        process, so `breakpoint()` inside the kernel works, and the debugger and the kernel's
        prints use the notebook's own streams (otherwise prints are shown under the verdict).
    perf: on a GPU, once the kernel is right, time it at the puzzle's performance size and
        compare with this device's measured limits and with torch.
    compile_check: without a GPU, also compile the kernel for real GPU targets (beside the
        interpreted run) and fail it if it would not compile; "full" waits for the whole compile.

    An @triton.autotune kernel is graded under each of its configs (puzzles/autotune.py).
    """
    started = time.perf_counter()
    seed = random.randrange(1, 10**6) if seed is None else seed
    found = _resolve_puzzle(puzzle, spec, kernel)
    spec = spec if found is None else found.spec
    missing = autotune_missing(kernel, found, seed, quiet)
    if missing is not None:
        return missing
    if is_autotuned(kernel):  # graded under each of its configs, in one verdict
        return test_every_config(kernel, spec, found, sizes, nelem, seed=seed, viz=viz, timeout=timeout,
                                 isolate=isolate, record=record, quiet=quiet, perf=perf, compile_check=compile_check)
    name = getattr(unwrap_kernel(kernel), "__name__", None) or getattr(kernel, "__name__", repr(kernel))
    title = f"Puzzle {found.number}: {found.title}" if found else getattr(spec, "__name__", "kernel")
    result = TestResult(title, name, [], 0.0, seed, device=_device_name())

    # The checked interpreter relies on Triton's internals: refuse an untested Triton in words.
    unsupported = compat.triton_problem()
    problem = KernelError("setup", unsupported) if unsupported else None
    if problem is None:
        problem = _check_kernel(kernel, spec, found) if spec is not None else KernelError(
            "spec", "pass the spec: test(kernel, spec, ...); this kernel's name matches no puzzle")
    size_list: list[Sizes] = []
    if problem is None:
        try:
            size_list = _size_list(found, nelem, B, sizes)
        except SizeRuleError as err:
            problem = KernelError("sizes", str(err))
    if problem is None:
        try:
            cases = [_make_case(spec, found, s, seed, i) for i, s in enumerate(size_list)]
        except (SpecError, TypeError, ValueError) as err:
            problem = KernelError("spec", f"cannot build inputs from the spec: {err}")
    if problem is not None:
        result.error = problem
    else:
        fn = _bind(kernel, spec, found)
        check = None if on_gpu() else _compile_check.begin(kernel, fn, cases, found, compile_check)
        result.outcomes = _run_cases(kernel, fn, cases, timeout, isolate, record)
        _compile_check.apply(check, result, started, compile_check)
        if found is None:
            result.notes.append("unknown puzzle: tested only the sizes given")
        if perf and result.passed:
            _measure_speed(kernel, fn, spec, found, seed, result)
    result.seconds = time.perf_counter() - started
    return present(result, quiet, viz, found)


def present(result: TestResult, quiet: bool, viz: bool, puzzle: Puzzle | None) -> TestResult:
    """Show a verdict (unless quiet) and its memory picture (if asked), and return it."""
    if not quiet:
        _show(result)
    if viz:
        from puzzles import viz as _viz

        _viz.show(result, puzzle=puzzle)
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
    canonical = _follow_rules(p, given)
    rest = [dict(s) for s in p.sizes[1:] if s != canonical]
    return [canonical] + rest


class SizeRuleError(ValueError):
    """Sizes given to test() that the puzzle's own rules rule out."""


def _follow_rules(p: Puzzle, given: Sizes) -> Sizes:
    """The canonical size with the learner's values, and the sizes that depend on them.

    The rules are read off the sizes the puzzle tests: two sizes equal in every one of them
    (puzzle 1's B0 = N0) stay equal, and a block that is always a power of two must stay one.
    """
    sizes = {**p.canonical, **given}
    if len(p.sizes) < 2:
        return sizes
    keys = list(p.canonical)
    for a in keys:
        for b in keys:
            if a == b or not all(s.get(a) == s.get(b) for s in p.sizes):
                continue
            if a in given and b in given and given[a] != given[b]:
                raise SizeRuleError(f"Puzzle {p.number} needs {b} = {a}, and {a}={given[a]}, {b}={given[b]} break it: "
                                    f"pass only {a} (the grader sets {b} to match)")
            if a in given and b not in given:
                sizes[b] = given[a]
    for k in keys:
        v = sizes[k]
        if k.startswith("B") and all(s[k] & (s[k] - 1) == 0 for s in p.sizes) and (v <= 0 or v & (v - 1)):
            source = next((f" (the puzzle sets {k} = {a}, given as {a}={v})" for a in given if a != k
                           and all(s.get(a) == s.get(k) for s in p.sizes)), "")
            raise SizeRuleError(f"Puzzle {p.number} needs the block size {k} to be a power of two, not {v}{source}: "
                                "tl.arange and block shapes need powers of two")
    return sizes


def _make_case(spec: Callable[..., Any], p: Puzzle | None, sizes: Sizes, seed: int, index: int) -> _Case:
    """The inputs of the `index`-th size. Every size reports the run's `seed`, which
    reproduces all of them (each size draws from its own stream of it)."""
    scale = p.input_scale(index) if p else 1.0
    if p is not None and p.tensor_lists is not None:  # one allocation per tensor, and tables of them
        from puzzles.tensor_lists import build

        arena, pointers, guarded, expected, relink = build(spec, p.tensor_lists, sizes, seed + index, scale)
        return _Case(sizes, seed, p.grid(sizes), arena, pointers, expected, rtol=p.rtol, atol=p.atol,
                     guarded=guarded, relink=relink)
    inputs, out = spec_signature(spec)
    shapes = {t.name: (t.shape(sizes), t.dtype) for t in inputs}
    shapes[out.name] = (out.shape(sizes), out.dtype)
    # A strided input lives in a flat storage (the arena guards all of it); the spec sees the view.
    strided = {n: strides_of(names, sizes) for n, names in (p.strided_inputs if p else {}).items()}
    views = dict(shapes)
    for name, strides in strided.items():
        shapes[name] = ((storage_numel(shapes[name][0], strides),), shapes[name][1])
    arena = build_arena(shapes)
    gen = torch.Generator().manual_seed(seed + index)
    for t in inputs:
        arena.tensors[t.name].copy_(random_tensor(shapes[t.name][0], t.dtype, gen, scale))
    # A puzzle may shape some inputs so that its known bugs fail at every seed (puzzle 9's keys
    # grow along the row, so the running maximum changes between chunks).
    draw = p.extra.get("draw_inputs") if p else None
    for name, tensor in (draw(sizes, index, gen) if draw else {}).items():
        arena.tensors[name].copy_(tensor)
    seen = {n: strided_view(arena.tensors[n], views[n][0], s) for n, s in strided.items()}
    if p is not None and p.output_init == "zeros":
        arena.tensors[out.name].zero_()
    else:
        poison_(arena.tensors[out.name])
    expected = call_spec(spec, [seen.get(t.name, arena.tensors[t.name]).clone() for t in inputs], sizes)
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
    row = p is not None and p.extra.get("tolerance") == "row"
    return _Case(sizes, seed, grid, arena, names, expected, zero_init=zero_init, rtol=rtol, atol=atol,
                 row_tolerance=row)


# -- the kernel's signature --------------------------------------------------------------------------


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


# -- running -------------------------------------------------------------------------------------------


# The child process stops a kernel itself (to report its line); the parent waits this much longer.
_CHILD_GRACE = 3.0


def _run_cases(kernel: Any, args_for: Callable, cases: list[_Case], timeout: float,
               isolate: bool | None, record: bool) -> list[SizeOutcome]:
    # test(isolate=False) is for debugging: the kernel's prints and the debugger keep the real
    # stdout and stdin instead of being captured.
    capture = isolate is not False
    if on_gpu():
        runs = _run_on_gpu(kernel, args_for, cases, timeout, record, capture)
    else:
        jobs = [(lambda c=case: _timed(timeout, lambda: _run_interpreted(kernel, args_for, c, record, capture)))
                for case in cases]
        if isolate is None:
            isolate = can_fork()
        runs = []
        if isolate:
            for status, payload in run_in_child(jobs, timeout + _CHILD_GRACE):
                runs.append(payload if status == "ok" else RunOutput(error=KernelError(status, payload)))
                if _timed_out(runs[-1]):
                    break  # the interpreter stops at the first size that times out
        else:
            for job in jobs:
                runs.append(job())
                if _timed_out(runs[-1]):
                    break
    for case, run in zip(cases, runs, strict=False):
        if _timed_out(run):
            where = " (in the access check under Triton's interpreter)" if on_gpu() else ""
            run.error.message = timeout_message(timeout, _size_text(case.sizes), where)
    outcomes = [_judge(case, run, kernel_file(kernel)) for case, run in zip(cases, runs, strict=False)]
    outcomes += [SizeOutcome(c.sizes, c.seed, "not run") for c in cases[len(runs):]]
    return outcomes


def _timed(timeout: float, job: Callable[[], RunOutput]) -> RunOutput:
    try:
        with time_limit(timeout):
            return job()
    except KernelTimeout:  # fired between the kernel's end and the limit's end
        return RunOutput(error=KernelError("timeout", timeout_message(timeout)))


def _timed_out(run: RunOutput) -> bool:
    return run.error is not None and run.error.kind == "timeout"


def _size_text(sizes: Sizes) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def _run_on_gpu(kernel: Any, args_for: Callable, cases: list[_Case], timeout: float, record: bool, capture: bool,
                run_compiled: Callable[[Any, Callable, _Case], RunOutput] | None = None) -> list[RunOutput]:
    """Each size compiled and run on the GPU, then checked under the interpreter; a timeout in
    the check is the verdict (the compiler may have removed an endless loop the check cannot
    finish), and no later size is checked."""
    runs = []
    for case in cases:
        run = (run_compiled or _run_compiled)(kernel, args_for, case)
        if run.error is None and record:
            checked = _timed(timeout, lambda c=case: _run_interpreted(kernel, args_for, c, True, capture))
            _merge_check(run, checked)
        runs.append(run)
        if _timed_out(run):
            break
    return runs


def _run_interpreted(kernel: Any, args_for: Callable, case: _Case, record: bool, capture: bool = True) -> RunOutput:
    args, kwargs = args_for(case)
    arena = case.arena
    trace = Trace({n: (tuple(t.shape), str(t.dtype).replace("torch.", "")) for n, t in arena.tensors.items()},
                  tuple(case.grid) + (1,) * (3 - len(case.grid)), recorded=record)
    recorder = Recorder(arena.regions(), {n: t.element_size() for n, t in arena.tensors.items()},
                        set(case.guarded or case.input_names), trace, kernel_file(kernel), record=record)
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out) if capture else contextlib.nullcontext():
        error = launch_interpreted(kernel, case.grid, args, kwargs, recorder)
    seconds = time.perf_counter() - started
    return RunOutput(arena.tensors["z"].clone(), trace, error, out.getvalue(), seconds)


def _merge_check(compiled: RunOutput, checked: RunOutput) -> None:
    """The GPU's answer, with the interpreter's account of every access.

    A compiled kernel's out-of-bounds loads leave no trace and its stores only damage guard
    zones, so the same kernel also runs once under the guarded interpreter on CPU copies (in
    this process: CUDA forbids forking) to name each invalid access, its program and its line.
    """
    compiled.stdout = checked.stdout  # what the kernel printed, as the interpreter ran it
    if checked.error is None:
        compiled.trace = checked.trace
    elif _timed_out(checked):
        compiled.error = checked.error  # a check that never ends is a failure, whatever the GPU said
    else:
        compiled.stdout += (f"(the access check under Triton's interpreter could not run: "
                            f"{checked.error.describe()})\n")


def _run_compiled(kernel: Any, args_for: Callable, case: _Case) -> RunOutput:
    """Compile and run on the GPU; out-of-bounds writes show up as damaged guard zones."""
    cpu = case.arena
    gpu = build_arena({n: (tuple(t.shape), t.dtype) for n, t in cpu.tensors.items()}, device="cuda")
    gpu.buffer.fill_(0xA5)
    for n, t in cpu.tensors.items():
        gpu.tensors[n].copy_(t)
    if case.relink is not None:
        case.relink(gpu)  # the copied table still holds the CPU arena's addresses
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
    close = _close(torch.where(unwritten, 0, out) if expected.dtype.is_floating_point else out, expected, case)
    wrong = ~close & ~unwritten
    o.status_map = (wrong.to(torch.int8) + 2 * unwritten.to(torch.int8)).numpy()
    o.unwritten_count = int(unwritten.sum())
    o.unwritten = [tuple(i) for i in torch.nonzero(unwritten)[:MAX_SHOWN].tolist()]
    o.mismatch_count = int(wrong.sum())
    o.mismatches = [Mismatch(tuple(i), _scalar(expected[tuple(i)]), _scalar(out[tuple(i)]))
                    for i in torch.nonzero(wrong)[:MAX_SHOWN].tolist()]
    if o.mismatch_count and not o.unwritten_count:
        o.transposed = _is_transposed(out, expected, case)
    if o.mismatch_count and case.row_tolerance and expected.dim() >= 2:
        o.note = _row_summary(torch.where(unwritten, 0, out), expected, wrong)
    if run.trace is not None and run.trace.invalid:
        o.status = "out of bounds"
    elif o.invalid_accesses:  # only stores into inputs: in bounds, but the inputs must stay as given
        o.status = "store into input"
    elif o.unwritten_count:
        o.status = "unwritten"
    elif o.mismatch_count:
        o.status = "wrong"
    return o


def _close(out: torch.Tensor, expected: torch.Tensor, case: _Case) -> torch.Tensor:
    """Elementwise: is `out` within the puzzle's tolerance of `expected`?

    With the puzzle's `extra["tolerance"] == "row"` the absolute tolerance is relative to each
    row's largest expected value: a softmax row of values near 1/T, all 10% off, is wrong even
    though every error is below an absolute 1e-3.
    """
    if not expected.dtype.is_floating_point:
        return out == expected
    e64, o64 = expected.double(), out.double()
    atol: Any = case.atol
    if case.row_tolerance and e64.dim() >= 1 and e64.numel():
        atol = case.atol * e64.abs().nan_to_num(posinf=1.0).amax(-1, keepdim=True).clamp(max=1.0)
    close = (o64 - e64).abs() <= atol + case.rtol * e64.abs()
    return close | (torch.isnan(e64) & torch.isnan(o64))


def _row_summary(out: torch.Tensor, expected: torch.Tensor, wrong: torch.Tensor) -> str:
    """`3 of 4 rows wrong, by up to 9.4% of the row's largest value`: a systematic error in
    whole rows reads differently from a few stray elements."""
    rows_wrong = wrong.reshape(-1, wrong.shape[-1]).any(-1)
    e64, o64 = expected.double().reshape(-1, expected.shape[-1]), out.double().reshape(-1, out.shape[-1])
    scale = e64.abs().amax(-1).clamp(min=1e-30)
    worst = ((o64 - e64).abs().amax(-1) / scale)[rows_wrong].nan_to_num(nan=float("inf")).max().item()
    how = ("holding inf or NaN (did an exp overflow?)" if worst == float("inf")
           else f"by up to {worst:.1%} of the row's largest value")
    return f"{int(rows_wrong.sum())} of {rows_wrong.numel()} rows wrong, {how}"


def _is_transposed(out: torch.Tensor, expected: torch.Tensor, case: _Case) -> bool:
    """True when the output holds the expected matrix transposed (the row and column strides of
    the store, or of the loads, swapped); for a square matrix that is z[i, j] = expected[j, i]."""
    if expected.dim() < 2 or min(expected.shape[-2:]) < 2:
        return False
    rows, cols = expected.shape[-2:]
    flipped = out.reshape(*expected.shape[:-2], cols, rows).transpose(-1, -2)
    return bool(_close(flipped, expected, case).all())


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
    if p is not None and (p.strided_inputs or p.tensor_lists):
        result.notes.append("speed is not measured for this puzzle by test(); its notebook times it")
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
