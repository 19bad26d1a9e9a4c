"""The diagrams in assets/ are the ones the catalog draws today.

A change of sizes, shapes or grid must be followed by `python -m puzzles diagrams` (or
`python -m puzzles.diagrams`); these tests say which files are out of date.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import matplotlib
import pytest

from puzzles import diagrams
from puzzles.course import catalog

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"
REGENERATE = "run `python -m puzzles diagrams` to redraw them"


def _pinned_matplotlib() -> str | None:
    """The pin for this Python (3.10 has one of its own)."""
    from puzzles.cli import requirements_file

    return requirements_file.pins(ROOT / "requirements.txt").get("matplotlib")


def _committed(name: str) -> bytes | None:
    path = ASSETS / name
    return path.read_bytes() if path.is_file() else None


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("assets")
    # SVGs alone: every check of this file on a regenerated diagram reads its SVG (PNGs: their own tests).
    return {path.name: path.read_bytes() for path in diagrams.write_all(out, png=False)}


def test_every_puzzle_has_its_diagram() -> None:
    missing = [f"{p.id}.svg" for p in catalog.all_puzzles() if not (ASSETS / f"{p.id}.svg").is_file()]
    assert not missing, f"no diagram in assets/ for {missing}: {REGENERATE}"


def test_no_diagram_without_a_puzzle() -> None:
    ids = {p.id for p in catalog.all_puzzles()}
    stray = sorted(path.name for path in [*ASSETS.glob("*.svg"), *ASSETS.glob("*.png")] if path.stem not in ids)
    assert not stray, f"assets/ has diagrams of no puzzle in the catalog: {stray}"


def test_committed_diagrams_match_the_catalog(regenerated: dict[str, bytes]) -> None:
    pinned = _pinned_matplotlib()
    if pinned and matplotlib.__version__ != pinned:
        pytest.skip(f"the committed SVGs are drawn with matplotlib {pinned}, this is {matplotlib.__version__}")
    stale = sorted(name for name, data in regenerated.items() if name.endswith(".svg") and _committed(name) != data)
    assert not stale, f"out of date in assets/: {stale}: {REGENERATE}"


def test_each_png_is_drawn_from_the_committed_svg_at_twice_its_shown_size() -> None:
    # Rasterised bytes may differ by a shade between machines; what the PNG was drawn from may not.
    from PIL import Image

    for p in catalog.all_puzzles():
        svg, png = ASSETS / f"{p.id}.svg", ASSETS / f"{p.id}.png"
        assert png.is_file(), f"no {png.name} in assets/: {REGENERATE}"
        assert diagrams.png_source(png) == f"{svg.name} {diagrams.svg_digest(svg.read_bytes())}", \
            f"{png.name} was not drawn from the committed {svg.name}: {REGENERATE}"
        with Image.open(png) as image:
            assert image.width == diagrams.show_width() * diagrams.PNG_SCALE, (png.name, image.size)
            assert image.mode == "P"  # a palette: the notebooks that embed it stay small
        assert png.stat().st_size < 90_000, png.name


def test_png_output_is_deterministic_here(regenerated: dict[str, bytes], tmp_path: Path) -> None:
    puzzle = catalog.get(19)
    again = tmp_path / f"{puzzle.id}.png"
    diagrams.save_png(diagrams.draw(puzzle), again, "x")
    twice = tmp_path / "twice.png"
    diagrams.save_png(diagrams.draw(puzzle), twice, "x")
    assert again.read_bytes() == twice.read_bytes()
    assert b"tIME" not in again.read_bytes() and b"Matplotlib v" not in again.read_bytes()


def test_output_is_deterministic_and_undated(regenerated: dict[str, bytes], tmp_path: Path) -> None:
    puzzle = catalog.all_puzzles()[-1]
    again = tmp_path / f"{puzzle.id}.svg"
    diagrams.save(diagrams.draw(puzzle), again, title=f"Puzzle {puzzle.number}: {puzzle.title}")
    data = regenerated[f"{puzzle.id}.svg"]
    assert again.read_bytes() == data
    assert b"<dc:date>" not in data and b"Matplotlib v" not in data


def test_every_diagram_fits_a_notebook(regenerated: dict[str, bytes]) -> None:
    """Notebook width (8 in = 576 pt), and not taller than a screen."""
    for name, data in regenerated.items():
        if not name.endswith(".svg"):
            continue
        m = re.search(rb'<svg[^>]* width="([\d.]+)pt" height="([\d.]+)pt"', data)
        assert m, name
        width, height = float(m.group(1)), float(m.group(2))
        assert width == diagrams.FIG_W * 72 and 144 < height < 11 * 72, (name, width, height)


def test_no_notebook_markdown_holds_an_svg_data_uri() -> None:
    # Colab renders no SVG data URI in markdown (googlecolab/colabtools#2092); PNG ones it does.
    import json

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                assert "data:image/svg" not in "".join(cell["source"]), path.name


@pytest.mark.parametrize(("number", "record", "none", "touched"), [
    (9, "register_tensor", None, lambda scene: any(i.role == "virtual" for i in scene.items)),
    (10, "sliding_window", None, lambda scene: any("one step of the program's loop" in n for n in scene.notes)),
    (16, "tile_order", None, lambda scene: scene.custom is not None),
    (17, "split_k", None, lambda scene: any("part s of K" in n for n in scene.axis_notes)),
    (19, "strided_inputs", {}, lambda scene: any("strided view" in n for n in scene.notes)),
    (21, "tensor_lists", None, lambda scene: scene.custom is not None),
])
def test_a_touch_follows_the_puzzles_record_not_its_number(number, record, none, touched) -> None:
    puzzle = catalog.get(number)
    assert touched(diagrams.scene_for(puzzle))
    assert touched(diagrams.scene_for(replace(puzzle, number=99)))  # renumbered: the same picture
    assert not touched(diagrams.scene_for(replace(puzzle, **{record: none})))  # without it: the generic one


def test_the_packing_legend_explains_every_packed_tensor() -> None:
    """Puzzle 12 packs its weights 8 to a word and its offsets (zero points) one per group of 8 weights, 8 groups
    to a word: the legend says how to find both, not the weights' alone."""
    from puzzles.diagrams.paint import draw_packing_inset

    class Recorder:
        texts: list[str] = []

        def rect(self, *args, **kwargs) -> None:
            pass

        def text(self, x, y, text, **kwargs) -> None:
            self.texts.append(text)

    painter = Recorder()
    draw_packing_inset(painter, diagrams.scene_for(catalog.get(12)), 0, 0, 12.0)
    legend = " ".join(painter.texts)
    assert "weight: word w holds the values at index 8w … 8w + 7 along MID, index 8w + n in nibble n" in legend, legend
    assert ("offset: one value per group of 8 along MID (group g = index // 8); nibble n of word w holds group "
            "g = 8w + n") in legend, legend
    assert "(index 64w + 8n … 64w + 8n + 7)" in legend, legend


