"""Step 4 of grading: a run's output and recorded accesses turned into a verdict for its size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from puzzles.grading.cases import Case
from puzzles.grading.coverage import parts_note, shared_indices_note, unwritten_notes
from puzzles.grading.inputs import unwritten_mask
from puzzles.grading.job import GradingJob
from puzzles.grading.operations import mentions_bfloat16
from puzzles.grading.result import MAX_SHOWN, SLIP_NOTE, Mismatch, SizeOutcome
from puzzles.grading.split_k import rows_text, split_k_violation, unread_rows
from puzzles.grading.tile_once import never_stored_tiles_note, tile_once_violation
from puzzles.running import bfloat16
from puzzles.running.errors import KernelError
from puzzles.running.interpreter import RunOutput
from puzzles.running.kernel import on_gpu
from puzzles.running.recording import Access, Trace


def judge_runs(job: GradingJob, cases: list[Case], runs: list[RunOutput]) -> list[SizeOutcome]:
    """A verdict for each size; the sizes after a timeout were not run."""
    limit = _bfloat16_limit(job, runs)
    outcomes = [judge_run(case, run, job.file, sixteen_bit=job.sixteen_bit, interpreter_limit=limit)
                for case, run in zip(cases, runs, strict=False)]
    _drop_unfounded_guesses(outcomes, runs)
    outcomes += [SizeOutcome(c.sizes, c.seed, "not run") for c in cases[len(runs):]]
    return outcomes


def _bfloat16_limit(job: GradingJob, runs: list[RunOutput]) -> str | None:
    """Why wrong values may be the interpreter's, not the learner's: a kernel in bfloat16, interpreted, on a
    Triton whose interpreter the grader could not correct (puzzles/running/bfloat16.py); else None."""
    if on_gpu() or all(run.error is not None for run in runs):
        return None
    limit = bfloat16.interpreter_limit()  # checked once per process; None wherever the fixes hold
    return limit if limit is not None and mentions_bfloat16(job.handle) else None


# A run's error kind -> the size's status; a compile that failed on a GPU is the compile error the CPU's check names.
STATUS_OF_ERROR = {"timeout": "timeout", "compile": "compile error"}


def judge_run(case: Case, run: RunOutput, filename: str | None, *, sixteen_bit: bool = True,
              interpreter_limit: str | None = None) -> SizeOutcome:
    """One size's verdict from its run (`filename`: the kernel's file, whose lines errors quote; `sixteen_bit`:
    a 16-bit float type is in play, `GradingJob.sixteen_bit`, so a near miss may be its rounding;
    `interpreter_limit`: why the interpreter may be the cause of wrong values, where it may be)."""
    o = SizeOutcome(case.sizes, case.seed, "passed", seconds=run.seconds, stdout=run.stdout,
                    output_shape=tuple(case.expected.shape), trace=run.trace, expected=case.expected, parts=case.parts)
    if run.error is not None:
        o.status = STATUS_OF_ERROR.get(run.error.kind, "error")
        o.error = run.error
        if run.error.kind in ("fault", "crash") and run.trace is not None and run.trace.invalid:
            # A CUDA fault that the interpreter's access check explained: name the accesses too.
            o.status, o.invalid_accesses = "out of bounds", run.trace.invalid + run.trace.stores_to_inputs
        return o
    out, expected = _poisoned_if_wrong(run, case), case.expected
    o.output = out
    if out is not run.output:
        o.note = ("right on this GPU, but not in the check run under Triton's interpreter, whose masked-off lanes "
                  "held NaN or junk")
    if run.trace is not None:
        o.invalid_accesses = run.trace.invalid + run.trace.stores_to_inputs
    if run.guard_violations and not o.invalid_accesses:  # the interpreter's account is more precise
        o.error = KernelError("out of bounds", "; ".join(run.guard_violations))
        o.status = "out of bounds"
        return o
    recorded = run.trace is not None and run.trace.recorded
    if case.zero_init:
        # Accumulating outputs start at zero: only the recorded stores tell what was written.
        unwritten = _never_stored(run.trace, out.shape, case) if recorded else torch.zeros_like(out, dtype=torch.bool)
        race = _race(run.trace, filename, _namer(run.trace, o)) if recorded else None
        # An access out of bounds comes first: a block that runs past its rows (puzzle 26's rows past M) also
        # lands in other programs' elements, and the missing mask is the cause of both.
        if race is not None and not run.trace.invalid:
            o.status, o.error = "race", race
            _add_notes(o, run.trace.emulated)
            return o
    else:
        unwritten = unwritten_mask(out)
        if recorded:  # a kernel may legitimately write the poison value (an int8 output can)
            unwritten &= _never_stored(run.trace, out.shape, case)
    close = _close(torch.where(unwritten, 0, out) if expected.dtype.is_floating_point else out, expected, case)
    wrong = ~close & ~unwritten
    o.status_map = (wrong.to(torch.int8) + 2 * unwritten.to(torch.int8)).numpy()
    o.unwritten_count = int(unwritten.sum())
    o.unwritten = [tuple(i) for i in torch.nonzero(unwritten)[:MAX_SHOWN].tolist()]
    o.mismatch_count = int(wrong.sum())
    o.mismatches = [Mismatch(tuple(i), _scalar(expected[tuple(i)]), _scalar(out[tuple(i)]))
                    for i in torch.nonzero(wrong)[:MAX_SHOWN].tolist()]
    if expected.dtype in (torch.int32, torch.int64) and any(
            max(abs(int(m.expected)), abs(int(m.got))) >= 1 << 16 for m in o.mismatches):
        for m in o.mismatches:  # packed words (puzzle 13): hex, so the wrong nibbles show
            m.word_bits = expected.element_size() * 8
    first = o.unwritten[:1] or [m.index for m in o.mismatches[:1]]
    _add_notes(o, [_list_element_note(case, first[0]) if first else ""])
    if o.unwritten_count and recorded and case.tile_once is not None:
        _add_notes(o, [never_stored_tiles_note(run.trace, case.tile_once, case.sizes)])
    if o.unwritten_count and recorded and not case.zero_init and case.relink is None:
        _add_notes(o, unwritten_notes(run.trace, unwritten))
    if o.mismatch_count and not o.unwritten_count:
        o.transposed = _is_transposed(out, expected, case)
    if o.mismatch_count and case.row_tolerance and expected.dim() >= 2:
        o.note = _row_summary(torch.where(unwritten, 0, out), expected, wrong)
    if o.mismatch_count:
        _add_notes(o, [parts_note(wrong, case.parts, case.sizes) if case.parts else shared_indices_note(wrong)])
        _explain_wrong(o, out, expected, wrong, case, run.trace, sixteen_bit, interpreter_limit)
        if recorded and case.reduction is not None:
            _add_notes(o, [_unread_note(run.trace, case)])
    if run.trace is not None and run.trace.invalid:
        o.status = "out of bounds"
        _add_notes(o, [_escape_hint(run.trace, case)])
    elif o.invalid_accesses:  # only stores into inputs: in bounds, but the inputs must stay as given
        o.status = "store into input"
    elif o.unwritten_count:
        o.status = "unwritten"
    elif o.mismatch_count:
        o.status = "wrong"
    elif recorded and (race := cross_program_race(run.trace, filename, _outputs(run.trace, case),
                                                  atomics=not case.zero_init, name=_namer(run.trace, o))) is not None:
        o.status, o.error = "race", race
    elif recorded and case.split_k is not None:
        broken = split_k_violation(run.trace, case.split_k, case.sizes, filename)
        if broken is not None:
            o.status, o.error = "split-K contract", broken
    elif recorded and case.tile_once is not None:
        twice = tile_once_violation(run.trace, case.tile_once, case.sizes, filename)
        if twice is not None:
            o.status, o.error = "tile computed twice", twice
    if run.trace is not None:
        _add_notes(o, run.trace.emulated)
    return o


def _outputs(trace: Trace, case: Case) -> list[str]:
    """The tensors the kernel writes its results into: z, or each tensor of an output list (puzzle 21)."""
    inputs = set(case.guarded or case.input_names)
    return [name for name in trace.tensors if name not in inputs]


def _poisoned_if_wrong(run: RunOutput, case: Case) -> torch.Tensor:
    """The output to judge: the GPU's, unless it is right and the interpreter's check run (whose masked-off
    lanes without other= held poison) is wrong: the output depends on lanes a GPU leaves undefined, which
    happened to hold harmless values on this run."""
    checked = run.trace.output if run.trace is not None else None
    if checked is None or not run.trace.unfilled_loads or checked.shape != run.output.shape:
        return run.output
    if not case.zero_init and bool(unwritten_mask(checked).any()):
        return run.output  # the check run did not finish the output: nothing to learn from it
    if not bool(_close(run.output, case.expected, case).all()) or bool(_close(checked, case.expected, case).all()):
        return run.output
    return checked


def _add_notes(o: SizeOutcome, notes: list[str]) -> None:
    for note in notes:
        if note and note not in o.note:
            o.note = f"{o.note}; {note}" if o.note else note


def _explain_wrong(o: SizeOutcome, out: torch.Tensor, expected: torch.Tensor, wrong: torch.Tensor, case: Case,
                   trace: Trace | None, sixteen_bit: bool = True, interpreter_limit: str | None = None) -> None:
    """Say what the wrong values look like when the run knows why: lanes a load left undefined, a
    contiguous reading of an input that the kernel was given the strides of, a likely slip, or values all a
    rounding away (a float16 computation where the spec's is float32, where a 16-bit type is in play; a small
    term or a constant otherwise); or, first, that the interpreter may be the cause (bfloat16 on a Triton whose
    interpreter the grader could not correct), not a slip of the learner's."""
    if interpreter_limit:
        _add_notes(o, [interpreter_limit])
        return
    early = _output_read_before_written(trace, case) if trace is not None and trace.recorded else None
    if early is not None and out.is_floating_point() and bool((torch.isnan(out) & wrong).any()):
        _add_notes(o, [f"line {early.line} loads {early.tensor}, an output, where nothing was stored yet: an output "
                       "starts undefined (the grader fills it with NaN), so compute from the inputs and only store "
                       "into the output" if early.line else ""])
        return
    # Not where a load went out of bounds: its lanes were masked off and filled like the others, and the
    # out-of-bounds access, reported first, is the cause.
    if trace is not None and trace.unfilled_loads and not any(a.op == "load" for a in trace.invalid) and (
            not expected.dtype.is_floating_point or bool((torch.isnan(out) & wrong).any())):
        garbage = int((torch.isnan(out) & ~torch.isnan(expected) & wrong).sum()) if out.is_floating_point() else 0
        _add_notes(o, [_unfilled_note(trace, garbage)])
        return
    if case.contiguous_expected is not None and bool(_close(out, case.contiguous_expected, case).all()):
        _add_notes(o, ["the output matches a contiguous reading of the input (as if its strides were those of a "
                       "packed array): address the elements with the strides the kernel is given"])
        return
    slip = _matching_slip(out, expected, wrong, case)
    if slip is not None:
        _add_notes(o, [SLIP_NOTE + slip])
        return
    # Not for zeros alone: an output left at 0 (a sum never accumulated) is whole too, for another reason.
    if (expected.dtype.is_floating_point and _whole_numbers(out[wrong]) and bool((out[wrong] != 0).any())
            and not _whole_numbers(expected[wrong])):
        _add_notes(o, ["every wrong element is a whole number where the expected ones are not: is a value "
                       "converted to an integer type (.to(tl.int32)), or computed from integer blocks (an integer "
                       "division //, a float block loaded through an integer pointer)? keep the arithmetic in "
                       "floating point"])
        return
    if expected.dtype != out.dtype or expected.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return
    # Relative to the typical value too: a rounding of the terms shows fully where they cancel.
    typical = max(float(expected.double().abs().nan_to_num(posinf=0.0).mean()), case.atol)
    e64, o64 = expected.double()[wrong], out.double()[wrong]
    off = ((o64 - e64).abs() / e64.abs().clamp(min=typical)).nan_to_num(nan=1.0, posinf=1.0)
    if not off.numel() or float(off.max()) >= _LOW_PRECISION_ERROR:
        return
    if expected.dtype == torch.float32 and not sixteen_bit:
        _add_notes(o, [f"every wrong element is off by at most {float(off.max()):.2%} of its value (or of the "
                       "output's typical size): close to the spec's values, but outside its tolerance; is a small "
                       "term missing, a constant slightly off (a number written where an argument of the kernel "
                       "belongs), or a difference of two large sums that cancel (their rounding is what is left)?"])
    elif expected.dtype == torch.float32:
        _add_notes(o, [f"every wrong element is off by at most {float(off.max()):.2%} of its value (or of the "
                       "output's typical size), the error that float16 or bfloat16 arithmetic makes: is a value "
                       "converted to a lower precision, or accumulated in one? compute in float32, as the spec "
                       "does (on a GPU, tl.dot of float32 blocks runs in TF32, 10 bits of mantissa, unless given "
                       "input_precision=\"ieee\"; or, if it all is float32: is a small term missing, or a constant "
                       "slightly off?)"])
    elif o.mismatch_count <= wrong.numel() * _FEW_WRONG:
        # A float16 output is rounded once by the spec; a sum kept in float16 rounds at every step, and a few
        # elements (those near a rounding boundary, or small beside their terms) end past the tolerance.
        dtype = str(expected.dtype).removeprefix("torch.")
        _add_notes(o, [f"few elements wrong, each off by at most {float(off.max()):.2%} of its value (or of the "
                       f"output's typical size): the error of a sum "
                       f"kept in {dtype}, which rounds at every step; accumulate in float32 (tl.zeros(..., "
                       f"dtype=tl.float32)) and convert to {dtype} once, when storing, as the spec does"])


