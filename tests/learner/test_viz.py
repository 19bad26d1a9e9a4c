"""The memory picture: exact pixels at known cells, the numbers, the files, the widget, the terminal."""

from __future__ import annotations

import base64
import io
import time
from dataclasses import replace

import numpy as np
import p02_constant_add_block as p02
import p04_outer_vector_add_block as p04
import pytest
from commands import run_python
from PIL import Image

from puzzles import test, viz
from puzzles.course import catalog
from puzzles.viz import jupyter as viz_jupyter

P2 = catalog.get(2)
P2_SIZE = [{"N0": 200, "B0": 32}]

NO_MASK_2D = """
@triton.jit
def add_vec_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None])
"""

SHIFTED = """
@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = (tl.program_id(0) + 1) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)
    tl.store(z_ptr + offsets, x + 10.0)
"""


@pytest.fixture(scope="module")
def good():
    result = test(P2.reference(), P2.spec, quiet=True, sizes=P2_SIZE)
    assert result.passed
    return result


@pytest.fixture(scope="module")
def no_mask():
    result = test(p02.add_mask2_kernel_no_mask, P2.spec, quiet=True, sizes=P2_SIZE)
    assert result.first_failure.status == "out of bounds"
    return result


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def color_at(img: np.ndarray, lay: viz.Layout, tensor: str, element: int) -> tuple[int, int, int]:
    x, y = lay.cell_pixel(tensor, element)
    return tuple(int(v) for v in img[y, x])


def dot_at(img: np.ndarray, lay: viz.Layout, tensor: str, element: int) -> tuple[int, int, int]:
    x0, y0, x1, _ = lay.cell_box(tensor, element)
    half = (x1 - x0) // 2
    return tuple(int(v) for v in img[y0 + half, x0 + half])


# -- the numbers ----------------------------------------------------------------------------------


def test_stats_of_the_reference_match_a_hand_count(good):
    st = viz.stats(good)
    # 7 programs of 32 lanes; one load and one store each; the last has 200 - 192 = 8 active lanes.
    assert (st.total.loads, st.total.stores, st.total.atomics) == (7, 7, 0)
    assert st.total.bytes_loaded == 200 * 4 and st.total.bytes_stored == 200 * 4
    assert st.min_bytes == 2 * 200 * 4 and st.ratio == 1.0
    assert (st.total.masked, st.total.lanes) == (2 * 24, 7 * 2 * 32)
    last = st.per_program[(6, 0, 0)]
    assert (last.loads, last.stores, last.bytes_loaded, last.bytes_stored) == (1, 1, 8 * 4, 8 * 4)
    assert (last.masked, last.lanes) == (48, 64)
    assert st.per_program[(0, 0, 0)].masked == 0


def test_stats_count_re_reads_of_the_outer_add():
    p = catalog.get(4)
    result = test(p.reference(), p.spec, quiet=True, sizes=[{"N0": 100, "N1": 90, "B0": 32, "B1": 32}])
    st = viz.stats(result)
    # Grid 4 × 3: x is read once per row of tiles (3 times), y once per column of tiles (4 times).
    assert st.total.read == {"x": 3 * 100 * 4, "y": 4 * 90 * 4}
    assert st.total.written == {"z": 90 * 100 * 4}
    assert st.min_bytes == (100 + 90 + 90 * 100) * 4
    assert (st.total.loads, st.total.stores) == (24, 12)
    assert "fewest bytes the puzzle needs: 36,760" in viz.stats_table(result)


def test_out_of_bounds_lanes_join_their_op(no_mask):
    ops = viz.program_ops(no_mask.first_failure.trace)
    load, store = ops[(6, 0, 0)]
    assert (load.op, store.op) == ("load", "store")
    assert load.elements["x"].tolist() == list(range(192, 200))
    assert load.oob["x"].tolist() == list(range(200, 224))
    assert store.oob["z"].tolist() == list(range(200, 224))
    st = viz.stats(no_mask)
    assert st.total.out_of_bounds == 48 and st.total.bytes_moved == 1600


