"""What one grading is about, resolved once: the learner's kernel (a `KernelHandle`: its function, file,
decorators, parameters and source), the spec (a `ParsedSpec`), the puzzle and its expected signature, the
sizes to run (resolved here: `size_list`, the puzzle's size rules) and test()'s options. test() builds a
`GradingJob`; every step takes it and reads its fields instead of unwrapping the kernel, reading a
signature, parsing source or looking the puzzle up again."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from puzzles.course import catalog
from puzzles.course.puzzle import Puzzle, Sizes
from puzzles.course.spec import ParsedSpec, parse_spec
from puzzles.grading.efficiency_model import gpu_model
from puzzles.grading.operations import forbidden_calls, mentions_16_bit
from puzzles.running.kernel import KernelHandle, on_gpu


@dataclass(frozen=True)
class GradingJob:
    """One kernel to grade and how: everything test() was given, resolved."""

    handle: KernelHandle  # the kernel as given (@triton.jit, @triton.autotune, or one config's launch), resolved
    spec: Callable[..., Any] | None  # the puzzle's spec where the puzzle is known, else the one given
    parsed_spec: ParsedSpec | None  # that spec, read once
    puzzle: Puzzle | None
    sizes: list[Sizes] | None  # the sizes given to test(); None: the puzzle's own list
    nelem: Sizes | None  # the canonical sizes and blocks, as the classic notebooks pass them
    blocks: Sizes | None
    run_sizes: tuple[Sizes, ...]  # the sizes to run, resolved once (empty when `size_problem` says why)
    run_streams: tuple[int, ...]  # the stream each size's inputs are drawn from (`input_stream`), one per size
    size_problem: str | None  # sizes given to test() that the puzzle's rules rule out
    seed: int
    timeout: float
    isolate: bool | None
    record: bool
    viz: bool
    perf: bool
    compile_check: bool | str
    quiet: bool
    # The kernel's signature as the statement gives it (read from the reference once; None: no puzzle).
    expected_signature: str | None = None
    compiled: int | None = None  # show the code compiled for this target (90 for sm_90) under the verdict
    # Called with (cases, runs) once a launch's runs are in, before they are judged: what a class's worker
    # sends the grader as evidence (puzzles/classroom/worker.py), the raw outputs and nothing judged.
    observe: Callable[[list, list], None] | None = None
    # test(efficiency=True): read the run for how efficient the kernel is on this GPU (grading/efficiency.py).
    efficiency_gpu: str | None = None

    @property
    def kernel(self) -> Any:
        return self.handle.kernel

    @property
    def fn(self) -> Callable[..., Any] | None:
        """The Python function under the decorators (None: not a Triton kernel)."""
        return self.handle.fn

    @property
    def file(self) -> str | None:
        """The file the kernel was written in (its lines are quoted in errors)."""
        return self.handle.file

    @property
    def kernel_name(self) -> str:
        return self.handle.name

    @property
    def title(self) -> str:
        p = self.puzzle
        return f"Puzzle {p.number}: {p.title}" if p else getattr(self.spec, "__name__", "kernel")

    @functools.cached_property
    def sixteen_bit(self) -> bool:
        """Whether a 16-bit float type is in play: among the spec's tensors, or named in the kernel's source
        (its helpers' included). Only then can a wrong output be the rounding of float16 or bfloat16."""
        parsed = self.parsed_spec
        if parsed is not None and parsed.tensors is not None:
            inputs, result = parsed.tensors
            if any(t.dtype in (torch.float16, torch.bfloat16) for t in (*inputs, result)):
                return True
        return mentions_16_bit(self.handle)

    @functools.cached_property
    def compile_min_sm(self) -> int:
        """The oldest GPU target the compile check compiles for: the puzzle's, or newer where the kernel calls an
        API Triton compiles only for newer GPUs (puzzle 33's tl.dot_scaled: sm_90, TritonFeature.compiles_from_sm)."""
        p = self.puzzle
        floor = p.min_sm if p is not None else 75
        needs = p.needs_triton if p is not None else None
        if needs is None or not needs.call or needs.compiles_from_sm <= floor:
            return floor
        return needs.compiles_from_sm if forbidden_calls(self.handle, (needs.call,)) else floor

    @property
    def input_names(self) -> list[str]:
        """The kernel's pointer arguments before z_ptr, by tensor: the spec's inputs, or puzzle 21's tables."""
        p = self.puzzle
        if p is not None and p.tensor_lists is not None:
            return list(p.tensor_lists.pointers)
        return list(self.parsed_spec.input_names) if self.parsed_spec is not None else []

    @property
    def other_puzzles_kernel(self) -> str | None:
        """A note when the kernel bears another puzzle's kernel name than the one it is graded as (the spec
        was taken from the wrong cell or notebook): the learner may be grading against the wrong puzzle."""
        graded, name = self.puzzle, getattr(self.fn, "__name__", None)
        named = catalog.find(kernel_name=name) if graded is not None else None
        if named is None or named.number == graded.number:
            return None
        return (f"{name} is the kernel of puzzle {named.number} ({named.title}), but it was graded as puzzle "
                f"{graded.number} ({graded.title}), whose spec is {graded.spec_name}: for puzzle {named.number}, "
                f"pass its spec, test({name}, {named.spec_name}, ...)")

    def for_config(self, launch: Any, tuned: list[Sizes], **overrides: Any) -> GradingJob:
        """The job for one config of an autotuned kernel: its launch, with the config's sizes as the
        puzzle's sizes for this run (its B0 comes from the config)."""
        p = dataclasses.replace(self.puzzle, sizes=tuple(tuned)) if self.puzzle is not None else None
        run_sizes = tuple(dict(s) for s in tuned)
        job = dataclasses.replace(self, handle=self.handle.for_launch(launch), puzzle=p, sizes=tuned, nelem=None,
                                  blocks=None, run_sizes=run_sizes, size_problem=None,
                                  run_streams=tuple(input_stream(p, s, i) for i, s in enumerate(run_sizes)),
                                  **overrides)
        if "sixteen_bit" in self.__dict__:  # the same kernel and spec: resolved once for all the configs
            job.__dict__["sixteen_bit"] = self.__dict__["sixteen_bit"]
        return job


def resolve_puzzle(puzzle: Puzzle | int | None, spec: Any, handle: KernelHandle) -> Puzzle | None:
    """The puzzle graded: given, or found by the spec's name, or (without a spec) by the kernel's."""
    if isinstance(puzzle, Puzzle):
        return puzzle
    if isinstance(puzzle, int):
        return catalog.get(puzzle)
    by_spec = catalog.find(spec_name=getattr(spec, "__name__", None))
    if by_spec is not None:
        return by_spec
    return catalog.find(kernel_name=getattr(handle.fn, "__name__", None)) if spec is None else None


def make_job(kernel: Any, spec: Callable[..., Any] | None, puzzle: Puzzle | int | None, *,
             sizes: list[Sizes] | None = None, nelem: Sizes | None = None, blocks: Sizes | None = None,
             seed: int = 0, timeout: float = 20.0, isolate: bool | None = None, record: bool = True,
             viz: bool = False, perf: bool = False, compile_check: bool | str = False,
             quiet: bool = True, compiled: int | None = None,
             observe: Callable[[list, list], None] | None = None, efficiency: bool | None = False,
             gpu: str = "H100") -> GradingJob:
    """Resolve test()'s arguments once: the kernel, the puzzle (given, or found from the spec or kernel),
    its spec and the sizes to run. (The defaults suit a caller outside test(): a test, a benchmark.)"""
    handle = KernelHandle.of(kernel)
    found = resolve_puzzle(puzzle, spec, handle)
    if efficiency is None:  # by default, where a puzzle's speed goal is graded without a GPU
        efficiency = found is not None and found.cpu_speed_goal is not None and not on_gpu()
    spec = spec if found is None else found.spec
    try:
        run_sizes, size_problem = tuple(size_list(found, nelem, blocks, sizes)), None
    except ValueError as err:  # SizeRuleError, or an unknown puzzle without sizes
        run_sizes, size_problem = (), str(err)
    return GradingJob(handle=handle, spec=spec, parsed_spec=parse_spec(spec) if spec is not None else None,
                      puzzle=found, sizes=sizes, nelem=nelem, blocks=blocks, run_sizes=run_sizes,
                      run_streams=tuple(input_stream(found, s, i) for i, s in enumerate(run_sizes)),
                      size_problem=size_problem, seed=seed, timeout=timeout, isolate=isolate, record=record, viz=viz,
                      perf=perf, compile_check=compile_check, quiet=quiet,
                      expected_signature=found.expected_signature() if found is not None else None,
                      compiled=compiled, observe=observe, efficiency_gpu=gpu_model(gpu).name if efficiency else None)


# -- the sizes to run, resolved once per job ---------------------------------------------------------------


def size_list(p: Puzzle | None, nelem: Sizes | None, B: Sizes | None, sizes: list[Sizes] | None) -> list[Sizes]:
    """The sizes to grade: `sizes` exactly where given (sizes_given_note says what that leaves out); else the
    grading cell's size (nelem, B: the canonical size with the values the cell gives) first where it is none of
    the puzzle's, then every one of the puzzle's sizes. Editing the cell never shrinks what a pass covers; each
    canonical size keeps its inputs (input_stream)."""
    if sizes is not None:
        return [dict(s) for s in sizes]
    given = {**(nelem or {}), **(B or {})}
    if p is None:
        if not given:
            raise ValueError("an unknown puzzle needs its sizes: test(kernel, spec, nelem={...}, B={...})")
        return [given]
    cell = _follow_rules(p, given)
    canonical = [dict(s) for s in p.sizes]
    return ([cell] if cell not in canonical else []) + canonical


def input_stream(p: Puzzle | None, sizes: Sizes, position: int) -> int:
    """The index a size's inputs are drawn by (make_case): a size of the puzzle's its own place in the puzzle's
    list, whatever else is graded beside it (its input scale and shaped inputs go by that place too); any other
    size its position in the list graded (the grading cell's edited size, first, the canonical's 0)."""
    return p.sizes.index(sizes) if p is not None and sizes in p.sizes else position


def sizes_given_note(p: Puzzle | None, sizes: list[Sizes] | None) -> str:
    """Where test(..., sizes=[...]) leaves out sizes of the puzzle on purpose: what its verdict is not ("" where
    every size of the puzzle is among them, or the puzzle is unknown)."""
    if p is None or sizes is None:
        return ""
    missing = [s for s in p.sizes if dict(s) not in [dict(t) for t in sizes]]
    if not missing:
        return ""
    shown = "; ".join(" ".join(f"{k}={v}" for k, v in s.items()) for s in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return (f"graded only the sizes given to test(sizes=...), which leave out {len(missing)} of the puzzle's "
            f"{len(p.sizes)} sizes ({shown}{more}): this is not a pass of puzzle {p.number}; without sizes= "
            "test() grades every size, as the scoreboard (python -m puzzles grade) does")


def unknown_sizes_note(p: Puzzle | None, nelem: Sizes | None, B: Sizes | None) -> str | None:
    """A note naming the sizes given to test() that the puzzle has no use for (a typo: `n0` for `N0`)."""
    if p is None:
        return None
    known = {k for s in p.sizes for k in s}
    unknown = [k for k in {**(nelem or {}), **(B or {})} if k not in known
               and not (p.tensor_lists is not None and k[:1] == "L" and k[1:].isdigit())]
    if not unknown:
        return None
    return (f"{', '.join(unknown)} {'is not a size' if len(unknown) == 1 else 'are not sizes'} of puzzle {p.number}, "
            f"so {'it' if len(unknown) == 1 else 'they'} changed nothing; its sizes are {', '.join(p.canonical)}")


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

