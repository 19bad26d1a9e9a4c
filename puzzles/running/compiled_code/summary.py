"""A compiled kernel in a learner's words (`Compiled.summary()`), and in a notebook: the same summary with
each listing folded away under it (`<details>`)."""

from __future__ import annotations

import html
import linecache
from typing import Any

from puzzles.running.compiled_code.reading import Access, DotUse
from puzzles.running.compiled_code.targets import TARGET_GPUS

# The functions below take a `Compiled` (record.py, which imports this module): typed Any here.

SOURCE_WIDTH = 72  # characters of a source line quoted beside its instructions
LISTING_LIMIT = 200_000  # characters of a listing shown in a notebook (the attribute holds all of it)

DOT_WORDS = {
    "wgmma": "wgmma, Hopper's warp-group tensor-core instruction (4 warps multiply one tile together, "
             "reading operands from shared memory)",
    "mma": "mma.sync, tensor-core instructions that each warp issues on its own",
    "fma": "no tensor-core instruction: Triton computes it with fused multiply-adds (FMA) on the ordinary cores "
           "for this target",
}


def source_at(filename: str | None, line: int | None) -> str:
    """The learner's line, stripped and cut to SOURCE_WIDTH."""
    if not filename or not line:
        return ""
    text = linecache.getline(filename, line).strip()
    return text if len(text) <= SOURCE_WIDTH else text[: SOURCE_WIDTH - 1] + "…"


def heading(code: Any) -> str:
    gpu = TARGET_GPUS.get(code.target)
    where = f"{code.target_name} ({gpu})" if gpu else code.target_name
    sizes = " ".join(f"{k}={v}" for k, v in code.sizes.items())
    return f"{code.kernel} compiled for {where}" + (f" at {sizes}" if sizes else "")


def machine_line(code: Any) -> str:
    """`4 warps (128 threads) · 22 registers per thread · no spills · no shared memory`."""
    parts = [f"{code.num_warps} warps ({code.num_warps * 32} threads per program)"]
    if code.registers is not None:
        parts.append(f"{code.registers} registers per thread")
    if not code.spills:
        parts.append(spill_words(code))
    parts.append(f"{code.shared} bytes of shared memory per program" if code.shared else "no shared memory")
    if code.num_stages and any(a.kind in ("async copy", "TMA load") for a in code.accesses):
        parts.append(f"{code.num_stages} pipeline stages")
    return " · ".join(parts)


def spill_words(code: Any) -> str:
    res = code.resources
    if res is None:
        return "spills unknown"
    if res.printf and res.stack:
        return f"{res.stack} bytes of stack per thread (a print's arguments)"
    if not res.spills:
        return "no spills"
    counts = f", {res.spill_stores} spill stores and {res.spill_loads} spill loads in the SASS" if (
        res.spill_stores or res.spill_loads) else ""
    return (f"SPILLS: {res.stack} bytes of stack per thread{counts} (registers ran out: values go to slow local "
            "memory and back; smaller blocks, more warps or fewer values alive at once help)")


# What an access's kind means, where its name does not say it.
KIND_NOTES = {"async copy": "global to shared memory, asynchronous", "TMA load": "a whole tile, by the TMA unit",
              "TMA store": "a whole tile, by the TMA unit"}


def kind_word(access: Access) -> str:
    return "load" if access.kind in ("async copy", "TMA load") else "store" if access.kind == "TMA store" else (
        access.kind)


def detail(access: Access) -> str:
    """`4 × 32-bit`, or what the kind means (`global to shared memory, asynchronous`)."""
    return "; ".join(filter(None, (access.elements, KIND_NOTES.get(access.kind, ""))))


def access_words(access: Access) -> str:
    """`load   128-bit  2 × ld.global.v4.b32 (4 × 32-bit)`."""
    more = f" ({detail(access)})" if detail(access) else ""
    return f"{kind_word(access):<6} {access.width:>7}  {access.count} × {access.instruction}{more}"


