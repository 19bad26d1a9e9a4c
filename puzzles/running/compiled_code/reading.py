"""Reading a compiled kernel's listings: each global load and store of the PTX with the bits one thread moves
per instruction and the source line it comes from, what `tl.dot` became (wgmma, mma or plain FMA), and
ptxas's registers, stack and spills. Pure text in, records out: nothing here compiles.

The PTX says where each instruction comes from with `.loc FILE LINE COLUMN` lines (the files are numbered by
`.file N "path"`): the worker compiled the learner's functions at their own file and lines. Those may be where
the functions were when first compiled (Triton's cache and the compile check's are keyed by source, not by
file: a re-run notebook cell has a new file name), so `placer` maps them onto where the functions are now, by
function and line within it. An instruction that Triton's library made (a `tl.sum`'s shuffles) carries a
`.loc` in Triton's own files; it is credited to the last line of the learner's seen before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# (a PTX file path, a line in it) -> (the learner's file, their line now), or None for another file's line
Place = Callable[[str, int], "tuple[str, int] | None"]

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


def library_dirs() -> tuple[str, ...]:
    """Triton's package and the course's: their lines are not the learner's."""
    import triton

    return str(Path(triton.__file__).resolve().parent), str(Path(__file__).resolve().parents[2])


def placer(then: list[dict], now: dict[str, dict]) -> Place:
    """Where a PTX line is in the learner's code now. `then`: the functions as compiled (name, filename,
    first_line, def_line, lines: worker.py's listing); `now`: the learner's functions today by name (their
    filename and def_line). A PTX path none of `then` has (a compile Triton's cache kept from another file
    name) is taken for the learner's file when it is no library's."""
    library = library_dirs()

    def place(path: str, line: int) -> tuple[str, int] | None:
        if path.startswith(library):
            return None
        candidates = [e for e in then if e["filename"] == path] or [
            e for e in then if not e["filename"].startswith(library)]
        for entry in candidates:
            current = now.get(entry["name"])
            if current is not None and entry["first_line"] <= line < entry["first_line"] + entry["lines"]:
                return current["filename"], current["def_line"] + line - entry["def_line"]
        return None

    return place


def files_placer(own_files: set[str]) -> Place:
    """Lines of `own_files` are the learner's as they are (a listing compiled where the learner's code still is)."""
    return lambda path, line: (path, line) if path in own_files else None


def placed_instructions(ptx: str, place: Place) -> list[tuple[str, str, int | None, str | None]]:
    """Every instruction of the PTX as (mnemonic, operands, line, file), placed at the learner's line: a
    `.loc` that `place` puts in the learner's code (or the line it was inlined at, where the PTX says), else
    the last of the learner's lines seen before it."""
    files = files_of(ptx)
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
                found = place(files.get(int(number), ""), int(at)) if number is not None else None
                if found is not None:
                    filename, line = found
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


def global_accesses(ptx: str, place: Place) -> list[Access]:
    """The kernel's global memory instructions, grouped by kind, mnemonic and line, in the order they first
    appear."""
    groups: dict[tuple, int] = {}
    for mnemonic, operands, line, filename in placed_instructions(ptx, place):
        kind = _kind(mnemonic)
        if kind is None:
            continue
        key = (kind, mnemonic, _bits(mnemonic, operands), line, filename)
        groups[key] = groups.get(key, 0) + 1
    return [Access(kind, mnemonic, bits, count, line, filename)
            for (kind, mnemonic, bits, line, filename), count in groups.items()]


def dot_uses(ptx: str, ttir: str, place: Place) -> list[DotUse]:
    """What each tl.dot became: its tensor-core instructions per line, and for a tl.dot of the Triton IR
    that left none in the PTX (Triton uses no tensor cores for it on this target), "fma" at its line."""
    from puzzles.running.compile_check.worker import ops_in_ir

    groups: dict[tuple, int] = {}
    for mnemonic, _operands, line, filename in placed_instructions(ptx, place):
        if mnemonic.startswith("wgmma.mma_async"):
            key = ("wgmma", mnemonic, line, filename)
        elif mnemonic.startswith("mma.sync"):
            key = ("mma", mnemonic, line, filename)
        else:
            continue
        groups[key] = groups.get(key, 0) + 1
    uses = [DotUse(kind, mnemonic, count, line, filename) for (kind, mnemonic, line, filename), count in groups.items()]
    if not uses:
        found = {place(f, line) for _name, f, line in ops_in_ir(ttir, ["dot"])} - {None}
        placed = sorted(found or ({(None, None)} if re.search(r"= tt\.dot\b", ttir) else set()), key=str)
        uses = [DotUse("fma", "", 1, line, filename) for filename, line in placed]
    return uses


def disassemble(cubin_b64: str) -> str:
    """The SASS of a cubin (base64, as the compile check's listing keeps it), by the nvdisasm that Triton's
    wheel bundles (its source line at each instruction), else cuobjdump; "" where neither runs."""
    if not cubin_b64:
        return ""
    import base64
    import binascii

    from puzzles.running.cubin_tools import run_on_cubin

    try:
        cubin = base64.b64decode(cubin_b64)
    except (binascii.Error, ValueError):
        return ""
    return run_on_cubin(cubin, ["nvdisasm", "-c", "-g"], ["cuobjdump", "-sass"])


def resources(usage: str, sass: str, ptx: str) -> Resources:
    """Registers and stack from cuobjdump's resource usage; spill stores and loads counted in the SASS."""
    registers = re.search(r"\bREG:(\d+)", usage)
    stack = re.search(r"\bSTACK:(\d+)", usage)
    return Resources(int(registers.group(1)) if registers else None, int(stack.group(1)) if stack else 0,
                     len(re.findall(r"\bSTL(?:\.\w+)*\s", sass)), len(re.findall(r"\bLDL(?:\.\w+)*\s", sass)),
                     "vprintf" in ptx)
