"""triton-viz's own 3-D viewer (optional), served from a background thread.

triton-viz 3.0 does not import with triton 3.8 and later (`puzzles.running.compat.triton_viz_note`); then
`launch_triton_viz` says so and returns None. On Colab the server runs on the runtime's localhost,
which the learner's browser cannot reach: the viewer is shown through Colab's own port proxy
(`google.colab.output.serve_kernel_port_as_iframe`, or `..._as_window` for a new tab).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from puzzles.running import compat

_servers: dict[int, Any] = {}


def colab_output() -> Any | None:
    """`google.colab.output` when this kernel runs on Colab, else None."""
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import output
    except ImportError:
        return None
    return output


def show_on_colab(port: int, window: bool = False, height: int = 720) -> bool:
    """Show the server on this kernel's `port` through Colab's port proxy; False when not on Colab."""
    output = colab_output()
    if output is None:
        return False
    if window:
        output.serve_kernel_port_as_window(port)
    else:
        output.serve_kernel_port_as_iframe(port, height=height)
    return True


def launch_triton_viz(kernel: Any, *args: Any, grid: tuple[int, ...] = (1,), port: int = 5001,
                      window: bool = False, **kwargs: Any) -> str | None:
    """Run `kernel[grid](*args, **kwargs)` under triton-viz and serve its viewer on 127.0.0.1:port.

    The server runs in a background thread (the notebook stays usable) and never opens
    triton-viz's Cloudflare tunnel. Its page loads three.js from a CDN (esm.sh), so it renders
    only with internet access; `render_png`/`show` work offline. On Colab the viewer opens through
    Colab's port proxy, in the cell (or in a new tab with window=True). Returns the URL, or None
    with a message when triton-viz is missing or cannot run with this Triton, or the run fails.
    port=0 picks a free port.
    """
    note = compat.triton_viz_note()
    if note:
        print(f"the 3-D viewer is not available: {note}.")
        return None
    try:
        import logging

        import triton_viz
        from triton_viz.visualizer import interface
        from werkzeug.serving import make_server
    except Exception as err:  # noqa: BLE001 - optional extra
        print(f"triton-viz is not available ({type(err).__name__}: {err}); "
              "install it with: pip install triton-viz==3.0")
        return None
    try:
        triton_viz.clear()  # show this launch only
        traced = triton_viz.trace("tracer")(kernel)
        traced[tuple(grid)](*args, **kwargs)
        stop_triton_viz(port)
        # werkzeug's dev server, as triton_viz.launch(share=False) uses, but bound to 127.0.0.1 and
        # served from a daemon thread: launch() itself would block the notebook.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = make_server("127.0.0.1", port, interface.app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, name="triton-viz", daemon=True)
        thread.start()
        actual = server.server_port
        _servers[actual] = server
        interface._server_state.set_local_port(actual)
    except Exception as err:  # noqa: BLE001 - the learner's kernel or a busy port
        print(f"could not start triton-viz: {type(err).__name__}: {err}")
        return None
    url = f"http://127.0.0.1:{actual}/"
    if show_on_colab(actual, window=window):
        print(f"triton-viz is serving port {actual} of this Colab runtime, shown through Colab's port proxy "
              f"(the runtime's {url} is not reachable from your browser); stop it with "
              f"puzzles.viz.stop_triton_viz({actual}).")
        return url
    print(f"triton-viz is serving {url} (stop it with puzzles.viz.stop_triton_viz({actual})).\n"
          "Its page loads three.js from a CDN (esm.sh): it renders only with internet access. "
          "Offline, use puzzles.viz.show(result) or render_png(result).")
    return url


def stop_triton_viz(port: int | None = None) -> None:
    """Stop the viewer started by `launch_triton_viz` on this port (every one when None)."""
    for p in [port] if port is not None else list(_servers):
        server = _servers.pop(p, None)
        if server is not None:
            server.shutdown()
            server.server_close()
