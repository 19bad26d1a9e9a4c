"""Reading a compiled kernel's listings: each global load and store of the PTX with the bits one thread moves
per instruction and the source line it comes from, what `tl.dot` became (wgmma, mma or plain FMA), and
ptxas's registers, stack and spills. Pure text in, records out: nothing here compiles.

The PTX says where each instruction comes from with `.loc FILE LINE COLUMN` lines (the files are numbered by
`.file N "path"`): the worker compiled the learner's functions at their own file and lines, so a `.loc` in
the learner's file is their line. An instruction that Triton's library made (a `tl.sum`'s shuffles) carries a
`.loc` in Triton's own files; it is credited to the last line of the learner's seen before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The bits of one element for PTX's type suffixes (.b32, .f16, .u8 ...).
_TYPE_BITS = re.compile(r"\.[bfsu](8|16|32|64|128)\b")
_VECTOR = re.compile(r"\.v(2|4|8)\b")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"', re.M)
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
# An instruction line, after an optional predicate (`@%p1`, `@!%p2`): its mnemonic and operands.
_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.:]*)\s*(.*?);?\s*(?://.*)?$")


@dataclass(frozen=True)
class Access:
    """Global memory instructions of one kind, one mnemonic and one source line."""

    kind: str  # "load", "store", "atomic", "async copy" (cp.async: global to shared), "TMA load", "TMA store"
    instruction: str  # the PTX mnemonic: ld.global.v4.b32
    bits: int  # bits one thread moves with one instruction (128 for ld.global.v4.b32); 0 where not per thread
    count: int  # such instructions in the code (one per thread per run through it; a loop's, each iteration)
    line: int | None
    filename: str | None

    @property
    def width(self) -> str:
        """`128-bit`, or `bulk` for a TMA copy (a whole tile, not per thread)."""
        return f"{self.bits}-bit" if self.bits else "bulk"

    @property
    def elements(self) -> str:
        """`4 × 32-bit` for a vector instruction, `` otherwise."""
        vector = _VECTOR.search(self.instruction)
        element = _TYPE_BITS.findall(self.instruction)
        if vector and element:
            return f"{vector.group(1)} × {element[-1]}-bit"
        return ""


@dataclass(frozen=True)
class DotUse:
    """What the tensor-core instructions (or their absence) made of the tl.dot at one line."""

    kind: str  # "wgmma" (Hopper's warp-group MMA), "mma" (mma.sync, per warp), "fma" (no tensor cores)
    instruction: str  # wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16, or "" for fma
    count: int
    line: int | None
    filename: str | None

    @property
    def shape(self) -> str:
        """`m64n64k16`, the tile one instruction multiplies."""
        found = re.search(r"\.(m\d+n\d+k\d+)\b", self.instruction)
        return found.group(1) if found else ""

    def _types(self) -> list[str]:
        """The element types after the shape: d, a, b (and c) for mma.sync (after .row.col), d, a, b for wgmma."""
        parts = self.instruction.split(".")
        at = next((i for i, p in enumerate(parts) if re.fullmatch(r"m\d+n\d+k\d+", p)), None)
        if at is None:
            return []
        return [p for p in parts[at + 1 :] if p not in ("row", "col", "satfinite")]

    @property
    def inputs(self) -> str:
        """The operands' type (`f16`, `tf32`, `bf16`, `e4m3`), "" where the instruction does not say."""
        types = self._types()
        return types[1] if len(types) > 1 else ""

    @property
    def sums(self) -> str:
        """The accumulator's type (`f32`)."""
        types = self._types()
        return types[0] if types else ""


@dataclass(frozen=True)
class Resources:
    """ptxas's resource usage (as `cuobjdump --dump-resource-usage` prints it) and the SASS's spill instructions."""

    registers: int | None  # per thread
    stack: int  # bytes of stack per thread (spilled registers, or a printf's arguments)
    spill_stores: int  # STL instructions in the SASS
    spill_loads: int  # LDL instructions in the SASS
    printf: bool  # the kernel prints (its stack holds the printf's arguments, not spills)

    @property
    def spills(self) -> bool:
        return (self.spill_stores > 0 or self.stack > 0) and not self.printf


def files_of(ptx: str) -> dict[int, str]:
    """The PTX's file table: number -> path."""
    return {int(number): path.replace('\\"', '"') for number, path in _FILE.findall(ptx)}


