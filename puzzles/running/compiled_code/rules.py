"""A puzzle graded on its compiled code (`Puzzle.compiled_rule`, a `CompiledRule`): every global load and
store of the kernel, compiled for the rule's target at the canonical size, moves at least `min_bits` per
thread and instruction. The compile check judges it on the full compile it does anyway
(puzzles/running/compile_check/checking.py): no second compile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from puzzles.running.compiled_code.reading import Access
from puzzles.running.compiled_code.record import Compiled
from puzzles.running.compiled_code.summary import source_at


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
        return RuleVerdict(f"asks for {rule.min_bits}-bit global loads and stores, and {where} "
                           f"{access_text(first, quote=False)}{also}. {rule.advice}".strip(), first.line,
                           first.filename)
    named = "; ".join(access_text(a) for a in checked)
    return RuleVerdict(None, note=f"{where}, every global load and store is {rule.min_bits}-bit or wider: {named}")