def dot_words(dot: DotUse, target: int = 0) -> str:
    what = DOT_WORDS[dot.kind]
    if dot.kind == "fma":
        return what
    types = f", {dot.inputs} inputs, {dot.sums} sums" if dot.inputs else ""
    shape = f" {dot.shape}" if dot.shape else ""
    words = f"{what}: {dot.count} × {'.'.join(dot.instruction.split('.')[:2])}{shape}{types}"
    if dot.kind == "mma" and target >= 90:
        words += " (wgmma, Hopper's own, takes larger blocks: 64 rows or more per 4 warps)"
    return words


def place(line: int | None) -> str:
    return f"line {line}" if line else "line ?"


def summary_text(code: Any) -> str:
    if not code.ok:
        return f"{code.kernel} would not compile for {code.target_name}: {code.error.describe()}"
    lines = [heading(code), "  " + machine_line(code)] + (["  " + spill_words(code)] if code.spills else [])
    if code.accesses:
        lines.append("  global memory, what one thread moves per instruction:")
        for a in code.accesses:
            source = source_at(a.filename, a.line)
            lines.append(f"    {place(a.line):<8} {access_words(a)}" + (f"   {source}" if source else ""))
    else:
        lines.append("  no global loads or stores")
    for dot in code.dots:
        lines.append(f"  tl.dot at {place(dot.line)}: {dot_words(dot, code.target)}")
    return "\n".join(lines)


def summary_html(code: Any) -> str:
    e = html.escape
    color = "#1565c0" if code.ok else "#c62828"
    parts = [f'<div style="border-left:6px solid {color};padding:6px 12px;font-family:sans-serif">']
    if not code.ok:
        parts.append(f"<div><b>{e(code.kernel)} would not compile for {e(code.target_name)}</b></div>"
                     f"<pre>{e(code.error.describe())}</pre></div>")
        return "".join(parts)
    parts.append(f"<div><b>{e(heading(code))}</b></div>")
    parts.append(f"<div>{e(machine_line(code))}</div>")
    if code.spills:
        parts.append(f'<div style="color:#c62828">{e(spill_words(code))}</div>')
    cell = ' style="text-align:left;vertical-align:top;padding:2px 8px;white-space:nowrap"'
    if code.accesses:
        head = "".join(f"<th{cell}>{h}</th>" for h in ("line", "access", "width", "instructions", "source"))
        rows = []
        for a in code.accesses:
            more = f" ({detail(a)})" if detail(a) else ""
            rows.append(f"<tr><td{cell}>{a.line or '?'}</td><td{cell}>{e(kind_word(a))}</td>"
                        f"<td{cell}><b>{a.width}</b></td>"
                        f"<td{cell}>{a.count} × <code>{e(a.instruction)}</code>{e(more)}</td>"
                        f"<td{cell}><code>{e(source_at(a.filename, a.line))}</code></td></tr>")
        parts.append("<div>global memory, what one thread moves per instruction:</div>"
                     f'<table style="border-collapse:collapse"><tr>{head}</tr>{"".join(rows)}</table>')
    else:
        parts.append("<div>no global loads or stores</div>")
    for dot in code.dots:
        parts.append(f"<div><code>tl.dot</code> at {e(place(dot.line))}: {e(dot_words(dot, code.target))}</div>")
    for name, text in (("TTIR", code.ttir), ("TTGIR", code.ttgir), ("PTX", code.ptx), ("SASS", code.sass)):
        if not text:
            continue
        shown = text if len(text) <= LISTING_LIMIT else text[:LISTING_LIMIT] + f"\n… (cut: .{name.lower()} holds all)"
        parts.append(f"<details><summary>{name} ({text.count(chr(10))} lines, <code>.{name.lower()}</code>)</summary>"
                     f'<pre style="max-height:30em;overflow:auto">{e(shown)}</pre></details>')
    parts.append("</div>")
    return "".join(parts)
