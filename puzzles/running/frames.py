"""Length-prefixed pickled frames over a pipe, between the grader and its child processes.

The process that sends may be running a learner's kernel (a forked interpreted run): a frame is read with
`safe_loads`, an unpickler that builds only data (the course's own classes, containers, numbers, tensors and
arrays) and refuses any other global, so bytes written on the pipe by the kernel's process cannot run code
in the reader.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import inspect
import io
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


BUILTIN_TYPES = frozenset({"set", "frozenset", "complex", "slice", "range", "bytearray", "bytes", "int", "float",
                           "str", "list", "dict", "tuple", "bool", "object"})
NUMPY_GLOBALS = frozenset({"dtype", "ndarray", "_frombuffer", "_reconstruct", "scalar"})


def _storage_from_bytes(data: bytes) -> Any:
    """A tensor's storage as torch pickles it, loaded with torch's own data-only unpickler."""
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


class DataUnpickler(pickle.Unpickler):
    """Builds data only: a global outside the allowlist raises UnpicklingError (what it named is in the message)."""

    def find_class(self, module: str, name: str) -> Any:
        top = module.split(".")[0]
        if module == "torch.storage" and name == "_load_from_bytes":
            return _storage_from_bytes
        if (module, name) in (("torch._utils", "_rebuild_tensor_v2"), ("torch", "Size"), ("torch", "device"),
                              ("collections", "OrderedDict"), ("collections", "defaultdict"),
                              ("copyreg", "_reconstructor")):
            return super().find_class(module, name)
        if top == "torch" and module == "torch":
            import torch

            if isinstance(getattr(torch, name, None), torch.dtype):
                return getattr(torch, name)
        if top == "numpy" and name in NUMPY_GLOBALS:
            return super().find_class(module, name)
        if module == "builtins" and (name in BUILTIN_TYPES or (
                inspect.isclass(getattr(builtins, name, None)) and issubclass(getattr(builtins, name), BaseException))):
            return super().find_class(module, name)
        if top == "puzzles" and not name.startswith("_"):
            found = super().find_class(module, name)
            # The course's records (RunOutput, Trace, KernelError...): never a function, nor a class whose
            # construction does something (a Worker starts a process).
            if inspect.isclass(found) and (dataclasses.is_dataclass(found) or issubclass(found, (enum.Enum,
                                                                                                  BaseException))):
                return found
        raise pickle.UnpicklingError(f"a frame named {module}.{name}, which is not data")


def safe_loads(data: bytes) -> Any:
    return DataUnpickler(io.BytesIO(data)).load()


class FrameReader:
    """Reads the messages `send_frame` wrote, each within a time limit."""

    def __init__(self, fd: int, data_only: bool = True) -> None:
        self.fd = fd
        self.buffer = bytearray()
        # The GPU worker's calls carry functions by name both ways (puzzles/running/gpu_worker.py): that process
        # runs no Python of a submission's (the kernel-body rules come first) and its pipes are its own.
        self.loads = safe_loads if data_only else pickle.loads

    def receive(self, timeout: float) -> tuple[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buffer) >= 8:
                size = int.from_bytes(self.buffer[:8], "little")
                if len(self.buffer) >= 8 + size:
                    data = bytes(self.buffer[8 : 8 + size])
                    del self.buffer[: 8 + size]
                    try:
                        return self.loads(data)
                    except Exception as err:  # noqa: BLE001 - whatever the bytes were, they are not a result
                        return "crash", (f"the process that ran the kernel sent back something other than results "
                                         f"({type(err).__name__}: {err}): the submission interfered with grading")
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

