"""The static picture: one program's loads and stores, the overview or the launch order, as a
PNG; the stats table for a terminal; and the grading command's --viz DIR.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from puzzles.running.recording import Trace
from puzzles.viz.accesses import Counts
from puzzles.viz.fonts import Text, blit, text_width
from puzzles.viz.launch_order import TILES, paint_tiles
from puzzles.viz.model import Model, digest, digest_to_draw
from puzzles.viz.paint import Paint
from puzzles.viz.style import (
    ATOMIC,
    DPI,
    LABEL_H,
    LINE_H,
    LOAD,
    MAX_OPS_LISTED,
    MAX_PROGRAMS_LISTED,
    OTHERS,
    OUT_OF_BOUNDS,
    PAD,
    SHARED_DOT,
    STATS_PT,
    STORE,
    UNTOUCHED,
    VIEWS,
    WRONG_DOT,
    Program,
    fade,
    order_color,
    program_color,
)

if TYPE_CHECKING:  # imported lazily at run time: the viz must not slow down `import puzzles`
    from matplotlib.figure import Figure

    from puzzles.course.puzzle import Puzzle
    from puzzles.grading.result import SizeOutcome, TestResult


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B"


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0"


def _paint_program(model: Model, pi: int, op_index: int | None) -> dict[str, Paint]:
    program = model.programs[pi]
    plist = model.ops.get(program, [])
    paints = {}
    touched = model.touched()
    for name, box in model.boxes.items():
        p = Paint(box)
        p.fill(np.arange(box.numel), UNTOUCHED)
        p.fill(np.flatnonzero(touched[name]), OTHERS)
        paints[name] = p
    if op_index is None:
        passes = [(plist, False)]
    else:
        passes = [(plist[:op_index], True), (plist[op_index : op_index + 1], False)]
    for ops, faded in passes:
        f = fade if faded else (lambda c: c)
        for name, paint in paints.items():
            loaded = [op.elements[name] for op in ops if op.op == "load" and name in op.elements]
            stored = [op.elements[name] for op in ops if op.op == "store" and name in op.elements]
            atomic = [op.elements[name] for op in ops if op.op == "atomic" and name in op.elements]
            bad = [a for op in ops for t, a in [*op.oob.items(), *op.into_input.items()] if t == name]
            lset = np.unique(np.concatenate(loaded)) if loaded else np.empty(0, np.int64)
            sset = np.unique(np.concatenate(stored)) if stored else np.empty(0, np.int64)
            both = np.intersect1d(lset, sset)
            paint.fill(lset, f(LOAD))
            paint.fill(sset, f(STORE))
            paint.fill(both, f(LOAD), "top")  # loaded and stored: top half load, bottom half store
            for a in atomic:
                paint.fill(a, f(ATOMIC))
            for a in bad:
                paint.fill(a, f(OUT_OF_BOUNDS))
    _mark_wrong(model, paints)
    return paints


def _mark_wrong(model: Model, paints: dict[str, Paint]) -> None:
    if model.status_map is None:
        return
    status = np.asarray(model.status_map).reshape(-1)
    out = model.output
    if out in paints and status.size == paints[out].box.numel:
        paints[out].mark(np.flatnonzero(status == 1), WRONG_DOT)


def _paint_overview(model: Model, order: bool) -> dict[str, Paint]:
    paints = {}
    n = len(model.programs)
    palette = np.array([order_color(i, n) if order else program_color(i) for i in range(n)], np.uint8)
    bad = {}
    for plist in model.ops.values():
        for op in plist:
            for t, a in [*op.oob.items(), *op.into_input.items()]:
                bad.setdefault(t, []).append(a)
    for name, (first, count) in model.overview().items():
        box = model.boxes[name]
        p = Paint(box)
        p.fill(np.arange(box.numel), UNTOUCHED)
        hit = np.flatnonzero(first >= 0)
        p.fill(hit, palette[first[hit]])
        if not order:  # the order view stays plain: its colours already say which program came first
            p.mark(np.flatnonzero(count > 1), SHARED_DOT)
        for a in bad.get(name, []):
            p.fill(a, OUT_OF_BOUNDS)
        paints[name] = p
    _mark_wrong(model, paints)
    return paints




def _draw(model: Model, view: str, pi: int, op_index: int | None) -> tuple[np.ndarray, list[Text]]:
    lay = model.layout
    canvas = np.full((lay.height, lay.width, 3), 255, np.uint8)
    texts: list[Text] = []
    if view == "program":
        paints = _paint_program(model, pi, op_index)
    else:
        paints = _paint_overview(model, order=view == "order")
    tile_texts = []
    if model.tiles is not None and TILES in paints:
        tile_texts = paint_tiles(model.tiles, model.boxes[TILES], paints[TILES], model.layout, view, pi,
                                 len(model.programs))
    for name, paint in paints.items():
        box = paint.box
        img = paint.pixels(lay.cell, lay.gap)
        x0, y0 = box.x - box.left * lay.cell, box.y - box.top * lay.cell
        h, w = img.shape[:2]
        h, w = min(h, lay.height - y0), min(w, lay.width - x0)
        canvas[y0 : y0 + h, x0 : x0 + w] = img[:h, :w]
        texts.append(Text(x0, y0 - LABEL_H + 2, box.label(), weight="bold"))
        note, color = _tensor_note(model, view, pi, op_index, name)
        label_w = text_width(box.label())
        while note and label_w + 8 + text_width(note, bold=False) > box.room:
            note = note.rpartition(" · ")[0]  # drop details that do not fit; the stats panel has them
        if note:
            texts.append(Text(x0 + label_w + 8, y0 - LABEL_H + 2, note, color=color))
    texts += tile_texts
    if view != "program":
        texts += _program_labels(model, view == "order")
    _header(model, view, pi, op_index, canvas, texts)
    texts += _stats_text(model, view, pi, op_index)
    return canvas, texts


def _tensor_note(model: Model, view: str, pi: int, op_index: int | None, name: str) -> tuple[str, str]:
    """What the shown ops did to one tensor; masked-off lanes have no address, so they are a count."""
    if view != "program":
        _, count = model.overview()[name]
        most = int(count.max()) if count.size else 0
        return (f"up to {most} programs touch one element", "#555555") if most > 1 else ("", "")
    plist = model.ops.get(model.programs[pi], [])
    ops = plist if op_index is None else plist[op_index : op_index + 1]
    ops = [op for op in ops if name in op.tensors]
    if not ops:
        return "", ""
    parts = []
    for kind, verb in (("load", "loaded"), ("store", "stored"), ("atomic", "atomic")):
        hits = [op.elements[name] for op in ops if op.op == kind and name in op.elements]
        lanes = sum(h.size for h in hits)
        distinct = np.unique(np.concatenate(hits)).size if hits else 0
        if lanes:
            parts.append(f"{verb} {distinct}" + (f" ({lanes} lanes: re-reads)" if lanes > distinct else ""))
    masked = sum(op.masked for op in ops)
    if masked:
        parts.append(f"{masked} lanes masked off")
    oob = [op.oob[name] for op in ops if name in op.oob]
    if oob:
        lanes = np.concatenate(oob)
        far = int((~model.boxes[name].drawn(lanes)).sum())
        parts.append(f"{lanes.size} out of bounds" + (f" ({far} too far out to draw)" if far else ""))
    offending = oob or any(name in op.into_input for op in ops)
    return " · ".join(parts), "#c62828" if offending else "#1f4e79"


def _program_labels(model: Model, order: bool) -> list[Text]:
    """Name each program at the centre of the output cells it stored (tiling at a glance)."""
    lay, out = model.layout, model.output
    box = model.boxes[out]
    if len(model.programs) > 64:
        return []
    grid = model.trace.grid
    axes = [k for k in range(3) if grid[k] > 1] or [0]
    labels = []
    for i, program in enumerate(model.programs):
        written = [op.elements[out] for op in model.ops.get(program, []) if op.op != "load" and out in op.elements]
        if not written:
            continue
        r, c = box.cells(np.unique(np.concatenate(written)))
        xs, ys = lay.cell_origin(box, r, c)
        text = f"#{i}" if order else ",".join(str(program[k]) for k in axes)
        if xs.max() - xs.min() + lay.cell < text_width(text, 7.5) or ys.max() - ys.min() + lay.cell < 11:
            continue  # the tile is smaller than its name
        x, y = float(xs.mean() + lay.cell / 2), float(ys.mean() + lay.cell / 2)
        if any(abs(x - t.x) < 14 and abs(y - t.y) < 10 for t in labels):
            continue  # several programs wrote this tile (split-K): the first one names it, as it colours it
        labels.append(Text(x, y, text, size=7.5, halo=True, ha="center", va="center", weight="bold"))
    return labels


def _program_name(program: Program) -> str:
    return f"({program[0]}, {program[1]}, {program[2]})"


def _header(model: Model, view: str, pi: int, op_index: int | None, canvas: np.ndarray,
            texts: list[Text]) -> None:
    ok = model.status == "passed"
    verdict = model.status.upper() if model.status else ""
    parts = [s for s in (model.title, model.kernel, model.sizes) if s]
    texts.append(Text(PAD, PAD, " · ".join(parts) or "memory accesses", size=11, weight="bold"))
    if verdict:
        texts.append(Text(model.layout.width - PAD, PAD, verdict, size=11, weight="bold",
                           color="#2e7d32" if ok else "#c62828", ha="right"))
    grid = "×".join(str(g) for g in model.trace.grid)
    program = model.programs[pi]
    plist = model.ops.get(program, [])
    if view == "program":
        if op_index is None:
            what = f"program {_program_name(program)} of grid {grid} · all {len(plist)} ops"
        else:
            op = plist[op_index]
            what = f"program {_program_name(program)} · step {op_index + 1}/{len(plist)}: " \
                   f"{op.describe()}"
        legend = [(LOAD, "loaded"), (STORE, "stored"), (OTHERS, "other programs"), (UNTOUCHED, "untouched"),
                  (OUT_OF_BOUNDS, "out of bounds")]
        if any(op.op == "atomic" for ops in model.ops.values() for op in ops):
            legend.insert(2, (ATOMIC, "atomic"))
        if op_index is not None:
            legend.append((fade(LOAD), "earlier steps"))
    elif view == "overview":
        what = f"overview: each element coloured by the program that touched it first · grid {grid} " \
               f"({len(model.programs)} programs)"
        legend = [(program_color(0), "program 0"), (program_color(1), "program 1"), (SHARED_DOT, "• several"),
                  (UNTOUCHED, "untouched"), (OUT_OF_BOUNDS, "out of bounds")]
    else:
        what = f"launch order on a GPU (axis 0 fastest): #0 first … #{len(model.programs) - 1} last · grid {grid}"
        if model.tiles is not None:
            what = f"launch order: C's tiles numbered by the program that takes each (0 first, " \
                   f"{len(model.programs) - 1} last) · grid {grid}"
        n = len(model.programs)
        legend = [(order_color(0, n), "#0 first"), (order_color(n - 1, n), f"#{n - 1} last"),
                  (UNTOUCHED, "untouched"), (OUT_OF_BOUNDS, "out of bounds")]
    texts.append(Text(PAD, PAD + 22, what[:170], size=9, color="#333333"))
    x, y = PAD, PAD + 44
    for color, label in legend:  # swatches drawn in pixels, so their colours are exact
        canvas[y + 2 : y + 13, x : x + 11] = color
        if label.startswith("•"):
            canvas[y + 2 : y + 13, x : x + 11] = program_color(0)
            canvas[y + 5 : y + 10, x + 3 : x + 8] = SHARED_DOT
            label = label[1:].strip()
        texts.append(Text(x + 15, y, label, size=8.5))
        x += 15 + text_width(label, bold=False) + 12
    if model.status_map is not None and np.any(np.asarray(model.status_map) == 1):
        canvas[y + 2 : y + 13, x : x + 11] = UNTOUCHED
        canvas[y + 5 : y + 10, x + 3 : x + 8] = WRONG_DOT
        texts.append(Text(x + 15, y, "wrong value", size=8.5))


def _stats_text(model: Model, view: str, pi: int, op_index: int | None) -> list[Text]:
    st, lay = model.stats, model.layout
    program = model.programs[pi]
    mine = st.per_program.get(program, Counts())
    total = st.total
    red, grey = "#c62828", "#555555"
    lines: list[tuple[str, str]] = []
    n = len(model.programs)

    def row(label: str, a: str, b: str, color: str = "#222222") -> None:
        lines.append((f"{label:<17}{a:>15}  {b:>16}", color))

    if view == "program":
        row("", f"program {program[0]},{program[1]},{program[2]}", f"all {n} programs", grey)
    else:
        row("", "", f"all {n} programs", grey)

    def pair(get: Any) -> tuple[str, str]:
        return (get(mine) if view == "program" else ""), get(total)

    row("load ops", *pair(lambda c: str(c.loads)))
    row("store ops", *pair(lambda c: str(c.stores)))
    if total.atomics:
        row("atomic ops", *pair(lambda c: str(c.atomics)))
    row("bytes loaded", *pair(lambda c: _fmt_bytes(c.bytes_loaded)))
    row("bytes stored", *pair(lambda c: _fmt_bytes(c.bytes_stored)))
    row("lanes masked off", *pair(lambda c: _pct(c.masked, c.lanes)))
    if total.out_of_bounds:
        row("out-of-bounds", *pair(lambda c: str(c.out_of_bounds)), color=red)
    lines.append(("", ""))
    if view == "program":
        lines.append((f"{'by tensor':<17}{'this program':>12} {'all programs':>14} {'× size':>7}", grey))
    else:
        lines.append((f"{'by tensor':<17}{'':>12} {'all programs':>14} {'× size':>7}", grey))
    for name, size in st.tensor_bytes.items():
        verb = "write" if name == st.output or name in total.written else "read"
        moved = total.read.get(name, 0) + total.written.get(name, 0)
        here = mine.read.get(name, 0) + mine.written.get(name, 0)
        ratio = moved / size if size else 0
        color = red if ratio > 1.001 else "#222222"
        here_text = _fmt_bytes(here) if view == "program" else ""
        lines.append((f"{name[:10]:<10} {verb:<5} {here_text:>12} {_fmt_bytes(moved):>14} {ratio:>6.2f}×", color))
    lines.append(("", ""))
    lines.append((f"fewest bytes the puzzle needs {_fmt_bytes(st.min_bytes):>16}", "#222222"))
    lines.append(("  (each input read once, the output written once)", grey))
    lines.append((f"this run moved {_fmt_bytes(total.bytes_moved):>31}", "#222222"))
    lines.append((f"  = {st.ratio:.2f}× the fewest" + ("  (re-reads)" if st.ratio > 1.001 else ""),
                  red if st.ratio > 1.001 else grey))
    lines.append(("", ""))
    if view == "program":
        plist = model.ops.get(program, [])
        lines.append((f"ops of program {program[0]},{program[1]},{program[2]} ({len(plist)}):", grey))
        current = op_index if op_index is not None else 0
        start = max(0, min(current - MAX_OPS_LISTED // 2, len(plist) - MAX_OPS_LISTED))
        for i in range(start, min(len(plist), start + MAX_OPS_LISTED)):
            op = plist[i]
            mark = ">" if op_index == i else " "
            names = ",".join(op.tensors)[:8] or "-"
            oob = f" {op.oob_lanes} OOB" if op.oob_lanes else ""
            line = f"L{op.line or '?'}"
            text = f"{mark}{i + 1:>3} {op.op:<6} {names:<8} {line:<5} {op.lanes:>4} lanes {op.masked:>3} masked{oob}"
            lines.append((text, red if oob else "#222222"))
        if len(plist) > MAX_OPS_LISTED:
            lines.append((f"     … {len(plist)} ops in all", grey))
    else:
        lines.append(("program      loads stores      bytes  masked", grey))
        for program in model.programs[:MAX_PROGRAMS_LISTED]:
            c = st.per_program.get(program, Counts())
            name = f"{program[0]},{program[1]},{program[2]}"
            frac = f"{100 * c.masked_fraction:.0f}%"
            lines.append((f"{name:<12}{c.loads:>6}{c.stores + c.atomics:>7}{c.bytes_moved:>11,}{frac:>8}",
                          red if c.out_of_bounds else "#222222"))
        if n > MAX_PROGRAMS_LISTED:
            lines.append((f"… {n - MAX_PROGRAMS_LISTED} more programs", grey))
    return [Text(lay.stats_x, lay.stats_y + i * LINE_H, s, color=c, mono=True, size=STATS_PT)
            for i, (s, c) in enumerate(lines) if s]


def _picture(model: Model, view: str, program: Program | int | None, op_index: int | None) -> np.ndarray:
    """The finished picture as an (height, width, 3) uint8 array."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
    pi = model.program_index(program)
    n_ops = len(model.ops.get(model.programs[pi], []))
    if op_index is not None and not 0 <= op_index < n_ops:
        raise ValueError(f"op_index {op_index} is outside this program's {n_ops} ops")
    canvas, texts = _draw(model, view, pi, op_index)
    for t in texts:
        blit(canvas, t)
    return canvas


