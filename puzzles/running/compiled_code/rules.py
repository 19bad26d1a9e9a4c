"""A puzzle graded on its compiled code (`Puzzle.compiled_rule`, a `CompiledRule`): every global load and
store of the kernel, compiled for the rule's target at the canonical size, moves at least `min_bits` per
thread and instruction. The compile check judges it on the full compile it does anyway
(puzzles/running/compile_check/checking.py): no second compile. A narrower access is told which of the
compiler's conditions it misses, as the TTGIR shows them (vector_width.py): the elements each thread holds, what
the compiler knows of its address's alignment, whether its mask is known to be the same across a vector. A rule with
`tma` (puzzle 29) asks instead that every load and store be a TMA copy (`judge_tma`)."""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import Any

from puzzles.running.compiled_code.pipelining import loop_shape
from puzzles.running.compiled_code.reading import Access
from puzzles.running.compiled_code.record import Compiled
from puzzles.running.compiled_code.summary import source_at
from puzzles.running.compiled_code.vector_width import MemoryOp


@dataclass(frozen=True)
class RuleVerdict:
    """The rule on one compiled kernel: `problem` (the verdict's words, reading on from "Puzzle N") with the
    line it names, or None and a `note` naming each access and its width."""

    problem: str | None
    line: int | None = None
    filename: str | None = None
    note: str = ""


def access_text(access: Access, quote: bool = True) -> str:
    """`the load at line 14 (`x = tl.load(...)`) is 32-bit (8 × ld.global.b32)`; `quote`: with the line's source."""
    source = source_at(access.filename, access.line) if quote else ""
    at = f"line {access.line}" + (f" (`{source}`)" if source else "") if access.line else "an unknown line"
    return f"the {access.kind} at {at} is {access.width} ({access.count} × {access.instruction})"


def judge(rule: Any, code: Compiled) -> RuleVerdict:
    """Whether `code` keeps `rule` (a course.puzzle.CompiledRule)."""
    if getattr(rule, "tma", False):
        return judge_tma(rule, code)
    if getattr(rule, "stages", 0):
        return judge_pipeline(rule, code)
    checked = code.loads() + code.stores()
    where = f"compiled for {code.target_name}"
    if not code.loads() or not code.stores():
        missing = "load" if not code.loads() else "store"
        return RuleVerdict(f"asks for {rule.min_bits}-bit global loads and stores, and {where} the kernel has no "
                           f"global {missing} at all")
    narrow = [a for a in checked if a.bits and a.bits < rule.min_bits]
    if narrow:
        first = narrow[0]
        others = [f"the {a.kind} at line {a.line} is {a.width}" for a in narrow[1:] if a.line != first.line]
        also = f" (and {'; '.join(others)})" if others else ""
        why = [f"- the {a.kind} at line {a.line}: {reasons(a, code, rule.min_bits)}."
               for a in narrow if a.line is not None]
        why_text = ("\nWhy, read from the compiled code "
                    f"({code.num_warps} warps, {code.num_warps * 32} threads per program):\n" + "\n".join(why)
                    if why else "")
        return RuleVerdict(f"asks for {rule.min_bits}-bit global loads and stores, and {where} "
                           f"{access_text(first, quote=False)}{also}.{why_text}\n{rule.advice}".strip(), first.line,
                           first.filename)
    named = "; ".join(access_text(a) for a in checked)
    return RuleVerdict(None, note=f"{where}, every global load and store is {rule.min_bits}-bit or wider: {named}")


TMA_KINDS = ("TMA load", "TMA store")


def judge_tma(rule: Any, code: Compiled) -> RuleVerdict:
    """A rule with `tma`: every global load and store is a TMA copy (cp.async.bulk.tensor), and there is at least
    one of each. Each load or store that moves data one instruction per thread is named at its line."""
    checked = code.loads() + code.stores()
    where = f"compiled for {code.target_name}"
    per_thread = [a for a in checked if a.kind not in TMA_KINDS]
    absent = [kind for kind in ("load", "store") if not any(a.kind == f"TMA {kind}" for a in checked)]
    if not per_thread and not absent:
        named = "; ".join(access_text(a) for a in checked)
        return RuleVerdict(None, note=f"{where}, every global load and store is a TMA copy: {named}")
    found = [f"{access_text(a, quote=False)}: an instruction of each thread, not a TMA copy" for a in per_thread]
    found += [f"no {kind} is a TMA copy" for kind in absent if not any(a.kind == kind for a in per_thread)]
    first = per_thread[0] if per_thread else None
    return RuleVerdict(f"asks for its tiles to move by TMA (the copy engine copies a whole tile at once: "
                       f"cp.async.bulk.tensor in the PTX), and {where} {'; '.join(found)}.\n{rule.advice}".strip(),
                       first.line if first else None, first.filename if first else None)


