"""Processes the tests start, forked from a warm parent: the notebook executions' kernels and the command lines
(`python -m puzzles grade ...`) of the tests that are not about a process's start-up.

A kernel started as `python -m ipykernel_launcher`, or a `python -m puzzles` started, spends 2-3 s of CPU importing
torch. Here a process that has imported torch and Triton (not `puzzles`, whose import chooses the interpreter and
starts the compile check's process) forks them instead: puzzles/running/fork_server.py, loaded by path,
one per test process (`warm_parent()`). The child is what would have started: a session of its own, the folder,
environment, arguments and path of the started process, then the program's own entry point. One difference: torch's
thread pool has one thread there (the server imports torch with OMP_NUM_THREADS=1, as a fork cannot carry a pool),
which only the speed of torch calls sees. Where any of that is not available here (no pidfd, another
jupyter_client, a PYTHONPATH other than the server's), the process starts as usual. tests/test_launcher.py checks
that a forked kernel and a forked command see what started ones see.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
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

    launcher_module().serve(run_forked)


def run_forked() -> int:
    """In the forked child: a command (run_python's, which names its status file) or a kernel."""
    return run_command() if STATUS_VARIABLE in os.environ else run_kernel()


def path_as_started(first: str | None) -> None:
    """sys.path as a process started here has it: `first` (the folder that `python -m` or a script puts first, '' for
    -c; None for a kernel, whose path lacks it: IPython puts '' back) instead of the server's '' and this folder; a
    relative PYTHONPATH entry, which Python made absolute against the server's folder ("/"), resolved against this
    process's own, as in a process started there."""
    relative = {"//" + os.path.normpath(entry): os.path.abspath(entry)  # "scripts" and "./scripts": "//scripts"
                for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry and not os.path.isabs(entry)}
    sys.path[:] = [*([first] if first is not None else []),
                   *(relative.get(entry, entry) for entry in sys.path if entry not in ("", str(TESTS)))]


def run_kernel() -> int:
    """In the forked child: `python -m ipykernel_launcher`."""
    path_as_started(None)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    return 0


STATUS_VARIABLE = "WARM_FORKS_STATUS_FILE"  # where a forked command writes its exit status (its parent reaps it)


def run_command() -> int:
    """In the forked child: `python -m MODULE ARGS`, `python -c CODE ARGS` or `python SCRIPT ARGS` as Python runs
    them (sys.argv, sys.path, `__main__`), then what Python does at exit (the atexit functions, the streams
    flushed); the exit status goes to the file its parent reads."""
    status_file = os.environ.pop(STATUS_VARIABLE)
    code = 1
    try:
        if sys.argv[0] == "-m":
            module, sys.argv = sys.argv[1], ["-m", *sys.argv[2:]]  # "-m" while the package imports, as Python has it
            path_as_started(os.getcwd())
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        elif sys.argv[0] == "-c":
            source, sys.argv = sys.argv[1], ["-c", *sys.argv[2:]]
            path_as_started("")
            main = sys.modules["__main__"]
            main.__dict__.clear()
            main.__dict__.update(__name__="__main__", __builtins__=__builtins__)
            exec(compile(source, "<string>", "exec"), main.__dict__)
        else:
            path_as_started(os.path.dirname(os.path.abspath(sys.argv[0])))
            runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as end:
        if end.code is None or isinstance(end.code, int):
            code = end.code or 0
        else:
            print(end.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - as Python reports an uncaught exception
        traceback.print_exc()
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter runs at its exit; the child ends with os._exit
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    Path(status_file).write_text(str(code))
    return code


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
        code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import warm_forks; warm_forks.serve()"
        # One OpenMP thread: torch's import otherwise starts a pool, and a fork copies one thread only (the server
        # refuses to fork a process of several threads).
        server = SERVERS[key] = launcher_module().Launcher({**os.environ, "OMP_NUM_THREADS": "1"},
                                                           [sys.executable, "-c", code])
        if len(SERVERS) == 1:
            atexit.register(lambda: [s.stop() for s in SERVERS.values()])
    return server


def run_python(args: list[str], cwd: Path | str, env: dict[str, str] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """`subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)`,
    forked from the warm parent where it can be (`args`: "-m MODULE ...", "-c CODE ..." or "SCRIPT ..."). The result
    carries the process's `pid`."""
    env = dict(os.environ if env is None else env)
    server = warm_parent(env)
    if server is not None:
        with contextlib.suppress(OSError):  # the server is gone: started as usual
            return _forked(server, args, Path(cwd).resolve(), env, timeout)
    with subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()  # as subprocess.run: leaving the block would wait for it
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    done.pid = proc.pid
    return done


def _forked(server: object, args: list[str], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess:
    argv = [sys.executable, *args]
    with tempfile.TemporaryDirectory() as folder, open(os.devnull, "rb") as nothing, \
            open(Path(folder) / "out", "w+b") as out, open(Path(folder) / "err", "w+b") as err:
        status = Path(folder) / "status"
        pid, pidfd = server.start(cwd, {**env, STATUS_VARIABLE: str(status)},
                                  [nothing.fileno(), out.fileno(), err.fileno()], list(args))
        try:
            launcher_module().LaunchedProcess(pid, pidfd).wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # a session of its own: it and whatever it started
            raise subprocess.TimeoutExpired(argv, timeout) from None
        out.seek(0)
        err.seek(0)
        code = int(status.read_text()) if status.exists() else -signal.SIGKILL  # no status: it was killed
        done = subprocess.CompletedProcess(argv, code, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
    done.pid = pid
    return done


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