def render_figure(source: TestResult | SizeOutcome | Trace | Model, program: Program | int | None = None,
                  op_index: int | None = None, *, view: str = "program", outcome: int | None = None,
                  puzzle: Puzzle | None = None) -> Figure:
    """The picture as a matplotlib Figure (Agg; never shown on screen), pixel for pixel. See `render_png`."""
    from matplotlib.figure import Figure

    canvas = _picture(digest_to_draw(source, outcome, puzzle=puzzle), view, program, op_index)
    fig = Figure(figsize=(canvas.shape[1] / DPI, canvas.shape[0] / DPI), dpi=DPI, facecolor="white")
    fig.figimage(canvas, 0, 0, origin="upper")  # no axes, no resampling
    return fig


def render_png(source: TestResult | SizeOutcome | Trace | Model, path: str | Path | None = None,
               program: Program | int | None = None, op_index: int | None = None, *, view: str = "program",
               outcome: int | None = None, puzzle: Puzzle | None = None) -> bytes:
    """Draw one run's memory accesses as PNG bytes (and write them to `path` if given).

    source: a TestResult (its first failing size, else its canonical size; `outcome` picks another),
        a SizeOutcome, a Trace, or a Model from `digest`.
    program: a program id (tuple) or its launch index; default the first offending program, else 0.
    op_index: show that program's ops up to this one (0-based; earlier ones faded); None shows all.
    view: "program" (one program's loads and stores), "overview" (each element coloured by the
        program that touched it) or "order" (programs coloured by launch order).
    puzzle: the run's puzzle (see `digest`): its strided inputs and tile order are drawn as such.
    """
    from PIL import Image  # matplotlib's own PNG writer is Pillow

    canvas = _picture(digest_to_draw(source, outcome, puzzle=puzzle), view, program, op_index)
    buf = io.BytesIO()
    Image.fromarray(canvas).save(buf, format="png", compress_level=3)
    png = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png


