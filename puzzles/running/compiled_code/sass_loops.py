"""How many machine instructions a compiled kernel has, and how many of them sit in its innermost loops, read
from its SASS (nvdisasm's or cuobjdump's text): a warp issues the loop bodies once per trip, the rest once, so
these two numbers and the trip counts give the instructions a warp issues (the efficiency model's issue term).
A loop is a backward branch: a BRA whose target is at a lower address than itself. Pure text in, numbers out."""

from __future__ import annotations

import re
from dataclasses import dataclass

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
LABEL_TARGET = re.compile(r"(\.L_x_\d+)")
ADDRESS_TARGET = re.compile(r"\b0x([0-9a-f]+)\b")


@dataclass(frozen=True)
class InstructionCounts:
    """A kernel's SASS instructions: all of them, and those inside loops that hold no other loop."""

    total: int
    in_innermost_loops: int


def instruction_counts(sass: str) -> InstructionCounts | None:
    """The counts of `sass` (None where it holds no instruction: no disassembler here)."""
    addresses: list[int] = []
    labels: dict[str, int] = {}
    waiting: list[str] = []  # labels seen, to be placed at the next instruction's address
    branches: list[tuple[int, str]] = []
    for line in sass.splitlines():
        label = LABEL.match(line)
        if label:
            waiting.append(label.group(1))
            continue
        found = INSTRUCTION.search(line)
        if not found:
            continue
        address = int(found.group(1), 16)
        labels.update(dict.fromkeys(waiting, address))
        waiting = []
        addresses.append(address)
        if found.group(2).startswith("BRA"):
            branches.append((address, found.group(3)))
    if not addresses:
        return None
    loops = []
    for address, operands in branches:
        named = LABEL_TARGET.search(operands)
        numeric = ADDRESS_TARGET.search(operands)
        target = labels.get(named.group(1)) if named else int(numeric.group(1), 16) if numeric else None
        if target is not None and target < address:
            loops.append((target, address))
    innermost = [inner for inner in loops
                 if not any(other != inner and inner[0] <= other[0] and other[1] <= inner[1] for other in loops)]
    inside = sum(any(start <= a <= end for start, end in innermost) for a in addresses)
    return InstructionCounts(len(addresses), inside)
