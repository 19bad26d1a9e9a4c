"""Notebook kernels forked from a warm parent, for the notebook executions of tests/test_notebooks.py.

Each notebook runs in a kernel of its own; a kernel started as `python -m ipykernel_launcher` spends 2-3 s of CPU
importing torch when the notebook imports `puzzles`. Within `kernels_forked_from_a_warm_parent()`, jupyter_client's
local launch of such a kernel asks a process that has imported torch and Triton (not `puzzles`, whose import
chooses the interpreter and starts the compile check's process) to fork it instead: puzzles/classroom/launcher.py's
fork server, loaded by path. The child is what jupyter_client would have started: a session of its own, the
kernel's folder, environment and arguments, then ipykernel's own entry point; jupyter_client signals, waits for and
kills it as it would its own process. One difference: torch's thread pool has one thread there (the server imports
torch with OMP_NUM_THREADS=1, as a fork cannot carry a pool), which only the speed of a notebook's torch calls
sees. Where any of that is not available here (no pidfd, another jupyter_client), kernels start as usual.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
LAUNCHER_FILE = TESTS.parent / "puzzles" / "classroom" / "launcher.py"


def launcher_module() -> ModuleType:
    """puzzles/classroom/launcher.py without the `puzzles` package (whose import loads torch, Triton and the
    compile check's processes: the fork server must not)."""
    spec = importlib.util.spec_from_file_location("puzzles_launcher_by_path", LAUNCHER_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve() -> None:
    """The fork server: import what every kernel imports (torch, Triton, and jupyter_client and IPython, which
    ipykernel builds on), then fork a kernel per request. Triton reads TRITON_INTERPRET when a kernel is
    decorated or launched, not when it is imported: the notebook's `import puzzles` still chooses the mode. Not
    ipykernel itself: its modules read the kernel's environment when imported (JPY_PARENT_PID, which makes the
    kernel end with its client)."""
    import IPython.core.interactiveshell  # noqa: F401
    import jupyter_client.session  # noqa: F401
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    launcher_module().serve(run_kernel)


def run_kernel() -> int:
    """In the forked child: `python -m ipykernel_launcher`, whose path lacks the folder it starts in (IPython
    puts '' back) and, here, this folder; a relative PYTHONPATH entry, which Python made absolute against the
    server's folder ("/"), is resolved against the kernel's own, as in a kernel started there."""
    relative = {"//" + os.path.normpath(entry): os.path.abspath(entry)  # "scripts" and "./scripts": "//scripts"
                for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry and not os.path.isabs(entry)}
    sys.path[:] = [relative.get(entry, entry) for entry in sys.path if entry not in ("", str(TESTS))]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    return 0


@contextlib.contextmanager
def kernels_forked_from_a_warm_parent() -> Iterator[None]:
    try:
        from jupyter_client.provisioning import local_provisioner

        real = local_provisioner.launch_kernel
        launcher = launcher_module()
        entry = importlib.util.find_spec("ipykernel_launcher").origin
    except (ImportError, AttributeError):
        yield
        return
    if not hasattr(os, "pidfd_open") or entry is None:
        yield
        return
    code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import forked_kernels; forked_kernels.serve()"
    # One OpenMP thread: torch's import otherwise starts a pool, and a fork copies one thread only (the server
    # refuses to fork a process of several threads).
    server = launcher.Launcher({**os.environ, "OMP_NUM_THREADS": "1"}, [sys.executable, "-c", code])

    def launch_kernel(cmd: list[str], stdin: int | None = None, stdout: int | None = None,
                      stderr: int | None = None, env: dict[str, str] | None = None, independent: bool = False,
                      cwd: str | None = None, **kw: object) -> object:
        plain = stdin is None and stdout is None and stderr is None  # nbclient's: the kernel writes where we do
        if plain and cmd[1:3] == ["-m", "ipykernel_launcher"] and server.process.poll() is None:
            # As jupyter_client's own launch: the kernel ends when this process does (unless independent).
            kernel_env = {**(env or os.environ), **({} if independent else {"JPY_PARENT_PID": str(os.getpid())})}
            with open(os.devnull, "rb") as nothing, contextlib.suppress(OSError):
                pid, pidfd = server.start(Path(cwd or os.getcwd()).resolve(), kernel_env,
                                          [nothing.fileno(), 1, 2], [entry, *cmd[3:]])
                return launcher.LaunchedProcess(pid, pidfd)
        return real(cmd, stdin=stdin, stdout=stdout, stderr=stderr, env=env, independent=independent, cwd=cwd, **kw)

    local_provisioner.launch_kernel = launch_kernel
    try:
        yield
    finally:
        local_provisioner.launch_kernel = real
        server.stop()
