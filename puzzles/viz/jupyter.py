"""Jupyter: the interactive view (an ipywidgets widget), with a static picture for viewers that
cannot run widgets.
"""

from __future__ import annotations

import base64
import html
import os
import sys
from typing import TYPE_CHECKING, Any

from puzzles.viz.model import Model, digest, digest_to_draw, pick_outcome
from puzzles.viz.picture import render_png, stats_table
from puzzles.viz.style import Program

if TYPE_CHECKING:  # imported lazily at run time: the viz must not slow down `import puzzles`
    from puzzles.course.puzzle import Puzzle
    from puzzles.grading.result import TestResult


def frontend() -> str:
    """"kernel" inside Jupyter (Lab, Notebook, Colab, VS Code), "ipython" in a terminal IPython, else "terminal"."""
    try:
        from IPython import get_ipython
    except ImportError:
        return "terminal"
    shell = get_ipython()
    if shell is None:
        return "terminal"
    return "kernel" if getattr(shell, "kernel", None) is not None else "ipython"


class WidgetWithPicture:
    """A widget whose output also carries a PNG: JupyterLab draws the widget (its renderer ranks
    first); nbviewer, GitHub and frontends without widget support draw the picture instead."""

    def __init__(self, widget: Any, png: bytes, text: str) -> None:
        self.widget, self.png, self.text = widget, png, text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = dict(self.widget._repr_mimebundle_())
        data["image/png"] = base64.b64encode(self.png).decode("ascii")
        data["text/plain"] = self.text
        return data


def widget(result: TestResult, puzzle: Puzzle | None = None, program: Program | int | None = None) -> Any:
    """The interactive view: size, program, step through its ops, overview and launch order.

    The picture is the same PNG `render_png` makes, in an ipywidgets.Image (in the last child, a
    frame that scrolls sideways rather than shrink it). Under the launch-order view: the puzzle's
    `launch_order_note`, if it has one.
    """
    import ipywidgets as w

    traced = [i for i, o in enumerate(result.outcomes) if o.trace is not None]
    if not traced:
        raise ValueError("no memory trace to draw")
    models: dict[int, Model] = {}

    def model_for(i: int) -> Model:
        if i not in models:
            models[i] = digest_to_draw(result, i, puzzle=puzzle)
        return models[i]

    start = result.outcomes.index(pick_outcome(result))
    m = model_for(start)
    views = [("one program", "program"), ("overview", "overview"), ("launch order", "order")]
    view = w.ToggleButtons(options=views, value="program", style={"button_width": "110px"})
    size = w.Dropdown(options=[(f"{result.outcomes[i].size_text()} · {result.outcomes[i].status}", i) for i in traced],
                      value=start, description="size", layout=w.Layout(width="auto"))
    prog = w.IntSlider(min=0, max=max(0, len(m.programs) - 1), value=m.program_index(program),
                       description="program", continuous_update=False, layout=w.Layout(width="420px"))
    prog_label = w.Label()
    step = w.IntSlider(min=0, max=0, value=0, description="step", continuous_update=False,
                       layout=w.Layout(width="420px"))
    play = w.Play(min=0, max=0, interval=900, description="play the steps")
    w.jslink((play, "value"), (step, "value"))  # in the browser: playing needs no round trip
    step_label = w.Label()
    note = w.HTML()
    # flex-start: a column flexbox would stretch the picture to the cell width and blur it
    # Shown at its own pixel size, never shrunk to the cell's width (which made the stats text
    # tiny): a picture wider than the cell scrolls sideways in its frame.
    image = w.Image(format="png", layout=w.Layout(max_width="none", width="auto", height="auto",
                                                  align_self="flex-start", flex="0 0 auto"))
    frame = w.Box([image], layout=w.Layout(overflow="auto", width="100%"))
    hint = f"<i>{html.escape(puzzle.launch_order_note)}</i>" if puzzle is not None and puzzle.launch_order_note else ""
    busy = {"on": False}  # setting one control from another must not redraw twice

    def refresh(*_: Any) -> None:
        if busy["on"]:
            return
        busy["on"] = True
        try:
            model = model_for(size.value)
            prog.max = max(0, len(model.programs) - 1)
            program_id = model.programs[prog.value]
            n_ops = len(model.ops.get(program_id, []))
            step.max = play.max = n_ops
            if step.value > n_ops:
                step.value = 0
            prog_label.value = f"{program_id} of grid {tuple(model.trace.grid)}"
            step_label.value = "0 = all ops" if step.value == 0 else f"op {step.value} of {n_ops}"
            is_program = view.value == "program"
            for c in (prog, prog_label, step, play, step_label):
                c.layout.visibility = "visible" if is_program else "hidden"
            op_index = step.value - 1 if step.value else None
            image.value = render_png(model, program=prog.value, op_index=op_index, view=view.value)
            note.value = hint if view.value == "order" else ""
        except Exception as err:  # noqa: BLE001 - say it in the widget, not in a hidden log
            note.value = f"<b>could not draw:</b> {type(err).__name__}: {err}"
        finally:
            busy["on"] = False

    def new_size(change: Any) -> None:
        model = model_for(change["new"])
        busy["on"] = True
        try:
            prog.max = max(0, len(model.programs) - 1)
            prog.value = model.program_index(None)
            step.value = 0
        finally:
            busy["on"] = False
        refresh()

    size.observe(new_size, names="value")
    for control in (view, prog, step):
        control.observe(refresh, names="value")
    refresh()
    rows = [w.HBox([view, size]), w.HBox([prog, prog_label]), w.HBox([step, play, step_label]), note, frame]
    box = w.VBox(rows, layout=w.Layout(width="100%"))
    box.add_class("puzzles-viz")
    return box