@pytest.mark.parametrize("puzzle", catalog.all_puzzles(), ids=lambda p: p.id)
def test_no_label_overlaps_another_or_is_struck_through_by_a_guide(puzzle) -> None:
    """Text boxes as matplotlib lays them out (puzzle 14's "K = 64" was struck through by the guide line from
    qweight, beside the "32" tick and "blocks of BK = 32")."""
    assert diagrams.overlapping_labels(diagrams.draw(puzzle)) == []


def test_the_overlap_check_finds_overlaps() -> None:
    from matplotlib.figure import Figure

    from puzzles.diagrams.style import GUIDE

    fig = Figure(figsize=(4, 2))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 2)
    ax.text(1, 1, "K = 64")
    ax.text(1.2, 1.02, "32")
    ax.text(3, 0.5, "N = 8")
    ax.plot([2.5, 3.8], [0.55, 0.55], color=GUIDE)  # through "N = 8"
    assert diagrams.overlapping_labels(fig) == [("K = 64", "32"), ("N = 8", "a guide line")]


def test_tensors_stacked_above_read_in_the_signatures_order() -> None:
    """Puzzle 20's x and y over z: x on top, as in silu_mul_kernel(x_ptr, y_ptr, ...)."""
    from matplotlib.figure import Figure

    from puzzles.diagrams.generic import draw_generic

    scene = diagrams.scene_for(catalog.get(20))
    draw_generic(Figure(), scene)
    top = {item.name: item.fy for item in scene.items}
    assert top["x"] > top["y"] > top["z"], top


@pytest.mark.parametrize("number", [12, 13, 14, 18])
def test_the_packing_inset_names_no_size_as_an_index(number) -> None:
    """"nibble n: MID = 8w + n" used a size's name as an index; positions along a size are "index … along MID"."""
    from matplotlib.figure import Figure

    from puzzles.diagrams.paint import Painter, draw_packing_inset

    scene = diagrams.scene_for(catalog.get(number))
    fig = Figure()
    draw_packing_inset(Painter(fig, 1, 1), scene, 0, 0, 6.0)
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    sizes = set(catalog.get(number).canonical)
    assert not re.search(rf"\b({'|'.join(sizes)}) = \d+w", text), text
    assert "index" in text, text


def test_a_png_drawn_from_the_same_svg_is_kept_unless_forced(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(diagrams, "all_puzzles", lambda: [catalog.get(1)])
    svg, png = tmp_path / f"{catalog.get(1).id}.svg", tmp_path / f"{catalog.get(1).id}.png"
    assert diagrams.write_all(tmp_path) == [svg, png]
    assert diagrams.write_all(tmp_path) == [svg]  # the SVG is the same: its PNG is not rasterized again
    assert diagrams.write_all(tmp_path, force=True) == [svg, png]
    # A PNG drawn from another SVG (the shapes changed since) is redrawn.
    diagrams.save_png(diagrams.draw(catalog.get(2)), png, "an older drawing")
    assert diagrams.write_all(tmp_path) == [svg, png]
    assert diagrams.png_source(png) == f"{svg.name} {diagrams.svg_digest(svg.read_bytes())}"
