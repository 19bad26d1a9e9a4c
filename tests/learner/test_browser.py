"""In a real browser: JupyterLab runs a notebook whose grading cell has viz=True, and the widget shows.

Headless Debian Chromium is driven over the DevTools protocol (no chromedriver, no Selenium).
Skipped where chromium is missing: scripts/install-browser.sh installs it.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from puzzles import diagrams, viz
from puzzles.course import catalog

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser

NOTEBOOK_CELLS = [
    "import puzzles\nfrom puzzles import get, test\nimport triton\nimport triton.language as tl",
    """@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + 10.0, mask=mask)""",
    "result = test(add_mask2_kernel, get(2).spec, viz=True)",
]

WIDGET_IMG = "document.querySelector('.puzzles-viz img')"
BUDGET = 110  # seconds for everything; each wait below has its own, smaller, limit


def _write_notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in NOTEBOOK_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _count(png: bytes, color: tuple[int, int, int]) -> int:
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    return int((img == np.array(color, np.uint8)).all(axis=2).sum())


def _write_diagram_notebook(path: Path) -> int:
    """One notebook holding the diagram cell of every committed puzzle notebook, as committed."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for p in catalog.all_puzzles():
        book = nbformat.read(ROOT / "notebooks" / f"{p.id}.ipynb", as_version=4)
        cell = next(c for c in book.cells if c.get("id") == f"p{p.number}-diagram")
        nb.cells.append(nbformat.v4.new_markdown_cell(cell.source))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return len(nb.cells)


def _render_every_cell(settings: Path) -> None:
    """JupyterLab 4 renders only the cells in view by default; the diagram test wants them all."""
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True, exist_ok=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))


@pytest.fixture(scope="module")
def lab_and_browser(tmp_path_factory):
    """One JupyterLab and one browser for the module's tests (each opens its own notebook): a start of each is
    about 10 s of CPU."""
    from browser import CDP, Chromium, Lab, find_chromium

    tmp_path = tmp_path_factory.mktemp("browser")

    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (scripts/install-browser.sh installs Debian's chromium)")
    pytest.importorskip("websocket", reason="websocket-client (a jupyter_server dependency) is missing")
    pytest.importorskip("jupyterlab", reason="jupyterlab is missing")
    root = tmp_path / "notebooks"
    root.mkdir()
    _write_notebook(root / "viz.ipynb")
    _write_diagram_notebook(root / "diagrams.ipynb")
    _render_every_cell(tmp_path / "settings")
    lab = browser = cdp = None
    try:
        lab = Lab(root, tmp_path)
        browser = Chromium(binary, tmp_path)
        lab.wait_ready(timeout=45)
        cdp = CDP(browser.page_socket(timeout=20), timeout=30)
        yield lab, cdp, tmp_path
    finally:
        if cdp is not None:
            cdp.close()
        if browser is not None:
            browser.close()
        if lab is not None:
            lab.close()


def test_the_viz_widget_renders_in_jupyterlab(lab_and_browser):
    lab, cdp, scratch = lab_and_browser
    started = time.monotonic()

    def left() -> float:
        return max(5.0, BUDGET - (time.monotonic() - started))

    cdp.call("Page.enable")
    cdp.call("Page.navigate", url=lab.url("lab/tree/viz.ipynb"))
    cdp.wait_for("!!(window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell'))",
                 min(60, left()), "JupyterLab to open the notebook")
    # A headless page has no focus, so JupyterLab has no "current" notebook until one is activated.
    panel = "[...window.jupyterapp.shell.widgets('main')].find(w => w.sessionContext)"
    cdp.wait_for(f"{panel}?.sessionContext?.session?.kernel?.status === 'idle'", min(60, left()),
                 "the notebook's kernel to start")
    cdp.evaluate(f"window.jupyterapp.shell.activateById({panel}.id); true")
    cdp.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells'); true")
    try:
        cdp.wait_for(f"!!({WIDGET_IMG} && {WIDGET_IMG}.complete && {WIDGET_IMG}.naturalWidth > 0)",
                     min(90, left()), "the viz widget's picture")
    except TimeoutError:
        outputs = cdp.evaluate("[...document.querySelectorAll('.jp-OutputArea-output')].map(e => e.innerText)"
                               ".join('\\n---\\n')")
        pytest.fail(f"no widget picture; the outputs were:\n{outputs}")

    text = cdp.evaluate("document.querySelector('.jp-Notebook').innerText")
    assert "Error displaying widget" not in text
    assert "Passed" in text  # the verdict above the picture
    controls = cdp.evaluate("[...document.querySelectorAll('.puzzles-viz .widget-slider, .puzzles-viz button')]"
                            ".length")
    assert controls >= 5  # two sliders, three view buttons

    # The picture as the browser painted it: the loaded and stored cells in the viz colours.
    shot = _widget_screenshot(cdp)
    (scratch / "widget.png").write_bytes(shot)
    _keep(shot, "widget.png")
    assert _count(shot, viz.LOAD) > 200 and _count(shot, viz.STORE) > 200, "no load/store cells on screen"

    # A round trip through the kernel: the overview button redraws the picture.
    before = cdp.evaluate(f"{WIDGET_IMG}.src")
    cdp.evaluate("[...document.querySelectorAll('.puzzles-viz button')]"
                 ".find(b => b.textContent.trim() === 'overview').click(); true")
    cdp.wait_for(f"{WIDGET_IMG}.src !== {before!r} && {WIDGET_IMG}.complete", min(30, left()),
                 "the overview picture")
    overview = _widget_screenshot(cdp)
    _keep(overview, "widget-overview.png")
    assert _count(overview, viz.program_color(1)) > 200, "no per-program colours in the overview"


def _widget_screenshot(cdp) -> bytes:
    rect = cdp.evaluate(f"(() => {{ const e = {WIDGET_IMG}; e.scrollIntoView(); const r = e.getBoundingClientRect();"
                        " return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width,"
                        " height: r.height}; })()")
    assert rect["width"] > 300 and rect["height"] > 200, rect
    return cdp.screenshot(clip=rect)


def _keep(png: bytes, name: str) -> None:
    """Keep screenshots for a human where VIZ_SCREENSHOTS names a directory (CI artifacts)."""
    where = os.environ.get("VIZ_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        (Path(where) / name).write_bytes(png)


def test_every_diagram_shows_as_an_image_at_its_natural_size(lab_and_browser):
    """The committed diagram cells, rendered by JupyterLab: each an <img> that loaded, drawn at twice
    the width it is shown at (sharp on high-density screens), shown at its natural 1x width."""
    lab, cdp, _ = lab_and_browser
    expected = len(catalog.all_puzzles())
    cdp.call("Page.enable")
    cdp.call("Page.navigate", url=lab.url("lab/tree/diagrams.ipynb"))
    images = "[...document.querySelectorAll('.jp-MarkdownOutput img')]"
    cdp.wait_for(f"{images}.length === {expected} && {images}.every(i => i.complete && i.naturalWidth > 0)",
                 60, f"{expected} diagrams to load")
    shown = cdp.evaluate(f"{images}.map(i => ({{alt: i.alt, natural: i.naturalWidth, "
                         "width: i.getBoundingClientRect().width, src: i.src.slice(0, 22)}))")
    width = diagrams.show_width()
    for p, image in zip(catalog.all_puzzles(), shown, strict=True):
        assert image["alt"].startswith(f"diagram of puzzle {p.number}"), image
        assert image["src"] == "data:image/png;base64,", image
        assert image["natural"] == width * diagrams.PNG_SCALE, image
        assert abs(image["width"] - width) < 1, image  # the window is wider than the diagram