def placed_instructions(ptx: str, own_files: Iterable[str]) -> list[tuple[str, str, int | None, str | None]]:
    """Every instruction of the PTX as (mnemonic, operands, line, file), placed at the learner's line: a
    `.loc` in one of `own_files` (or the line it was inlined at, where the PTX says), else the last of the
    learner's lines seen before it."""
    files = files_of(ptx)
    own = set(own_files)
    line: int | None = None
    filename: str | None = None
    out = []
    for text in ptx.splitlines():
        stripped = text.strip()
        if not stripped or stripped.startswith(("//", "$", "{", "}")):
            continue
        loc = _LOC.match(text)
        if loc:
            for number, at in ((loc.group(1), loc.group(2)), (loc.group(3), loc.group(4))):
                if number is not None and files.get(int(number)) in own:
                    filename, line = files[int(number)], int(at)
                    break
            continue
        if stripped.startswith("."):
            continue
        found = _INSTRUCTION.match(text)
        if found:
            out.append((found.group(1), found.group(2), line, filename))
    return out


def _bits(mnemonic: str, operands: str) -> int:
    if mnemonic.startswith("cp.async.bulk"):
        return 0
    if mnemonic.startswith("cp.async"):  # cp.async.cg.shared.global [dst], [src], 0x10: bytes per copy
        size = re.search(r",\s*(0x[0-9a-fA-F]+|\d+)\s*(?:,|$)", operands)
        return int(size.group(1), 0) * 8 if size else 0
    element = _TYPE_BITS.findall(mnemonic)
    vector = _VECTOR.search(mnemonic)
    return (int(vector.group(1)) if vector else 1) * int(element[-1]) if element else 0


def _kind(mnemonic: str) -> str | None:
    if mnemonic.startswith("ld.global"):
        return "load"
    if mnemonic.startswith("st.global"):
        return "store"
    if mnemonic.startswith(("atom.global", "red.global")):
        return "atomic"
    if mnemonic.startswith("cp.async.bulk.tensor") and ".shared" in mnemonic.split(".global")[0]:
        return "TMA load"
    if mnemonic.startswith("cp.async.bulk.tensor"):
        return "TMA store"
    if mnemonic.startswith("cp.async") and ".global" in mnemonic:
        return "async copy"
    return None


def global_accesses(ptx: str, own_files: Iterable[str]) -> list[Access]:
    """The kernel's global memory instructions, grouped by kind, mnemonic and line, in the order they first
    appear."""
    groups: dict[tuple, int] = {}
    for mnemonic, operands, line, filename in placed_instructions(ptx, own_files):
        kind = _kind(mnemonic)
        if kind is None:
            continue
        key = (kind, mnemonic, _bits(mnemonic, operands), line, filename)
        groups[key] = groups.get(key, 0) + 1
    return [Access(kind, mnemonic, bits, count, line, filename)
            for (kind, mnemonic, bits, line, filename), count in groups.items()]


def dot_uses(ptx: str, ttir: str, own_files: Iterable[str]) -> list[DotUse]:
    """What each tl.dot became: its tensor-core instructions per line, and for a tl.dot of the Triton IR
    that left none in the PTX (Triton uses no tensor cores for it on this target), "fma" at its line."""
    from puzzles.running.compile_check.worker import ops_in_ir

    own = set(own_files)
    groups: dict[tuple, int] = {}
    for mnemonic, _operands, line, filename in placed_instructions(ptx, own):
        if mnemonic.startswith("wgmma.mma_async"):
            key = ("wgmma", mnemonic, line, filename)
        elif mnemonic.startswith("mma.sync"):
            key = ("mma", mnemonic, line, filename)
        else:
            continue
        groups[key] = groups.get(key, 0) + 1
    uses = [DotUse(kind, mnemonic, count, line, filename) for (kind, mnemonic, line, filename), count in groups.items()]
    if not uses:
        placed = sorted({(f, line) for _name, f, line in ops_in_ir(ttir, ["dot"]) if f in own} or
                        ({(None, None)} if re.search(r"= tt\.dot\b", ttir) else set()), key=str)
        uses = [DotUse("fma", "", 1, line, filename) for filename, line in placed]
    return uses


def resources(usage: str, sass: str, ptx: str) -> Resources:
    """Registers and stack from cuobjdump's resource usage; spill stores and loads counted in the SASS."""
    registers = re.search(r"\bREG:(\d+)", usage)
    stack = re.search(r"\bSTACK:(\d+)", usage)
    return Resources(int(registers.group(1)) if registers else None, int(stack.group(1)) if stack else 0,
                     len(re.findall(r"\bSTL(?:\.\w+)*\s", sass)), len(re.findall(r"\bLDL(?:\.\w+)*\s", sass)),
                     "vprintf" in ptx)
