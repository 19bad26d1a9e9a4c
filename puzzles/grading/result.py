"""What `test()` returns: a verdict per size, with the evidence, in text and in HTML."""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

import torch

from puzzles.running.errors import KernelError, triton_error_hint
from puzzles.running.recording import InvalidAccess, Trace

MAX_SHOWN = 8


@dataclass
class Mismatch:
    index: tuple[int, ...]
    expected: float | int  # an int for an integer output
    got: float | int
    word_bits: int = 0  # 32 or 64: an integer output shown as a hex word (packed nibbles); 0 otherwise

    def values(self) -> str:
        """`expected 0.25, got 0.5`; integers as integers; words in hex with the differing nibbles named."""
        if self.word_bits:
            e, g = _hex(self.expected, self.word_bits), _hex(self.got, self.word_bits)
            return f"expected {e}, got {g} ({_nibbles_text(self.differing_nibbles())} differ)"
        if isinstance(self.expected, int) and isinstance(self.got, int):
            return f"expected {self.expected}, got {self.got}"
        return f"expected {self.expected:.6g}, got {self.got:.6g}"

    def differing_nibbles(self) -> list[int]:
        """Nibble n is bits 4n..4n+3 (nibble 0 the lowest), highest first."""
        diff = (int(self.expected) ^ int(self.got)) & ((1 << self.word_bits) - 1)
        return [n for n in reversed(range(self.word_bits // 4)) if (diff >> 4 * n) & 0xF]

    def marks(self) -> str:
        """A caret under each differing hex digit of `values()`'s words."""
        digits = self.word_bits // 4
        differ = set(self.differing_nibbles())
        return "  " + "".join("^" if digits - 1 - i in differ else " " for i in range(digits))


def _hex(value: float | int, bits: int) -> str:
    return f"0x{int(value) & ((1 << bits) - 1):0{bits // 4}X}"


def _nibbles_text(nibbles: list[int]) -> str:
    return ("nibble " if len(nibbles) == 1 else "nibbles ") + ", ".join(str(n) for n in nibbles)


@dataclass
class SizeOutcome:
    """The run at one size."""

    sizes: dict[str, int]
    seed: int
    # "passed", "wrong", "unwritten", "out of bounds", "store into input", "race", "error", "compile error",
    # "timeout", "not run"
    status: str
    mismatch_count: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    unwritten_count: int = 0
    unwritten: list[tuple[int, ...]] = field(default_factory=list)
    invalid_accesses: list[InvalidAccess] = field(default_factory=list)
    error: KernelError | None = None
    seconds: float = 0.0
    stdout: str = ""
    output_shape: tuple[int, ...] = ()
    # Per element: 0 right, 1 wrong, 2 never written (for the diff picture).
    status_map: Any = None
    trace: Trace | None = None
    expected: torch.Tensor | None = None
    output: torch.Tensor | None = None
    transposed: bool = False  # the output is the expected one transposed
    note: str = ""  # more about the wrong elements (which rows, by how much)
    parts: Any = None  # the puzzle's OutputParts: results packed into z, each element named by its result
    time_limit: float | None = None  # for a size stopped at its time limit: the limit, in seconds

    def time_text(self) -> str:
        """`12 ms`; for a size stopped at its limit, the limit (it did not run `0 ms`)."""
        if self.status == "timeout":
            return f"over {self.time_limit:g} s" if self.time_limit else "stopped"
        if self.status == "not run":
            return "–"
        return f"{self.seconds * 1000:.0f} ms"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        # One line: the dataclass default would print every tensor and the whole trace.
        return _short(f"<SizeOutcome {self.size_text()} seed={self.seed}: {self.reason()}>")

    def size_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes.items())

    def element(self, index: tuple[int, ...]) -> str:
        """How the verdict names an output element: `z[2, 5]`, or by its result where several are packed
        into z (puzzle 26: `dw[5]`)."""
        return self.parts.element(index, self.sizes) if self.parts is not None else "z" + _fmt_index(index)

    def reason(self) -> str:
        """One line saying what went wrong at this size."""
        if self.status == "passed":
            return "passed"
        if self.status == "not run":
            return "not run (an earlier size timed out)"
        if self.error is not None:
            return self.error.describe().replace("\n  ", " ")
        parts = []
        outside = [a for a in self.invalid_accesses if a.kind == "out of bounds"]
        into_inputs = [a for a in self.invalid_accesses if a.kind != "out of bounds"]
        if outside:
            count = (f"{len(outside)} out-of-bounds accesses, the first" if len(outside) > 1
                     else "1 out-of-bounds access")
            parts.append(f"{count}: {outside[0].describe()}")
        if into_inputs:
            names = ", ".join(dict.fromkeys(a.tensor for a in into_inputs))
            parts.append(f"the kernel stores into its input {names} (inputs are read-only: write the result "
                         f"through the output pointer): {into_inputs[0].describe()}")
        total = max(1, _numel(self.output_shape))
        if self.unwritten_count == total and not parts:
            return f"the kernel wrote nothing: all {total} output elements never written (still the starter?)"
        if self.unwritten_count == total:
            parts.append(f"all {total} output elements never written")
            return "; ".join(parts)
        if self.unwritten_count:
            first = f" (first {self.element(self.unwritten[0])})" if self.unwritten else ""
            parts.append(f"{self.unwritten_count} of {total} output elements never written{first}")
        if self.transposed:
            parts.append("the output is the expected one transposed (rows and columns swapped: check which index "
                         "goes with the row stride in the store and the loads)")
        if self.mismatch_count:
            m = self.mismatches[0]
            first = f"first {self.element(m.index)}: {m.values()}"
            parts.append(f"{self.mismatch_count} of {total} elements wrong ({first})")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts) or self.status


@dataclass
class TestResult:
    """The autograder's verdict on one kernel."""

    puzzle: str
    kernel: str
    outcomes: list[SizeOutcome]
    seconds: float
    seed: int
    error: KernelError | None = None  # a failure before any size ran (signature, spec)
    device: str = "cpu (Triton interpreter)"
    notes: list[str] = field(default_factory=list)
    perf: Any = None  # a puzzles.grading.perf.PerfReport when speed was measured (GPU)
    compiled: Any = None  # a puzzles.running.compiled_code.Compiled: test(..., compiled=True)
    efficiency: Any = None  # a puzzles.grading.efficiency_model.Efficiency: test(..., efficiency=True)
    # Where test(sizes=[...]) left out sizes of the puzzle: why a pass here is not a pass of the puzzle.
    partial: str = ""
    _shown_in: Any = None

    __test__ = False  # not a pytest test class

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def first_failure(self) -> SizeOutcome | None:
        return next((o for o in self.outcomes if not o.passed), None)

    def reason(self) -> str:
        if self.error is not None:
            return self.error.describe()
        failure = self.first_failure
        if failure is None:
            return "passed"
        return f"at {failure.size_text()} (seed {failure.seed}): {failure.reason()}"

    @property
    def invalid_accesses(self) -> list[InvalidAccess]:
        return [a for o in self.outcomes for a in o.invalid_accesses]

    # -- text ---------------------------------------------------------------------------------
    def summary(self) -> str:
        head = f"{self.puzzle} · {self.kernel}"
        if self.passed:
            sizes = ", ".join(o.size_text() for o in self.outcomes)
            count = f"{len(self.outcomes)} size{'s' if len(self.outcomes) != 1 else ''}"
            if self.partial:
                return f"PASSED ONLY THE SIZES GIVEN {head}: {count} ({sizes}) in {self.seconds:.2f} s"
            return f"PASSED {head}: {count} ({sizes}) in {self.seconds:.2f} s"
        return f"NOT YET {head}: {self.reason()}"

    def __str__(self) -> str:
        lines = [self.summary()]
        failure = self.first_failure
        if self.error is None:
            for o, why in zip(self.outcomes, row_reasons(self.outcomes, failure), strict=True):
                mark = "ok " if o.passed else " -- " if o.status == "not run" else "FAIL"
                lines.append(f"  [{mark}] {o.size_text()}  seed={o.seed}  {o.time_text()}  {why}")
        if failure is not None and failure.error is None:
            lines += _detail_lines(failure)
        printed = _printed(self)
        if printed is not None:
            lines.append(f"  kernel printed (at {printed.size_text()}):")
            lines += ["    " + s for s in printed.stdout.strip().splitlines()[:20]]
        if self.perf is not None:  # the speed line, and the goal's
            lines += ["  " + line for line in self.perf.lines()]
        if failure is not None:
            lines.append(f"  reproduce with seed={failure.seed}")
        lines += [f"  note: {n}" for n in ([self.partial] if self.partial else []) + self.notes]
        if self.compiled is not None:
            lines += ["  " + line for line in self.compiled.summary().splitlines()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return _short(f"<TestResult {self.summary()}>")

    # -- Jupyter ------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        return render_html(self)

    def _ipython_display_(self) -> None:
        # test() shows the verdict itself; skip the second copy that the same cell's return
        # value would print, but show it again when the result is evaluated in a later cell.
        from IPython import get_ipython
        from IPython.display import HTML, display

        shell = get_ipython()
        count = getattr(shell, "execution_count", None)
        if self._shown_in is not None and self._shown_in == count:
            self._shown_in = None
            return
        self._shown_in = count
        display(HTML(render_html(self)))


SAME_AS_ABOVE = "the same as above"
EXPLANATION = 120  # characters: a note this long explains (said once); a shorter one is a fact about its size


def row_reasons(outcomes: list[SizeOutcome], headline: SizeOutcome | None = None) -> list[str]:
    """Each size's reason for the verdict's table ("" where it passed), each explanation in full once:
    a reason already in front of the reader (the `headline`'s, or an earlier row's) is `SAME_AS_ABOVE`,
    and a long note or an error's advice already given (the same words, whatever its numbers) is left out."""
    shown: list[str] = []
    explained: set[str] = set()

    def explanations(o: SizeOutcome) -> list[str]:
        advice = triton_error_hint(o.error.message, o.error.source) if o.error is not None else ""
        return [f" ({advice})"] * bool(advice) + [f"; {o.note}"] * bool(o.note)

    def same_words(o: SizeOutcome) -> str:
        # The output's element count is the size's, shown in the row: "wrote nothing: all 300 output elements
        # never written" at N0=300 is the same reason as "... all 97 ..." at N0=97.
        total = _numel(o.output_shape)
        return o.reason().replace(f"all {total} output", "all the output") if total else o.reason()

    if headline is not None:
        shown.append(same_words(headline))
        explained.update(_without_numbers(x) for x in explanations(headline))
    rows = []
    for o in outcomes:
        why = "" if o.passed else o.reason()
        if o.passed or o.status == "not run":
            rows.append(why)
            continue
        if same_words(o) in shown:
            rows.append(SAME_AS_ABOVE)
            continue
        shown.append(same_words(o))
        for text in explanations(o):
            if len(text) > EXPLANATION and _without_numbers(text) in explained:
                why = why.replace(text, " (explained above)" if text.startswith(" (") else "; see the note above", 1)
            explained.add(_without_numbers(text))
        rows.append(why)
    return rows


def _without_numbers(text: str) -> str:
    return re.sub(r"\d+", "#", text)


BRIEF = 160  # characters: a reason in one row of a table (the scoreboard, the progress notebook)
SLIP_NOTE = "the output is what this slip gives: "  # how a verdict names a likely slip (puzzles/course/mistakes.py)


def brief_reason(reason: str, limit: int = BRIEF) -> str:
    """A verdict's reason in one table cell of at most `limit` characters, the words a learner acts on first:
    where the verdict names a likely slip, the slip, then the counts and the size; otherwise its first line
    without the seed and the first wrong element's values, cut after a whole clause. The full reason is in
    the notebook's verdict (and in `--json`)."""
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    if len(line) <= limit:
        return line
    line = _without_first_values(re.sub(r" \(seed \d+\)", "", line))
    if SLIP_NOTE not in line:
        return _cut(line, limit)
    facts, slip = line.split(SLIP_NOTE, 1)
    where, _, counts = facts.rstrip("; ").replace(" elements wrong", " wrong").rpartition(": ")
    facts = f"{counts} {where}" if len(counts) + len(where) < limit // 3 else counts  # a long size: counts alone
    tail = f" ({facts})" if facts and len(facts) <= limit // 2 else ""
    return _cut(f"likely slip: {slip}", limit - len(tail)) + tail


def _without_first_values(text: str) -> str:
    """`64 of 64 elements wrong (first z[0, 0]: expected ..., got ... (nibbles ... differ))` less its
    parenthesis: the values of one element say little in a table row. (A packed output names it dw[3].)"""
    found = re.search(r" \(first \w+\[", text)
    if found is None:
        return text
    start = found.start()
    depth = 0
    for end in range(start + 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            return text[:start] + text[end + 1:]
    return text[:start]


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: cut before the last clause that does not fit (at `; `, `: `,
    `, ` or ` (`), or at a word where no clause ends late enough, and marked with `…`."""
    if len(text) <= limit:
        return text
    room, depth, clauses = text[: limit - 1], 0, [-1]
    for i, char in enumerate(room):  # clause ends outside brackets (not the comma of zero[g, n])
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if depth == 0 and (room.startswith((": ", "; ", ", ", ". "), i) or room.startswith(" (", i)):
            clauses.append(i)
    end = clauses[-1]
    if end < limit // 3:
        end = room.rfind(" ")
    if end < limit // 3:
        end = limit - 1
    return text[:end].rstrip(" ;:,(") + "…"


def _printed(result: TestResult) -> SizeOutcome | None:
    """The size whose print output to show, pass or fail: the failing one, else the first that printed."""
    failure = result.first_failure
    if failure is not None:
        return failure if failure.stdout.strip() else None
    return next((o for o in result.outcomes if o.stdout.strip()), None)


def _detail_lines(o: SizeOutcome) -> list[str]:
    lines = []
    # One line per op of the kernel: the same line out of bounds in every program (or every loop step) says
    # nothing new after the first, but which programs did it may.
    same_op: dict[tuple[str, str, str, int | None], list[InvalidAccess]] = {}
    for a in o.invalid_accesses:
        same_op.setdefault((a.kind, a.op, a.tensor, a.line), []).append(a)
    for group in list(same_op.values())[:MAX_SHOWN]:
        a = group[0]
        text = f"  {'out of bounds' if a.kind == 'out of bounds' else 'store into an input'}: {a.describe()}"
        if len(group) > 1:
            programs = list(dict.fromkeys(g.program for g in group[1:] if g.program != a.program))
            where = (f", in program{'s' if len(programs) > 1 else ''} " + ", ".join(map(str, programs[:4]))
                     + (" …" if len(programs) > 4 else "")) if programs else ", in the same program"
            text += f"; {len(group) - 1} more time{'s' if len(group) > 2 else ''} at this line{where}"
        lines.append(text)
    if o.mismatches:
        lines.append("  first wrong elements (index: expected vs got):")
        for m in o.mismatches[:MAX_SHOWN]:
            if m.word_bits:
                head = f"    {o.element(m.index)}: "
                lines.append(f"{head}{_hex(m.expected, m.word_bits)} vs {_hex(m.got, m.word_bits)}  "
                             f"({_nibbles_text(m.differing_nibbles())} differ)")
                lines.append(" " * (len(head) + 2 + m.word_bits // 4 + 4) + m.marks())
            else:
                pair = m.values().replace("expected ", "").replace(", got", " vs")
                lines.append(f"    {o.element(m.index)}: {pair}")
    if o.unwritten:
        shown = ", ".join(o.element(i) for i in o.unwritten[:MAX_SHOWN])
        lines.append(f"  never written: {shown}{' ...' if o.unwritten_count > MAX_SHOWN else ''}")
    return lines


REPR_MAX = 200


def _short(text: str, limit: int = REPR_MAX) -> str:
    """One line of at most `limit` characters (a repr in a list, a debugger or a log)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 2] + "…>"


def _fmt_index(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# -- HTML ---------------------------------------------------------------------------------------

_COLORS = {0: "#4caf50", 1: "#e53935", 2: "#9e9e9e"}


def diff_svg(status_map: Any, max_cells: int = 64, cell: int = 7) -> str:
    """A small picture of the output: green right, red wrong, grey never written."""
    if status_map is None:
        return ""
    grid = status_map
    if grid.ndim == 1:
        grid = grid.reshape(1, -1)
    elif grid.ndim > 2:
        grid = grid.reshape(-1, grid.shape[-1])
    rows, cols = grid.shape
    # Downsample large outputs, keeping the worst status of each block of cells.
    step_r, step_c = max(1, -(-rows // max_cells)), max(1, -(-cols // max_cells))
    if step_r > 1 or step_c > 1:
        import torch.nn.functional as F

        t = torch.as_tensor(grid, dtype=torch.float32)[None, None]
        worst = torch.where(t == 1, 3.0, t)  # wrong outranks unwritten outranks right
        pooled = F.max_pool2d(worst, (step_r, step_c), ceil_mode=True)[0, 0]
        grid = torch.where(pooled == 3, 1.0, pooled).to(torch.int64).numpy()
        rows, cols = grid.shape
    rects = []
    for r in range(rows):
        for c in range(cols):
            color = _COLORS[int(grid[r][c])]
            rects.append(f'<rect x="{c * cell}" y="{r * cell}" width="{cell - 1}" height="{cell - 1}" fill="{color}"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * cell}" height="{rows * cell}">'
            + "".join(rects) + "</svg>")


# JupyterLab right-aligns table cells: every cell says left; sizes, seeds and times never wrap.
_CELL = ' style="text-align:left;vertical-align:top;padding:2px 8px"'
_NOWRAP = ' style="text-align:left;vertical-align:top;padding:2px 8px;white-space:nowrap"'


def render_html(result: TestResult) -> str:
    ok = result.passed
    color = "#2e7d32" if ok else "#c62828"
    title = ("Passed only the sizes given" if result.partial else "Passed") if ok else "Not yet"
    e = html.escape
    parts = [f'<div style="border-left:6px solid {color};padding:6px 12px;font-family:sans-serif">',
             f'<div style="font-size:1.1em;color:{color}"><b>{title}</b> · {e(result.puzzle)} · '
             f"<code>{e(result.kernel)}</code> · {result.seconds:.2f} s · {e(result.device)}</div>"]
    if result.error is not None:
        parts.append(f"<pre>{e(result.error.describe())}</pre>")
    else:
        rows = []
        for o, why in zip(result.outcomes, row_reasons(result.outcomes), strict=True):
            mark = ("<span style='color:#2e7d32'>✓</span>" if o.passed else
                    "–" if o.status == "not run" else "<span style='color:#c62828'>✗</span>")
            rows.append(f"<tr><td{_CELL}>{mark}</td><td{_NOWRAP}><code>{e(o.size_text())}</code></td>"
                        f"<td{_NOWRAP}>{o.seed}</td><td{_NOWRAP}>{e(o.time_text())}</td>"
                        f"<td{_CELL}>{e(why)}</td></tr>")
        head = "".join(f"<th{_NOWRAP}>{h}</th>" for h in ("", "sizes", "seed", "time", "what went wrong"))
        parts.append(f'<table style="border-collapse:collapse"><tr>{head}</tr>' + "".join(rows) + "</table>")
        failure = result.first_failure
        if failure is not None:
            details = _detail_lines(failure) if failure.error is None else []
            if details:
                # Dedent, not strip: the carets under a packed word's wrong nibbles keep their column.
                parts.append("<pre>" + e(textwrap.dedent("\n".join(details))) + "</pre>")
            if failure.status_map is not None and failure.unwritten_count < _numel(failure.output_shape):
                legend = " ".join(f"<span style='color:{_COLORS[k]}'>■ {label}</span>"
                                  for k, label in ((0, "right"), (1, "wrong"), (2, "never written")))
                parts.append(f"<div>output at the failing size: {legend}</div>")
                parts.append(diff_svg(failure.status_map))
            parts.append(f"<div>reproduce with <code>seed={failure.seed}</code></div>")
    printed = _printed(result) if result.error is None else None
    if printed is not None:
        parts.append(f"<div>the kernel printed (at <code>{e(printed.size_text())}</code>):</div><pre>"
                     + e(printed.stdout.strip()[:4000]) + "</pre>")
    if result.perf is not None:
        speed, *goal = result.perf.lines()
        parts.append(f"<div>speed: {e(speed)}</div>")
        parts += [f"<div><b>{e(line.split(':', 1)[0])}</b>:{e(line.split(':', 1)[1])}</div>" for line in goal]
    for n in ([result.partial] if result.partial else []) + result.notes:
        parts.append(f"<div><i>note: {e(n)}</i></div>")
    if result.compiled is not None:
        parts.append(f'<div style="margin-top:6px">{result.compiled._repr_html_()}</div>')
    parts.append("</div>")
    return "".join(parts)
