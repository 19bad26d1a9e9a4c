"""How many instructions a compiled kernel has, and how many of them sit in its innermost loops, read from its
PTX (the compile check's listing keeps it: no disassembler, no process to start): a warp issues the loop bodies
once per trip and the rest once, so these two numbers and the trip counts give the instructions a warp issues
(the efficiency model's issue term). PTX keeps the source's loops as they are (one PTX trip a source trip), where
the SASS may unroll them. A loop is a backward branch: a `bra` to a label defined above it. Pure text in, numbers
out."""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL = re.compile(r"^\s*(\$?[A-Za-z_][\w$]*):\s*$")
INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.:]*)\b[^;]*;")
TARGET = re.compile(r"(\$?[A-Za-z_][\w$]*)\s*;")


@dataclass(frozen=True)
class InstructionCounts:
    """A kernel's PTX instructions: all of them, and those inside loops that hold no other loop."""

    total: int
    in_innermost_loops: int


def instruction_counts(ptx: str) -> InstructionCounts | None:
    """The counts of `ptx` (None where it holds no instruction)."""
    count = 0
    labels: dict[str, int] = {}  # label -> the index of the instruction after it
    branches: list[tuple[int, str]] = []
    for line in ptx.splitlines():
        text = line.split("//")[0].strip()
        if not text or text.startswith(".") or text in "{}":
            continue
        label = LABEL.match(text)
        if label:
            labels[label.group(1)] = count
            continue
        found = INSTRUCTION.match(text)
        if not found:
            continue
        if found.group(1).startswith("bra"):
            target = TARGET.search(text)
            if target:
                branches.append((count, target.group(1)))
        count += 1
    if not count:
        return None
    loops = [(labels[name], at) for at, name in branches if name in labels and labels[name] <= at]
    innermost = [inner for inner in loops
                 if not any(other != inner and inner[0] <= other[0] and other[1] <= inner[1] for other in loops)]
    inside = sum(any(start <= i <= end for start, end in innermost) for i in range(count))
    return InstructionCounts(count, inside)