def _matching_slip(out: torch.Tensor, expected: torch.Tensor, wrong: torch.Tensor, case: Case) -> str | None:
    """The sentence of the likely slip the output is: one whose values it matches (within the tolerance), else
    one recognised by its rows (`Mistake.by_rows`) that gets exactly the output's wrong rows wrong."""
    by_rows = []
    for text, mistaken in case.mistaken:
        if mistaken.shape != out.shape or bool(_close(mistaken, expected, case).all()):
            continue  # the slip changes nothing here: it cannot be told from a right kernel
        if text in case.slips_by_rows:
            by_rows.append((text, mistaken))
        elif bool(_close(out, mistaken, case).all()):
            return text
    if expected.dim() < 2:
        return None
    rows_wrong = wrong.reshape(-1, wrong.shape[-1]).any(-1)
    for text, mistaken in by_rows:
        if torch.equal((~_close(mistaken, expected, case)).reshape(-1, wrong.shape[-1]).any(-1), rows_wrong):
            return text
    return None


def _output_read_before_written(trace: Trace, case: Case) -> Access | None:
    """The first load of an output element that no store had reached yet (in the run's order), where the
    outputs start undefined (not at zero, as puzzles that accumulate with atomics have them)."""
    if case.zero_init:
        return None
    outputs = set(_outputs(trace, case))
    written = {name: np.zeros(int(np.prod(shape)), dtype=bool) for name, (shape, _) in trace.tensors.items()
               if name in outputs}
    for access in trace.accesses:
        done = written.get(access.tensor)
        if done is None or not access.elements.size:
            continue
        if access.op == "load":
            if not done[access.elements].all():
                return access
        else:
            done[access.elements] = True
    return None