def test_an_op_entirely_out_of_bounds_is_an_op_of_its_own(load_kernel):
    kernel = load_kernel(SHIFTED, "add_mask2_kernel")
    result = test(kernel, P2.spec, quiet=True, sizes=P2_SIZE)
    ops = viz.program_ops(result.first_failure.trace)
    last = ops[(6, 0, 0)]  # offsets 224 … 255: nothing in bounds
    assert [op.op for op in last] == ["load", "store"]
    assert [op.elements for op in last] == [{}, {}]
    assert last[0].oob["x"].tolist() == list(range(224, 256))
    png = viz.render_png(result, program=(6, 0, 0))
    lay = viz.layout(result)
    assert color_at(pixels(png), lay, "x", 230) == viz.OUT_OF_BOUNDS


# -- the pictures: exact colours at the cells the layout names ---------------------------------------


def test_one_program_shows_its_loads_and_stores(good):
    lay = viz.layout(good)
    img = pixels(viz.render_png(good, program=(6, 0, 0)))
    assert img.shape == (lay.height, lay.width, 3)
    for e in range(192, 200):
        assert color_at(img, lay, "x", e) == viz.LOAD
        assert color_at(img, lay, "z", e) == viz.STORE
    for e in (0, 100, 191):  # other programs' elements, greyed
        assert color_at(img, lay, "x", e) == viz.OTHERS
        assert color_at(img, lay, "z", e) == viz.OTHERS
    assert color_at(img, lay, "x", 200) == viz.WHITE  # past the end: nothing there
    first = pixels(viz.render_png(good, program=0))
    assert color_at(first, lay, "x", 31) == viz.LOAD and color_at(first, lay, "x", 32) == viz.OTHERS
    assert color_at(first, lay, "z", 0) == viz.STORE


def test_cells_are_laid_out_in_rows_of_64(good):
    lay = viz.layout(good)
    x0, y0, x1, y1 = lay.cell_box("x", 0)
    assert (x1 - x0, y1 - y0) == (lay.cell - lay.gap, lay.cell - lay.gap)
    assert lay.cell_box("x", 1)[0] == x0 + lay.cell
    assert lay.cell_box("x", 64)[:2] == (x0, y0 + lay.cell)
    assert lay.cell_box("z", 0)[1] > lay.cell_box("x", 199)[1]  # z is drawn under x


def test_stepping_fades_earlier_ops(good):
    lay = viz.layout(good)
    step1 = pixels(viz.render_png(good, program=6, op_index=0))
    assert color_at(step1, lay, "x", 195) == viz.LOAD
    assert color_at(step1, lay, "z", 195) == viz.OTHERS  # the store has not happened yet
    step2 = pixels(viz.render_png(good, program=6, op_index=1))
    assert color_at(step2, lay, "x", 195) == viz.fade(viz.LOAD)
    assert color_at(step2, lay, "z", 195) == viz.STORE
    with pytest.raises(ValueError):
        viz.render_png(good, program=6, op_index=2)


def test_out_of_bounds_lanes_are_red_past_the_end(no_mask):
    lay = viz.layout(no_mask)
    img = pixels(viz.render_png(no_mask))  # defaults to the offending program, (6, 0, 0)
    for e in range(200, 224):
        assert color_at(img, lay, "x", e) == viz.OUT_OF_BOUNDS
        assert color_at(img, lay, "z", e) == viz.OUT_OF_BOUNDS
    assert color_at(img, lay, "x", 199) == viz.LOAD
    assert color_at(img, lay, "x", 224) == viz.WHITE
    over = pixels(viz.render_png(no_mask, view="overview"))
    assert color_at(over, lay, "z", 210) == viz.OUT_OF_BOUNDS


def test_out_of_bounds_rows_are_drawn_under_a_2d_tensor(load_kernel):
    kernel = load_kernel(NO_MASK_2D, "add_vec_block_kernel")
    p = catalog.get(4)
    result = test(kernel, p.spec, quiet=True, sizes=[{"N0": 100, "N1": 90, "B0": 32, "B1": 32}])
    assert result.first_failure.status == "out of bounds"
    lay = viz.layout(result)
    box = lay.boxes["z"]
    assert box.bottom > 0  # room kept under the grid
    bottom_of_grid = box.y + box.rows * lay.cell
    img = pixels(viz.render_png(result, view="overview"))
    past = 90 * 100 + 5  # row 90, column 5: just under the last row
    assert lay.cell_box("z", past)[1] >= bottom_of_grid
    assert color_at(img, lay, "z", past) == viz.OUT_OF_BOUNDS
    assert (img == viz.OUT_OF_BOUNDS).all(axis=2).sum() > 100


