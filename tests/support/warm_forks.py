"""The notebook executions' kernels, forked from a warm parent. (The tests of a command's output run the command in
their own process, tests/support/commands.py.)

A kernel started as `python -m ipykernel_launcher` spends 2-3 s of CPU importing torch, and the suite executes some
forty notebooks. Here a process that has imported torch and Triton (not `puzzles`, whose import chooses the
interpreter and starts the compile check's process) forks them instead: puzzles/running/fork_server.py, loaded by
path, one per test process (`warm_parent()`). The child is what would have started: a session of its own, the
folder, environment and path of the started kernel, then ipykernel's own entry point. One difference: torch's thread
pool has one thread there (the server imports torch with OMP_NUM_THREADS=1, as a fork cannot carry a pool), which
only the speed of torch calls sees. Where any of that is not available here (no pidfd, another jupyter_client, a
PYTHONPATH other than the server's), the kernel starts as usual. tests/classroom/test_launcher.py checks that a forked
kernel sees what a started one sees.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent  # tests/support
TESTS = HERE.parent
LAUNCHER_FILE = TESTS.parent / "puzzles" / "running" / "fork_server.py"


@functools.cache
def launcher_module() -> ModuleType:
    """puzzles/running/fork_server.py without the `puzzles` package (whose import loads torch, Triton and the
    compile check's processes: the fork server must not)."""
    spec = importlib.util.spec_from_file_location("puzzles_launcher_by_path", LAUNCHER_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve() -> None:
    """The fork server: import what every kernel and command imports (torch, Triton, and jupyter_client and IPython,
    which ipykernel builds on), then fork one per request. Triton's import reads TRITON_INTERPRET (triton.language
    decorates its own functions then, as interpreted or compiled ones): the server has the test process's, and
    `warm_parent` forks only for an environment with the same. Not ipykernel itself: its modules read the kernel's
    environment when imported (JPY_PARENT_PID, which makes the kernel end with its client)."""
    import IPython.core.interactiveshell  # noqa: F401
    import jupyter_client.session  # noqa: F401
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    launcher_module().serve(run_kernel)


def path_as_started() -> None:
    """sys.path as a kernel started here has it: without the server's '' and this folder (IPython puts '' back); a
    relative PYTHONPATH entry, which Python made absolute against the server's folder ("/"), resolved against this
    process's own, as in a process started there."""
    relative = {"//" + os.path.normpath(entry): os.path.abspath(entry)  # "scripts" and "./scripts": "//scripts"
                for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry and not os.path.isabs(entry)}
    sys.path[:] = [relative.get(entry, entry) for entry in sys.path if entry not in ("", str(HERE))]


def run_kernel() -> int:
    """In the forked child: `python -m ipykernel_launcher`."""
    path_as_started()
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    return 0


# This test process's fork server, by what its imports read: the path, and TRITON_INTERPRET (triton.language's own
# functions are decorated when it is imported, as interpreted or as compiled ones).
SERVERS: dict[tuple[str, str], object] = {}


def server_key(env: Mapping[str, str]) -> tuple[str, str]:
    return env.get("PYTHONPATH", ""), env.get("TRITON_INTERPRET", "")


def warm_parent(env: Mapping[str, str] | None = None) -> object | None:
    """This test process's fork server (a puzzles/running/fork_server.py `Launcher`), started on first use, for a
    process whose environment is `env` (default: this one's); None where the server's imports would differ from
    that process's own (another PYTHONPATH or TRITON_INTERPRET) or this machine cannot fork from one (no pidfd)."""
    key = server_key(os.environ)
    if not hasattr(os, "pidfd_open") or (env is not None and server_key(env) != key):
        return None
    server = SERVERS.get(key)
    if server is None or server.process.poll() is not None:
        code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import warm_forks; warm_forks.serve()"
        # One OpenMP thread: torch's import otherwise starts a pool, and a fork copies one thread only (the server
        # refuses to fork a process of several threads).
        server = SERVERS[key] = launcher_module().Launcher({**os.environ, "OMP_NUM_THREADS": "1"},
                                                           [sys.executable, "-c", code])
        if len(SERVERS) == 1:
            atexit.register(lambda: [s.stop() for s in SERVERS.values()])
    return server


@contextlib.contextmanager
def kernels_forked_from_a_warm_parent() -> Iterator[None]:
    """Within it, jupyter_client's local launch of `python -m ipykernel_launcher` (as nbclient asks for it) forks
    the kernel from the warm parent; jupyter_client signals, waits for and kills it as it would its own process."""
    try:
        from jupyter_client.provisioning import local_provisioner

        real = local_provisioner.launch_kernel
        launcher = launcher_module()
        entry = importlib.util.find_spec("ipykernel_launcher").origin
    except (ImportError, AttributeError):
        yield
        return
    server = warm_parent()
    if server is None or entry is None:
        yield
        return

    def launch_kernel(cmd: list[str], stdin: int | None = None, stdout: int | None = None,
                      stderr: int | None = None, env: dict[str, str] | None = None, independent: bool = False,
                      cwd: str | None = None, **kw: object) -> object:
        plain = stdin is None and stdout is None and stderr is None  # nbclient's: the kernel writes where we do
        kernel_env = {**(env or os.environ), **({} if independent else {"JPY_PARENT_PID": str(os.getpid())})}
        if plain and cmd[1:3] == ["-m", "ipykernel_launcher"] and warm_parent(kernel_env) is server:
            # As jupyter_client's own launch: the kernel ends when this process does (unless independent).
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