# =====================================================================================================
# Text: the stats table for a terminal
# =====================================================================================================


def stats_table(source: TestResult | SizeOutcome | Trace | Model, max_programs: int = 32, *,
                puzzle: Puzzle | None = None) -> str:
    """Per program and in total: ops, bytes, masked lanes, and the fewest bytes the puzzle needs."""
    model = digest(source, puzzle=puzzle)
    if model is None:
        return "no memory trace (the kernel did not run in Triton's interpreter)"
    st = model.stats
    head = " · ".join(s for s in (model.title, model.kernel, model.sizes, model.status) if s)
    lines = [head, f"grid {model.trace.grid}, {len(model.programs)} programs"] if head else []
    lines.append(f"{'program':<14} {'loads':>6} {'stores':>6} {'atomics':>7} {'bytes in':>11} {'bytes out':>11} "
                 f"{'masked off':>18} {'OOB lanes':>9}")

    def row(name: str, c: Counts) -> str:
        return (f"{name:<14} {c.loads:>6} {c.stores:>6} {c.atomics:>7} {c.bytes_loaded:>11,} {c.bytes_stored:>11,} "
                f"{_pct(c.masked, c.lanes):>18} {c.out_of_bounds:>9}")

    for program in model.programs[:max_programs]:
        lines.append(row(str(program), st.per_program.get(program, Counts())))
    if len(model.programs) > max_programs:
        lines.append(f"... {len(model.programs) - max_programs} more programs")
    lines.append(row("total", st.total))
    parts = ", ".join(f"{n} {b:,}" for n, b in st.tensor_bytes.items())
    lines.append(f"fewest bytes the puzzle needs: {st.min_bytes:,} (each tensor once: {parts}); "
                 f"this run moved {st.total.bytes_moved:,} = {st.ratio:.2f}x")
    for bad in [*model.trace.invalid, *model.trace.stores_to_inputs][:8]:
        lines.append(f"offending: {bad.describe()}")
    return "\n".join(lines)


# =====================================================================================================
# Files: the grading command's --viz DIR
# =====================================================================================================


def save_pngs(result: TestResult, directory: str | Path, max_programs: int = 8, *,
              puzzle: Puzzle | None = None) -> list[Path]:
    """Write the overview, the launch order and a few programs' pictures; return the paths written.

    The programs drawn are the offending ones first, then the first and the last, up to
    `max_programs`. Nothing is written when the run has no trace (a GPU run, a signature error).
    """
    model = digest(result, puzzle=puzzle)
    if model is None:
        return []
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for view, name in (("overview", "overview.png"), ("order", "launch-order.png")):
        if view == "order" and len(model.programs) < 2:
            continue
        render_png(model, out / name, view=view)
        written.append(out / name)
    chosen = list(dict.fromkeys([*model.offending, model.programs[0], model.programs[-1], *model.programs]))
    for program in chosen[:max_programs]:
        path = out / f"program-{program[0]}-{program[1]}-{program[2]}.png"
        render_png(model, path, program=program)
        written.append(path)
    return written
