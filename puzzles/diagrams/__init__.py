"""One diagram per puzzle, drawn from the puzzle's own spec, sizes and grid.

`python -m puzzles.diagrams` (or `python -m puzzles diagrams`) writes `assets/<puzzle id>.svg`
and `assets/<puzzle id>.png` for every puzzle of the catalog. The notebooks embed the PNG (drawn
at twice the size it is shown at, for sharp lines on high-density screens) as a data: URI:
Colab renders no SVG data URI in a markdown cell, but it renders PNG ones.

A diagram shows every input and the output as grids at the canonical size (`sizes[0]`), the
block that one program (a middle one of the grid) touches in each of them, the formula (the
spec's docstring) and the grid of programs. All of it comes from the puzzle itself:

* the shapes from the spec's jaxtyping annotations (`spec_signature`);
* which grid axis walks which dimension, by evaluating the puzzle's grid function with one
  size changed at a time (the course's rule "axis k walks Nk" is then checked, not assumed);
* a dimension that no grid axis walks but that has a block size (`B_MID` for `MID`, `BK` for
  `K`, or a `Bk` whose `Nk` is not a dimension, as `B1` for `T`) is walked by a loop inside
  the program, in chunks of that size;
* a packed dimension such as `MID//8` is drawn so that one word lines up with the 8 values
  it holds.

Large dimensions are drawn in block units (one cell = one block, the block size labelled);
past the end of a dimension that is not a multiple of its block, the last block's masked lanes
are hatched. Where the generic picture would mislead, a puzzle's records (fields of its `Puzzle`,
see puzzles/course/picture_hooks.py) ask for a touch (touches.py): a tensor in registers only (flash
attention's scores), one step of a sliding window (the convolution), split-K's interleaved
chunks, a strided view, or a picture of its own (a tile order; lists of tensors).

The SVG output is deterministic (fixed hash salt, no date, glyphs drawn as paths with the
DejaVu Sans that ships with matplotlib), so regenerating gives identical bytes with the pinned
matplotlib, and `tests/course/test_diagrams.py` can check that `assets/` is up to date. Rasterised
pixels may differ by a shade between machines, so each PNG records in its metadata the digest
of the SVG it was drawn with (`Source`), which the test checks instead of the PNG's bytes.

The package, in the order a diagram is made: style.py (settings, colours, sizes), scene.py
(what to show), touches.py (the changes a puzzle's records ask for), layout.py (text sizes and
where it goes), paint.py (the drawing primitives), then one module per family of picture:
generic.py (with strided.py's storage strip), tile_order.py, multi_tensor.py. This file holds
the entry points.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from puzzles.course.catalog import all_puzzles
from puzzles.course.puzzle import Puzzle
from puzzles.diagrams.generic import draw_generic
from puzzles.diagrams.scene import Scene, build_scene
from puzzles.diagrams.style import FIG_W, METADATA_KEYS, RC
from puzzles.diagrams.touches import apply_touches

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"
# A notebook shows a diagram at its natural size, 96 CSS pixels per inch; the PNG holds twice that.
SHOW_DPI = 96
PNG_SCALE = 2
# Colours in the PNG's palette: the diagrams use a dozen fills plus anti-aliased edges and text.
PNG_COLOURS = 96
SOURCE_KEY = "Source"  # PNG text chunk: the digest of the SVG it was drawn with


def show_width() -> int:
    """The width, in CSS pixels, a notebook shows every diagram at (the PNG is PNG_SCALE times wider)."""
    return round(FIG_W * SHOW_DPI)


def svg_digest(svg: bytes) -> str:
    return "sha256:" + hashlib.sha256(svg).hexdigest()[:16]


@contextmanager
def _rc() -> Iterator[None]:
    with matplotlib.rc_context(RC):
        yield


def scene_for(puzzle: Puzzle) -> Scene:
    """The scene of a puzzle, with the touches its records ask for."""
    scene = build_scene(puzzle)
    apply_touches(scene)
    return scene


def draw(puzzle: Puzzle) -> Figure:
    """The diagram of one puzzle, at its canonical size."""
    with _rc():
        scene = scene_for(puzzle)
        fig = Figure(figsize=(FIG_W, 4))
        (scene.custom or draw_generic)(fig, scene)
        return fig


def overlapping_labels(fig: Figure, slack: float = 0.5) -> list[tuple[str, str]]:
    """What makes a drawn diagram's text hard to read: pairs of texts whose boxes overlap by more than `slack`
    pixels (at 100 dpi) each way (a label written over a tick, two lines of an axis label too close), and texts
    that a guide line strikes through where they have no background of their own to stop it ("a guide line" as
    the second of the pair). Each text is measured as matplotlib lays it out (rotation and alignment included)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import same_color

    from puzzles.diagrams.style import GUIDE

    with _rc():
        canvas = FigureCanvasAgg(fig)
        fig.set_dpi(100)
        renderer = canvas.get_renderer()
        texts = [t for ax in fig.axes for t in ax.texts if t.get_text().strip() and t.get_visible()]
        boxes = [t.get_window_extent(renderer) for t in texts]
        guides = [line.get_transform().transform(line.get_xydata()) for ax in fig.axes for line in ax.lines
                  if same_color(line.get_color(), GUIDE)]
    found = []
    for i, (a, box_a) in enumerate(zip(texts, boxes, strict=True)):
        for b, box_b in zip(texts[i + 1:], boxes[i + 1:], strict=True):
            wide = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            high = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if wide > slack and high > slack:
                found.append((a.get_text(), b.get_text()))
        if a.get_bbox_patch() is None and any(_crosses(points, box_a, slack) for points in guides):
            found.append((a.get_text(), "a guide line"))
    return found