def show(result: TestResult, puzzle: Puzzle | None = None) -> None:
    """Show the memory accesses under the verdict; never raises, never blocks.

    Jupyter with ipywidgets: the interactive view (its output also carries the PNG, for
    frontends without a widget renderer); Jupyter without ipywidgets: the static picture;
    a terminal: the stats table. PUZZLES_VIZ=static shows only the picture (a notebook to be
    read on nbviewer or GitHub, which draw no widget without saved widget state).
    """
    try:
        model = digest(result, puzzle=puzzle)
        if model is None:
            print(_no_trace_reason(result))
            return
        if frontend() != "kernel":
            print(stats_table(model))
            which = f", puzzle=puzzles.get({puzzle.number})" if puzzle is not None else ""
            print(f"(pictures: puzzles.viz.render_png(result, 'accesses.png'{which}) or "
                  f"save_pngs(result, 'viz/'{which}))")
            return
        from IPython.display import Image, display

        if os.environ.get("PUZZLES_VIZ", "").lower() == "static":
            display(Image(render_png(model)))
            return
        _enable_colab_widgets()
        try:
            view = widget(result, puzzle)
        except Exception:  # noqa: BLE001 - no ipywidgets (or a broken install): the picture alone
            display(Image(render_png(model)))
            return
        display(WidgetWithPicture(view, view.children[-1].children[0].value, stats_table(model)))
    except Exception as err:  # noqa: BLE001 - a drawing problem must not hide the verdict
        print(f"(could not draw the memory accesses: {type(err).__name__}: {err})")


def _enable_colab_widgets() -> None:
    """Colab draws ipywidgets 8 only through its custom widget manager; turn it on (a no-op elsewhere)."""
    if "google.colab" not in sys.modules:
        return
    try:
        from google.colab import output

        output.enable_custom_widget_manager()
    except Exception:  # noqa: BLE001 - an older Colab: the PNG in the same output still shows
        pass


def _no_trace_reason(result: Any) -> str:
    if getattr(result, "error", None) is not None:
        return "no memory accesses to draw: the kernel did not run (see the verdict above)"
    return ("no memory accesses to draw: they are recorded only when kernels run in Triton's interpreter "
            "(TRITON_INTERPRET=1, the default without a GPU)")
