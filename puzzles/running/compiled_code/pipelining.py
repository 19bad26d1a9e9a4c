"""What the TTGIR says of a kernel's pipelined, warp-specialized K loop (puzzle 31's compiled rule): how many
shared-memory buffers its tiles rotate through, whether the loop was split into warp-specialized partitions,
whether its tiles arrive by TMA copies the warps wait for on mbarriers. Measured with Triton 3.7.1 at sm_90:
`tl.range(..., num_stages=S, warp_specialize=True)` over descriptor loads shows `ttg.warp_specialize` and tile
buffers `S x BM x BK`; without warp_specialize the loop is still pipelined (no `ttg.warp_specialize`); with
num_stages=1 each tile has a single buffer and the compiler drops the specialization."""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from puzzles.running.compiled_code.record import Compiled

# A multi-buffered tile: `ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, ...>` (barriers are `3x1xi64`).
TILE_BUFFERS = re.compile(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+)x(\d+)x(\d+)x(f16|bf16|f32|f8\w*)")
SINGLE_TILE = re.compile(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<(\d+)x(\d+)x(f16|bf16|f32|f8\w*)")


@dataclass(frozen=True)
class LoopShape:
    """The K loop as compiled: `buffers` per tile (1: not pipelined), `warp_specialized`, `tma_copies` (async TMA
    copies into shared memory), `barrier_waits` (mbarrier waits), and the loop's source line where it was found."""

    buffers: int
    warp_specialized: bool
    tma_copies: int
    barrier_waits: int
    line: int | None = None
    filename: str | None = None
    source: str = ""


def loop_line(filename: str | None, line: int | None) -> tuple[int | None, str]:
    """The `for` line that encloses source line `line` (the tl.dot): the nearest line above it, less indented,
    that starts a for loop; (None, "") where there is none."""
    if not filename or not line:
        return None, ""
    lines = linecache.getlines(filename)
    if line > len(lines):
        return None, ""
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for number in range(line - 1, 0, -1):
        text = lines[number - 1]
        if not text.strip():
            continue
        depth = len(text) - len(text.lstrip())
        if depth < indent:
            if re.match(r"\s*(for|while)\b", text):
                return number, text.strip()
            if re.match(r"\s*def\b", text):
                break
            indent = depth
    return None, ""


def loop_shape(code: Compiled) -> LoopShape:
    """The K loop of `code` (the loop around its first tl.dot), read from its TTGIR."""
    ttgir = code.ttgir
    buffers = [int(m.group(1)) for m in TILE_BUFFERS.finditer(ttgir)]
    single = bool(SINGLE_TILE.search(ttgir))
    count = max(buffers) if buffers else (1 if single else 0)
    dot = next((d for d in code.dots if d.line), None)
    line, source = loop_line(dot.filename, dot.line) if dot else (None, "")
    return LoopShape(buffers=count, warp_specialized="ttg.warp_specialize(" in ttgir,
                     tma_copies=ttgir.count("ttng.async_tma_copy_global_to_local"),
                     barrier_waits=ttgir.count("ttng.wait_barrier"), line=line,
                     filename=dot.filename if dot else None, source=source)