def _unread_note(trace: Trace, case: Case) -> str:
    """Rows of the reduced axis that no load reached: a loop that stops early or skips a chunk."""
    name, reads = case.reduction.length, case.reduction.reads
    length = int(case.sizes[name])
    missing = unread_rows(trace, reads, length)
    if not missing:
        return ""
    return (f"no program loads {reads.tensor} at {name} = {rows_text(missing)} (of 0…{length - 1}): does the loop "
            f"over {name} stop early, or skip a chunk?")


def _whole_numbers(values: torch.Tensor) -> bool:
    """True when there are values and every one is finite and whole (no fraction)."""
    v = values.double()
    return bool(v.numel()) and bool((torch.isfinite(v) & (v == v.round())).all())


def _unfilled_note(trace: Trace, garbage: int) -> str:
    """The note on masked loads without other=: certain where `garbage` wrong elements are NaN (the poison
    reached the output), a guess otherwise (an integer output cannot show where its junk went)."""
    loads = sorted(trace.unfilled_loads.values(), key=lambda u: u.line or 0)
    where = "; ".join(f"line {u.line}: {u.source.strip()}" if u.line else "a load" for u in loads[:3])
    seen = f"{garbage} of the wrong elements are NaN: " if garbage else ""
    depends = "the output depends on them" if garbage else "if the output depends on them"
    return (f"{seen}masked loads without other= ({where}) leave their masked-off lanes undefined on a GPU "
            "(the interpreter gives 0; the grader fills them with NaN or junk, as a GPU may), and "
            f"{depends}: give the load the value that changes nothing, other=0 for a sum, other=-inf "
            "for a maximum or a softmax's scores, or keep those lanes out with tl.where")