def test_overview_colours_each_element_by_its_program(good):
    lay = viz.layout(good)
    img = pixels(viz.render_png(good, view="overview"))
    for e, program in ((0, 0), (31, 0), (32, 1), (100, 3), (199, 6)):
        assert color_at(img, lay, "x", e) == viz.program_color(program)


def test_overview_marks_elements_several_programs_read():
    p = catalog.get(4)
    result = test(p.reference(), p.spec, quiet=True, sizes=[{"N0": 64, "N1": 64, "B0": 32, "B1": 32}])
    lay = viz.layout(result)
    img = pixels(viz.render_png(result, view="overview"))
    assert lay.cell - lay.gap >= 4
    assert dot_at(img, lay, "x", 0) == viz.SHARED_DOT  # x[0] is read by programs (0, 0) and (0, 1)
    assert dot_at(img, lay, "z", 5) == viz.program_color(0)  # z is written once: no dot
    assert color_at(img, lay, "z", 64 * 40 + 40) == viz.program_color(3)  # program (1, 1), launched 4th


def test_launch_order_colours_programs_axis_0_first():
    p = catalog.get(13)
    result = test(p.reference(), p.spec, quiet=True, sizes=[p.canonical])
    lay = viz.layout(result)
    img = pixels(viz.render_png(result, view="order"))
    words = result.outcomes[0].trace.tensors["z"][0][1]  # z is N0 × N1/8; grid (N0/B0, N1/B1)
    n = 4
    assert color_at(img, lay, "z", 0) == viz.order_color(0, n)  # program (0, 0): launched first
    assert color_at(img, lay, "z", 4 * words) == viz.order_color(1, n)  # row 4: program (1, 0)
    assert color_at(img, lay, "z", 4) == viz.order_color(2, n)  # word 4: program (0, 1)


ROW_MAJOR_ORDER = """
@triton.jit
def grouped_order_kernel(z_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tn = tl.cdiv(N, BN)
    tl.store(z_ptr + 2 * pid, pid // tn)
    tl.store(z_ptr + 2 * pid + 1, pid % tn)
"""


def tile_color(img: np.ndarray, lay: viz.Layout, r: int, c: int) -> tuple[int, int, int]:
    return color_at(img, lay, viz.TILES, int(lay.boxes[viz.TILES].tile_elements(r, c)[0]))


def test_puzzle_16_launch_order_is_a_map_of_cs_tiles_in_the_order_programs_take_them(load_kernel):
    p = catalog.get(16)
    size = {"M": 64, "N": 48, "BM": 16, "BN": 16, "GROUP_M": 2}  # 4 × 3 tiles, bands of 2 tile rows
    result = test(p.reference(), p.spec, quiet=True, sizes=[size])
    model = viz.digest(result, puzzle=p)
    assert model.tiles.tolist() == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]  # down each band's columns
    lay = viz.layout(result, puzzle=p)
    img = pixels(viz.render_png(result, view="order", puzzle=p))
    n = 12
    for (r, c), pid in np.ndenumerate(model.tiles):
        assert tile_color(img, lay, r, c) == viz.order_color(int(pid), n)
    # One program's view marks the tile it takes; a row-major kernel gives the row-major map.
    img = pixels(viz.render_png(model, view="program", program=3))
    assert tile_color(img, lay, 1, 1) == viz.STORE and tile_color(img, lay, 0, 0) == viz.OTHERS
    row_major = test(load_kernel(ROW_MAJOR_ORDER, "grouped_order_kernel"), p.spec, quiet=True, sizes=[size])
    assert viz.digest(row_major, 0, puzzle=p).tiles.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    # The map comes from the puzzle's TileOrder record, not from its number or its sizes: without the
    # record there is no map; any puzzle that carries it gets one.
    assert viz.digest(result).tiles is None
    assert viz.digest(result, puzzle=replace(P2, tile_order=p.tile_order)).tiles is not None
    assert viz.digest(test(P2.reference(), P2.spec, quiet=True, sizes=P2_SIZE), puzzle=P2).tiles is None


def test_wrong_outputs_get_a_dark_dot():
    p = catalog.get(4)
    result = test(p04.add_vec_block_kernel_swapped, p.spec, quiet=True, sizes=[{"N0": 64, "N1": 64, "B0": 32,
                                                                                   "B1": 32}])
    failure = result.first_failure
    wrong_index = int(np.flatnonzero(np.asarray(failure.status_map).reshape(-1) == 1)[0])
    lay = viz.layout(result)
    img = pixels(viz.render_png(result, view="overview"))
    assert dot_at(img, lay, "z", wrong_index) == viz.WRONG_DOT