def judge_pipeline(rule: Any, code: Compiled) -> RuleVerdict:
    """A rule with `stages` (puzzle 31): the K loop keeps `rule.stages` buffers per tile, its tiles arrive by TMA
    copies, and (with `warp_specialized`) the compiler split it into producer and consumer warps. What the compiled
    loop lacks is told at the loop's line."""
    shape = loop_shape(code)
    where = f"compiled for {code.target_name}"
    at = f"the K loop at line {shape.line} (`{shape.source}`)" if shape.line else "the K loop"
    lacks = []
    if shape.buffers < 2:
        lacks.append("is not pipelined: each tile has a single shared-memory buffer, so every chunk's loads wait "
                     "for the previous chunk's tl.dot (the loop has num_stages=1, or no tl.range)")
    elif shape.buffers != rule.stages:
        lacks.append(f"keeps {shape.buffers} buffers per tile where the size asks for {rule.stages} (NUM_STAGES): "
                     "Triton's default is 3; pass num_stages=NUM_STAGES to tl.range")
    if not shape.tma_copies:
        lacks.append("loads no tile by TMA (no async TMA copy into shared memory in the TTGIR)")
    if rule.warp_specialized and not shape.warp_specialized:
        dropped = " (with one buffer there is nothing to overlap, and the compiler drops it)" if shape.buffers < 2 \
            else ""
        lacks.append("is not warp-specialized: the TTGIR has no ttg.warp_specialize, so the same warps issue the "
                     f"copies and the tl.dot{dropped}")
    if not lacks:
        return RuleVerdict(None, note=f"{where}, {at} rotates its tiles through {shape.buffers} shared-memory "
                                      f"buffers filled by {shape.tma_copies} TMA copies"
                                      + (", in warp-specialized partitions (a producer warp issues the copies, "
                                         "consumer warps wait on mbarriers and run the tl.dot)"
                                         if shape.warp_specialized else ""))
    return RuleVerdict(f"asks for its K loop to be software-pipelined in {rule.stages} stages"
                       + (" and warp-specialized" if rule.warp_specialized else "")
                       + f", and {where} {at} {'; it '.join(lacks)}.\n{rule.advice}".strip(),
                       shape.line, shape.filename)


def _lines(hints: tuple[tuple[int | None, int], ...], below: int) -> list[tuple[int | None, int]]:
    return [(line, value) for line, value in hints if value < below]


def _names(names: tuple[str, ...]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def argument_hint_line(filename: str | None, line: int | None, name: str) -> int | None:
    """The line of the function around `line` (from its `def` down to `line`) that gives tl.multiple_of the
    argument `name` itself, where one does."""
    if not filename or not line:
        return None
    lines = linecache.getlines(filename)[:line]
    start = next((n for n in range(len(lines) - 1, -1, -1) if re.match(r"\s*def ", lines[n])), 0)
    pattern = re.compile(rf"multiple_of\(\s*{re.escape(name)}\s*[,)]")
    return next((n + 1 for n in range(start, len(lines)) if pattern.search(lines[n])), None)


def reasons(access: Access, code: Compiled, min_bits: int) -> str:
    """Which of the compiler's conditions for a `min_bits` instruction the access at this line misses, from the
    TTGIR's record of it (several loads on one line: each one's). Names conditions, not the calls that meet them."""
    ops = [m for m in code.memory_ops if m.kind == access.kind and m.line == access.line]
    said: list[str] = []
    for op in ops:
        for reason in _op_reasons(op, min_bits, access.filename, access.line):
            if reason not in said:
                said.append(reason)
    return "; ".join(said) or "the compiler could not group its elements (compare the layout in `.ttgir`)"


def _op_reasons(op: MemoryOp, min_bits: int, filename: str | None, at: int | None) -> list[str]:
    vector = max(1, min_bits // op.element_bits)
    size = f"{op.element_bits}-bit"
    out = []
    if op.share < vector:  # the coalescing pass gives a thread no more than its share of the block
        share = f"{op.share}" if op.share else "less than one"
        out.append(f"each thread holds {share} of its block's {op.elements} elements ({op.elements} over "
                   f"{op.threads} threads), and one {min_bits}-bit instruction moves {vector} adjacent {size} "
                   "elements of one thread")
    if op.columns < vector:
        out.append(f"its block is {op.columns} element{'s' if op.columns != 1 else ''} wide along its last "
                   f"dimension, fewer than the {vector} one instruction moves")
    vector_bytes = vector * op.element_bits // 8
    for name in op.unknown_in_address:
        dropped = argument_hint_line(filename, at, name)
        text = (f"its address is computed from `{name}`, an integer argument the compiler knows nothing of "
                f"(Triton marks an argument a multiple of 16 only where its value at the launch is one), so it "
                f"cannot prove that each group of {vector} starts at a multiple of {vector_bytes} bytes")
        if dropped is not None:
            text += (f"; line {dropped} gives tl.multiple_of the argument `{name}` itself, and Triton keeps no "
                     "promise on a kernel argument (the TTGIR has none for it): a promise holds on a value the "
                     "kernel computes")
        out.append(text)
    for line, value in _lines(op.pointer_hints, vector_bytes):
        held = value * 8 // op.element_bits
        out.append(f"line {line} promises a pointer that is a multiple of {value}: on a pointer tl.multiple_of "
                   f"counts bytes ({value} bytes: {held or 'not even one'} {size} element{'s' if held != 1 else ''}), "
                   f"and {vector} at once need a multiple of {vector_bytes} bytes")
    for line, value in _lines(op.offset_hints, vector):
        out.append(f"line {line} promises a multiple of {value} elements, and {vector} at once need a multiple "
                   f"of {vector}")
    if op.unknown_in_mask:
        out.append(f"its mask compares indices with {_names(op.unknown_in_mask)}, which the compiler does not know "
                   f"to be a multiple of {vector}, so it cannot prove the mask the same for each group of "
                   f"{vector} adjacent elements")
    for line, value in _lines(op.mask_hints, vector):
        out.append(f"line {line} promises a mask the same over {value} adjacent elements, and {vector} at once "
                   f"need {vector}")
    if not out and op.per_thread < vector:
        out.append(f"its layout gives each thread {op.per_thread} adjacent element{'s' if op.per_thread != 1 else ''}"
                   f" (sizePerThread in `.ttgir`): the compiler could not prove {vector} consecutive addresses "
                   f"starting at a multiple of {vector_bytes} bytes")
    elif not out and op.masked:
        out.append(f"its layout gives each thread {op.per_thread} adjacent elements, so what split them is the "
                   f"mask: the compiler could not prove it the same for each group of {vector}")
    return out