def _drop_unfounded_guesses(outcomes: list[SizeOutcome], runs: list[RunOutput]) -> None:
    """The guess about masked-off lanes (an integer output) is unfounded when a size whose loads left no lane
    undefined is wrong as well: the mistake is elsewhere, and the note would send the learner after `other=`."""
    def unfilled(run: RunOutput) -> bool:
        return run.trace is not None and bool(run.trace.unfilled_loads)

    if not any(o.status == "wrong" and not unfilled(run) for o, run in zip(outcomes, runs, strict=False)):
        return
    for o, run in zip(outcomes, runs, strict=False):
        if unfilled(run):
            guess = _unfilled_note(run.trace, 0)
            o.note = "; ".join(part for part in o.note.split(f"; {guess}") if part).replace(guess, "").strip("; ")


# The largest relative error (of every wrong element) that reads as a lower precision, not a wrong formula:
# bfloat16 rounds to 0.4%, float16 to 0.05%, and a sum in one accumulates a few roundings.
_LOW_PRECISION_ERROR = 0.02
# For a float16 output, "a few" wrong elements: a formula off everywhere by little would mark more.
_FEW_WRONG = 0.25


def _list_element_note(case: Case, index: tuple[int, ...]) -> str:
    """For tensor lists: which tensor's element z[row, i] is (the learner's kernel sees tensors, not z)."""
    gather = getattr(case.relink, "outputs", None)
    lengths = getattr(case.relink, "lengths", ())
    if gather is None or len(index) != 2:
        return ""
    row, i = index
    for piece, n in zip(gather.rows[row], lengths, strict=True):
        if i < n:
            return (f"z[{row}, {index[1]}] is {piece}[{i}] (z holds one row per output list, its tensors end to "
                    "end)")
        i -= n
    return ""