def test_rendering_is_fast():
    for p in map(catalog.get, (4, 6, 10, 11, 12)):  # the largest traces and tensors
        result = test(p.reference(), p.spec, quiet=True, sizes=[p.canonical])
        viz.render_png(result)  # warm the font cache
        started = time.perf_counter()
        for view in viz.VIEWS:
            png = viz.render_png(result, view=view)
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert (time.perf_counter() - started) / len(viz.VIEWS) < 0.5, p.id


def test_render_figure_is_the_same_picture(good):
    fig = viz.render_figure(good, program=6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=viz.DPI)
    assert np.array_equal(pixels(buf.getvalue()), pixels(viz.render_png(good, program=6)))


# -- files, terminal, notebook ----------------------------------------------------------------------


def test_save_pngs_writes_overview_order_and_programs(no_mask, tmp_path):
    paths = viz.save_pngs(no_mask, tmp_path / "02")
    names = [p.name for p in paths]
    assert names[:3] == ["overview.png", "launch-order.png", "program-6-0-0.png"]  # the offender first
    assert len(names) == 2 + 7 and len(set(names)) == len(names)
    for path in paths:
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_nothing_to_draw_without_a_trace(tmp_path, capsys):
    result = test(p02.add_mask2_kernel_wrong_signature, P2.spec, quiet=True)
    assert result.error is not None
    assert viz.save_pngs(result, tmp_path) == []
    viz.show(result)  # must not raise
    assert "no memory accesses to draw" in capsys.readouterr().out


def test_show_in_a_terminal_prints_the_table(capsys):
    test(p02.add_mask2_kernel_no_mask, P2.spec, quiet=True, sizes=P2_SIZE, viz=True)  # test() calls show()
    out = capsys.readouterr().out
    assert "(6, 0, 0)" in out and "fewest bytes the puzzle needs: 1,600" in out
    assert "offending: load of x[200] out of bounds" in out


@pytest.fixture
def jupyter(monkeypatch):
    """Pretend to run in a Jupyter kernel; collect what show() displays."""
    import IPython.display

    shown = []
    monkeypatch.setattr(viz_jupyter, "frontend", lambda: "kernel")
    monkeypatch.setattr(IPython.display, "display", lambda obj, **_: shown.append(obj))
    return shown


def test_show_in_jupyter_displays_the_widget_with_its_png(no_mask, jupyter):
    pytest.importorskip("ipywidgets")
    viz.show(no_mask)
    (shown,) = jupyter
    bundle = shown._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"]) == viz.render_png(no_mask)
    assert "fewest bytes" in bundle["text/plain"]


def test_show_in_jupyter_falls_back_to_the_png(no_mask, jupyter, monkeypatch):
    from IPython.display import Image as IPythonImage

    monkeypatch.setenv("PUZZLES_VIZ", "static")
    viz.show(no_mask)
    monkeypatch.delenv("PUZZLES_VIZ")

    def no_widgets(*_, **__):
        raise ImportError("No module named 'ipywidgets'")

    monkeypatch.setattr(viz_jupyter, "widget", no_widgets)
    viz.show(no_mask)
    assert len(jupyter) == 2 and all(isinstance(s, IPythonImage) for s in jupyter)
    assert all(s.data == viz.render_png(no_mask) for s in jupyter)


def test_widget_steps_and_switches_views():
    pytest.importorskip("ipywidgets")
    no_mask = test(p02.add_mask2_kernel_no_mask, P2.spec, quiet=True)  # every size: the size menu
    assert no_mask.outcomes[0].sizes == P2_SIZE[0]
    box = viz.widget(no_mask)
    (view, size), (prog, label), (step, _, step_label), _, image = (
        box.children[0].children, box.children[1].children, box.children[2].children, box.children[3],
        box.children[4].children[0])
    # Never shrunk to the cell: the stats text beside the tensors stays at its ~12 px.
    assert image.layout.max_width == "none" and box.children[4].layout.overflow == "auto"
    assert viz.STATS_PT * viz.DPI / 72 >= 11
    assert prog.value == 6 and label.value.startswith("(6, 0, 0)") and step.max == 2
    first = image.value
    assert first == viz.render_png(no_mask)
    step.value = 1
    assert step_label.value == "op 1 of 2" and image.value == viz.render_png(no_mask, program=6, op_index=0)
    view.value = "overview"
    assert prog.layout.visibility == "hidden" and image.value == viz.render_png(no_mask, view="overview")
    view.value = "program"
    size.value = 1  # another size: the slider follows its grid
    outcome = no_mask.outcomes[1]
    assert prog.max == int(np.prod(outcome.trace.grid)) - 1
    bundle = viz_jupyter.WidgetWithPicture(box, image.value, "text")._repr_mimebundle_()
    assert {"application/vnd.jupyter.widget-view+json", "image/png", "text/plain"} <= set(bundle)


