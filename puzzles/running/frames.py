"""Length-prefixed pickled frames over a pipe, between the grader and its child processes.
"""

from __future__ import annotations

import os
import pickle
import select
import time
from typing import Any

from puzzles.running.errors import timeout_message


def send_frame(fd: int, payload: Any) -> None:
    """Write one pickled message, length first (FrameReader reads it)."""
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    data = len(data).to_bytes(8, "little") + data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class FrameReader:
    """Reads the messages `send_frame` wrote, each within a time limit."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def receive(self, timeout: float) -> tuple[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buffer) >= 8:
                size = int.from_bytes(self.buffer[:8], "little")
                if len(self.buffer) >= 8 + size:
                    data = bytes(self.buffer[8 : 8 + size])
                    del self.buffer[: 8 + size]
                    return pickle.loads(data)
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout", timeout_message(timeout)
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    return "crash", "the kernel crashed the process that ran it (the notebook is unharmed)"
                self.buffer.extend(chunk)

    def close(self) -> None:
        os.close(self.fd)