def _crosses(points: object, box: object, slack: float) -> bool:
    """Does a straight guide line (its two end points, in pixels) pass through the inside of a text's box?"""
    (x0, y0), (x1, y1) = points[0], points[-1]
    if abs(y1 - y0) < 1e-6:  # across
        return box.y0 + slack < y0 < box.y1 - slack and min(x0, x1) < box.x1 - slack and max(x0, x1) > box.x0 + slack
    if abs(x1 - x0) < 1e-6:  # down
        return box.x0 + slack < x0 < box.x1 - slack and min(y0, y1) < box.y1 - slack and max(y0, y1) > box.y0 + slack
    return False


def save(fig: Figure, path: Path | str, title: str | None = None) -> None:
    """Write a diagram as SVG (or any format by the suffix) with deterministic bytes."""
    path = Path(path)
    with _rc():
        if path.suffix == ".svg":
            fig.savefig(path, format="svg", metadata={**METADATA_KEYS, "Title": title} if title else METADATA_KEYS)
        else:
            fig.savefig(path, dpi=110)


def save_png(fig: Figure, path: Path | str, source: str) -> None:
    """Write a diagram as a palette PNG at PNG_SCALE times its shown size, small and without a date;
    `source` (what it was drawn from) goes into its metadata."""
    from PIL import Image, PngImagePlugin

    buffer = io.BytesIO()
    with _rc():
        fig.savefig(buffer, format="png", dpi=SHOW_DPI * PNG_SCALE, metadata={"Software": None})
    image = Image.open(buffer).convert("RGB")
    # Median cut without dithering: deterministic, flat fills stay flat.
    image = image.quantize(colors=PNG_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    info.add_text(SOURCE_KEY, source)
    info.add_text("Software", f"puzzles.diagrams (matplotlib {matplotlib.__version__})")
    image.save(path, format="png", optimize=True, pnginfo=info, dpi=(SHOW_DPI * PNG_SCALE,) * 2)


def png_source(path: Path | str) -> str | None:
    """What a diagram PNG says it was drawn from (its `Source` text chunk)."""
    from PIL import Image

    with Image.open(path) as image:
        return image.text.get(SOURCE_KEY)


def write_all(directory: Path | str = ASSETS, png: bool = True, force: bool = False) -> list[Path]:
    """Write `<directory>/<puzzle id>.svg` (and `.png`, the one notebooks embed) for every puzzle; return
    the files written. A PNG whose `Source` names the SVG just drawn is kept (rasterizing is most of the
    time, and its bytes would not change); `force` redraws it too (after a change to `save_png` itself)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for puzzle in all_puzzles():
        path = directory / f"{puzzle.id}.svg"
        fig = draw(puzzle)
        save(fig, path, title=f"Puzzle {puzzle.number}: {puzzle.title}")
        written.append(path)
        picture, source = path.with_suffix(".png"), f"{path.name} {svg_digest(path.read_bytes())}"
        if png and (force or not picture.exists() or png_source(picture) != source):
            save_png(fig, picture, source)
            written.append(picture)
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m puzzles.diagrams [DIRECTORY] [--force]`: write every diagram (default: assets/); also what
    `python -m puzzles diagrams` runs."""
    parser = argparse.ArgumentParser(prog="python -m puzzles.diagrams", description="redraw the puzzles' diagrams")
    parser.add_argument("directory", nargs="?", type=Path, default=ASSETS, help="where to write (default: assets/)")
    parser.add_argument("--force", action="store_true",
                        help="also redraw the PNGs whose SVG did not change (after a change to how PNGs are drawn)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for path in write_all(args.directory, force=args.force):
        print(f"wrote {path}")
    return 0