def _escape_hint(trace: Trace, case: Case) -> str:
    """For tensor lists: a store through z_ptr past an output tensor means the outputs were written end to end
    (not a store through a table's address: a mask or offset slip, which the access itself shows)."""
    from puzzles.grading.tensor_lists import is_output_piece

    outputs = [a for a in trace.invalid if a.op != "load" and is_output_piece(a.tensor) and "z_ptr" in a.source]
    if not outputs or case.relink is None:
        return ""
    return (f"{outputs[0].tensor} is one tensor of its own allocation (z_ptr is the first output tensor, as the "
            "notebook passes it): write each tensor's results through its own address in the table, at offsets "
            "within that tensor")


def _close(out: torch.Tensor, expected: torch.Tensor, case: Case) -> torch.Tensor:
    """Elementwise: is `out` within the puzzle's tolerance of `expected`?

    With the puzzle's `tolerance == "row"` the absolute tolerance is relative to each
    row's largest expected value: a softmax row of values near 1/T, all 10% off, is wrong even
    though every error is below an absolute 1e-3.
    """
    if not expected.dtype.is_floating_point:
        return out == expected
    e64, o64 = expected.double(), out.double()
    atol: Any = case.atol
    if case.row_tolerance and e64.dim() >= 1 and e64.numel():
        atol = case.atol * e64.abs().nan_to_num(posinf=1.0).amax(-1, keepdim=True).clamp(max=1.0)
    # Only a finite expected value has a tolerance around it: rtol * inf would let any value match an infinity.
    close = ((o64 - e64).abs() <= atol + case.rtol * e64.abs()) & torch.isfinite(e64)
    # Equal infinities are equal (inf - inf is NaN): a slip whose loss overflows matches the kernel's inf.
    return close | (torch.isnan(e64) & torch.isnan(o64)) | (torch.isinf(e64) & (o64 == e64))


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


def _is_transposed(out: torch.Tensor, expected: torch.Tensor, case: Case) -> bool:
    """True when the output holds the expected matrix transposed (the row and column strides of
    the store, or of the loads, swapped); for a square matrix that is z[i, j] = expected[j, i]."""
    if expected.dim() < 2 or min(expected.shape[-2:]) < 2:
        return False
    rows, cols = expected.shape[-2:]
    flipped = out.reshape(*expected.shape[:-2], cols, rows).transpose(-1, -2)
    return bool(_close(flipped, expected, case).all())