def test_widget_shows_the_puzzles_launch_order_note_under_the_order_view(no_mask):
    pytest.importorskip("ipywidgets")
    puzzle = replace(P2, launch_order_note="Programs that run together share the cache.")
    box = viz.widget(no_mask, puzzle=puzzle)
    view, note = box.children[0].children[0], box.children[3]
    assert note.value == ""
    view.value = "order"
    assert "Programs that run together share the cache." in note.value
    plain = viz.widget(no_mask, puzzle=P2)  # no note: nothing under the view
    plain.children[0].children[0].value = "order"
    assert plain.children[3].value == ""
    # The quantization track (13-18) explains its launch orders; the classic puzzles say nothing.
    assert all(catalog.get(n).launch_order_note for n in range(13, 19))
    assert not any(catalog.get(n).launch_order_note for n in range(1, 13))


LAUNCH = """
import urllib.request
import puzzles, torch
from puzzles import viz
from puzzles.course import catalog
x, z = torch.arange(40, dtype=torch.float32), torch.empty(40)
url = viz.launch_triton_viz(catalog.get(2).reference(), x, z, 40, grid=(2,), port=0, B0=32)
assert url is not None and url.startswith("http://127.0.0.1:"), url
assert torch.equal(z, x + 10)
with urllib.request.urlopen(url, timeout=10) as response:
    assert response.status == 200 and b"Triton" in response.read()
viz.stop_triton_viz()
print("served", url)
"""


def test_launch_triton_viz_serves_on_localhost_without_blocking():
    # In a child process: importing triton_viz patches Triton's interpreter for the whole process.
    from puzzles.running import compat

    # triton 3.8+: triton-viz does not import (tests/learner/test_colab.py checks the message)
    if compat.triton_viz_note():
        pytest.skip(compat.triton_viz_note())
    pytest.importorskip("triton_viz")
    done = run_python(["-c", LAUNCH], ".", timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "served http://127.0.0.1:" in done.stdout
    assert "CDN" in done.stdout and "cloudflare" not in done.stdout.lower()


def test_an_op_entirely_out_of_bounds_keeps_its_place_in_the_program(load_kernel):
    # Program 1 loads only past the end: that op is recorded where it ran, between the others.
    kernel = load_kernel("""
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    a = tl.load(x_ptr + offsets)
    b = tl.load(x_ptr + offsets + 4 * B0)
    tl.store(z_ptr + offsets, a + 10.0)
""", "add_kernel")
    from puzzles import test
    from puzzles.course import catalog

    result = test(kernel, catalog.get(1).spec, quiet=True)
    outcome = result.first_failure
    ops = viz.program_ops(outcome.trace)[(0, 0, 0)]
    assert [op.op for op in ops] == ["load", "load", "store"]
    assert ops[1].oob["x"].min() == 4 * outcome.sizes["B0"]


def test_fewest_bytes_of_a_strided_input_count_its_view_not_the_gaps_of_its_storage():
    # Puzzle 19's x is a crop: its storage holds other bytes between the pixels, which no kernel needs.
    from puzzles import test
    from puzzles.course import catalog

    p = catalog.get(19)
    result = test(p.reference(), p.spec, quiet=True)
    st = viz.stats(result, puzzle=p)
    n0, n1 = p.sizes[0]["N0"], p.sizes[0]["N1"]
    assert st.tensor_bytes == {"x": n1 * n0 * 3, "z": n1 * n0 * 4}
    assert st.ratio == pytest.approx(1.0)  # a correct kernel moves exactly the fewest bytes
    # The view comes from the puzzle's strided_inputs: without the puzzle, the whole storage counts.
    storage = viz.stats(result)
    assert storage.tensor_bytes["x"] > n1 * n0 * 3 and storage.ratio < 1.0
