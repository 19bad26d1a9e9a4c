"""Step 4 of grading: a run's output and recorded accesses turned into a verdict for its size.
"""

from __future__ import annotations

from typing import Any

import torch

from puzzles.execution import (
    KernelError,
    RunOutput,
    kernel_file,
)
from puzzles.harness.cases import _Case
from puzzles.inputs import (
    unwritten_mask,
)
from puzzles.recording import Trace
from puzzles.result import MAX_SHOWN, Mismatch, SizeOutcome


def _judge_runs(kernel: Any, cases: list[_Case], runs: list[RunOutput]) -> list[SizeOutcome]:
    """A verdict for each size; the sizes after a timeout were not run."""
    outcomes = [_judge(case, run, kernel_file(kernel)) for case, run in zip(cases, runs, strict=False)]
    outcomes += [SizeOutcome(c.sizes, c.seed, "not run") for c in cases[len(runs):]]
    return outcomes


def _judge(case: _Case, run: RunOutput, filename: str | None) -> SizeOutcome:
    o = SizeOutcome(case.sizes, case.seed, "passed", seconds=run.seconds, stdout=run.stdout,
                    output_shape=tuple(case.expected.shape), trace=run.trace, expected=case.expected)
    if run.error is not None:
        o.status = "timeout" if run.error.kind == "timeout" else "error"
        o.error = run.error
        if run.error.kind in ("fault", "crash") and run.trace is not None and run.trace.invalid:
            # A CUDA fault that the interpreter's access check explained: name the accesses too.
            o.status, o.invalid_accesses = "out of bounds", run.trace.invalid + run.trace.stores_to_inputs
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


# Public name for the class grader, which checks the outputs an isolated process returned.
values_close = _close