def _namer(trace: Trace, o: SizeOutcome) -> Callable[[int], str]:
    """Names z's element at a flat position as the verdict does: `z[3, 4]`, or `dw[4]` in a packed output."""
    shape = trace.tensors.get("z", ((),))[0]
    return lambda flat: o.element(tuple(int(c) for c in np.unravel_index(flat, shape))) if shape else f"z[{flat}]"


def _race(trace: Trace, filename: str | None, name: Callable[[int], str] = lambda e: f"z[{e}]") -> KernelError | None:
    """Two programs writing one output element where the result depends on their order: one of them
    uses a plain store, or they combine different operations (tl.atomic_xchg with tl.atomic_add).

    Programs run one after another in the interpreter, so a load-add-store into a shared output
    gives the right sum here and a wrong one on a GPU, where they run at once: name it. A plain store of
    zeros beside other programs' atomics is a zeroing of an output that starts at zero: the fix is to
    delete it, not to make it atomic.
    """
    import linecache

    import numpy as np

    gx, gy, _ = trace.grid
    writers: dict[int, tuple[int, str, Any]] = {}  # element -> (program, how it writes, access)
    for access in trace.accesses:
        if access.tensor != "z" or access.op == "load" or not access.elements.size:
            continue
        program = access.program[0] + gx * (access.program[1] + gy * access.program[2])
        how = "store" if access.op == "store" else access.rmw or "atomic"
        for element in np.unique(access.elements).tolist():
            first = writers.setdefault(element, (program, how, access))
            if first[0] == program:
                continue
            source = lambda a: linecache.getline(filename or "", a.line or 0)  # noqa: E731
            if first[1] == "store" or how == "store":
                plain, other = (first[2], access) if first[1] == "store" else (access, first[2])
                if other.op == "atomic" and plain.values is not None and not np.any(plain.values):
                    return KernelError(
                        "race",
                        f"program {plain.program} stores 0 into {name(element)} while program {other.program} "
                        f"adds into it with tl.atomic_{other.rmw or 'add'}: on a GPU the programs run at the same "
                        "time, so the zeroing may land after another program's add and erase it. The output "
                        "already starts at zero (the grader fills it, as torch.zeros would): delete the zeroing, "
                        "and let every program only add", plain.line, source(plain), filename)
                return KernelError(
                    "race",
                    f"programs {first[2].program} and {access.program} both write {name(element)} and "
                    f"program {plain.program} uses a plain tl.store: on a GPU they run at the same time and one "
                    "overwrites the other (use tl.atomic_add to accumulate into a shared output)",
                    plain.line, source(plain), filename)
            if how != first[1] or how in _ORDER_DEPENDENT:
                odd = access if how in _ORDER_DEPENDENT or first[1] not in _ORDER_DEPENDENT else first[2]
                return KernelError(
                    "race",
                    f"programs {first[2].program} (tl.atomic_{first[1]}) and {access.program} "
                    f"(tl.atomic_{how}) both write {name(element)}: the result depends on the order in which "
                    "they run, which a GPU does not fix (use tl.atomic_add in every program to accumulate into a "
                    "shared output)", odd.line, source(odd), filename)
    return None


_ORDER_WORDS = ("on a GPU the programs run at the same time, in no fixed order (Triton's interpreter runs them one "
                "after another, in order, which hid it here)")


def cross_program_race(trace: Trace, filename: str | None, outputs: Iterable[str] = ("z",),
                       atomics: bool = True, name: Callable[[int], str] | None = None) -> KernelError | None:
    """A result that only the interpreter's program order makes right, in any of the `outputs`: two programs
    plain-storing different values into one element (the later one won here), or a program loading an element
    that another program stores (here the other one had already run, or had not: on a GPU either may happen).
    A plain store beside another program's atomic is `_race`'s (`atomics`: not run yet); the same value stored
    twice is harmless. `name`: z's element at a flat position as the verdict names it."""
    if atomics and any(a.op == "atomic" and a.tensor == "z" for a in trace.accesses):
        found = _race(trace, filename, *([name] if name else []))
        if found is not None:
            return found
    return next(filter(None, (_order_dependence(trace, filename, output, name) for output in outputs)), None)


