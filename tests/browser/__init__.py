"""Drive JupyterLab in headless Chromium for the browser test, with nothing but the venv.

The Chrome DevTools protocol over `websocket-client` (a jupyter_server dependency) does what
Selenium would, without chromedriver or a new package. Every process started here runs in its
own session and is killed by its process-group id when the test ends; everything listens on
127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    """SIGTERM the process group we started (the server's kernels, the browser's renderers), then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)  # start_new_session=True made proc.pid the group id
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


class Lab:
    """A JupyterLab server on 127.0.0.1 with a token, its state in a temporary directory."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root, self.port = root, free_port()
        self.token = os.urandom(16).hex()
        self.log = scratch / "jupyter.log"
        env = dict(os.environ)
        for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                         ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                         ("IPYTHONDIR", "ipython")):
            env[var] = str(scratch / sub)
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
               "--LabApp.expose_app_in_browser=True",  # window.jupyterapp, as JupyterLab's own UI tests use
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly"]  # no PyPI queries
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI containers run as root
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base}/{path}?token={self.token}"

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited:\n{self.log.read_text()[-3000:]}")
            try:
                get(self.url("api/status"), timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        raise TimeoutError(f"jupyter lab did not answer in {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:  # the graceful way shuts its kernels down too
                req = urllib.request.Request(self.url("api/shutdown"), method="POST")
                urllib.request.urlopen(req, timeout=5).close()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - fall through to the signals
                pass
        stop(self.proc)


class Chromium:
    """Headless Debian Chromium with the DevTools protocol on a port it picks (127.0.0.1)."""

    def __init__(self, binary: str, scratch: Path, width: int = 1800, height: int = 1400) -> None:
        self.profile = scratch / "chromium-profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        self.log = scratch / "chromium.log"
        cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
               f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
               "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def page_socket(self, timeout: float) -> str:
        """The DevTools websocket of the first page, once Chromium has written its port."""
        deadline = time.monotonic() + timeout
        marker = self.profile / "DevToolsActivePort"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited:\n{self.log.read_text()[-3000:]}")
            if marker.exists() and marker.read_text().strip():
                port = int(marker.read_text().split()[0])
                try:
                    pages = json.loads(get(f"http://127.0.0.1:{port}/json/list"))
                    for page in pages:
                        if page.get("type") == "page":
                            return page["webSocketDebuggerUrl"]
                except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                    pass
            time.sleep(0.2)
        raise TimeoutError(f"chromium gave no DevTools page in {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def close(self) -> None:
        stop(self.proc, grace=3.0)


class CDP:
    """A minimal Chrome DevTools protocol client: call a method, evaluate JavaScript, wait."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        import websocket  # websocket-client

        # suppress_origin: Chromium refuses DevTools sockets from origins it was not told about.
        self.ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == my_id:  # events in between are not needed here
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in result:
            raise RuntimeError(f"javascript failed: {result['exceptionDetails'].get('text')} in {expression[:200]}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"waited {timeout:.0f} s for {what}")

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        import base64

        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        return base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - the browser may already be gone
            pass