def _order_dependence(trace: Trace, filename: str | None, output: str,
                      name: Callable[[int], str] | None = None) -> KernelError | None:
    """`cross_program_race` for one output tensor."""
    import linecache

    import numpy as np

    shape = trace.tensors.get(output, ((),))[0]
    size = int(np.prod(shape)) if shape else 0
    if not size:
        return None
    gx, gy, _ = trace.grid
    first = np.full(size, -1, dtype=np.int64)  # the first program that stores each element
    first_at = np.full(size, -1, dtype=np.int64)  # and the index of its store among `stores`
    first_value = np.zeros(size, dtype=np.float64)
    stores = [a for a in trace.accesses if a.tensor == output and a.op != "load" and a.elements.size]

    def where(element: int) -> str:
        if name is not None and output == "z":
            return name(element)
        coords = np.unravel_index(element, shape) if len(shape) > 1 else (element,)
        return f"{output}[{', '.join(str(int(c)) for c in coords)}]"

    def line(a: Any) -> str:
        return f"line {a.line}: {linecache.getline(filename or '', a.line or 0).strip()}"

    def program_id(a: Any) -> int:
        return a.program[0] + gx * (a.program[1] + gy * a.program[2])

    for index, access in enumerate(stores):
        program, elements = program_id(access), access.elements
        values = access.values.astype(np.float64) if access.values is not None else None
        earlier = first[elements]
        clash = (earlier >= 0) & (earlier != program)
        if values is not None and clash.any():
            old = first_value[elements]
            differs = clash & (old != values) & ~(np.isnan(old) & np.isnan(values))
            if differs.any():  # an atomic before a plain store is `_race`'s
                differs &= np.array([stores[i].op == "store" for i in first_at[elements]])
            if differs.any() and access.op == "store":
                lane = int(np.flatnonzero(differs)[0])
                before = stores[int(first_at[elements[lane]])]
                return KernelError(
                    "race",
                    f"programs {before.program} and {access.program} both store {where(int(elements[lane]))}, "
                    f"with different values: {old[lane]:.6g} ({line(before)}), then {values[lane]:.6g} "
                    f"({line(access)}): {_ORDER_WORDS}, so either value may be left; each output element must be "
                    "stored by one program (does a block reach into another program's elements?)",
                    before.line, linecache.getline(filename or "", before.line or 0), filename)
        new = earlier < 0
        first[elements[new]] = program
        first_at[elements[new]] = index
        if values is not None:
            first_value[elements[new]] = values[new]
    for access in trace.accesses:
        if access.tensor != output or access.op != "load" or not access.elements.size:
            continue
        storer = first[access.elements]
        foreign = (storer >= 0) & (storer != program_id(access))
        if foreign.any():
            lane = int(np.flatnonzero(foreign)[0])
            element = int(access.elements[lane])
            writer = stores[int(first_at[element])]
            return KernelError(
                "race",
                f"program {access.program} loads {where(element)}, which program {writer.program} stores "
                f"({line(writer)}): {_ORDER_WORDS}, so it may read the element before or after it is written; "
                "compute from the inputs, not from another program's output",
                access.line, linecache.getline(filename or "", access.line or 0), filename)
    return None


# Atomics whose result depends on the order of the programs when several write one element.
_ORDER_DEPENDENT = ("xchg", "cas")


def _never_stored(trace: Trace, shape: torch.Size, case: Case) -> torch.Tensor:
    """Output elements that no store or atomic of the run reached. For tensor lists (puzzle 21) z is
    gathered from the output tensors, each a region of its own: an element is z[row, start + i], where
    start is where its tensor begins in the row."""
    written = torch.zeros(shape.numel(), dtype=torch.bool)
    starts = {"z": 0}
    gather = getattr(case.relink, "outputs", None)
    if gather is not None and len(shape) == 2:
        for row, pieces in enumerate(gather.rows):
            start = row * shape[1]
            for piece, n in zip(pieces, case.relink.lengths, strict=True):
                starts[piece] = start
                start += n
    for access in trace.accesses:
        start = starts.get(access.tensor)
        if start is not None and access.op != "load" and access.elements.size:
            written[start + torch.from_numpy(access.elements)] = True
    return ~written.view(shape)


def _scalar(t: torch.Tensor) -> float | int:
    """A float for a float output; an integer output stays an integer (a packed word must not round)."""
    v = t.item()
    return int(v) if isinstance(v, (bool, int)) else float(v)


# Public name for the class grader, which checks the outputs an isolated process returned.
values_close = _close
