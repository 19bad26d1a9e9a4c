"""`python -m puzzles doctor`: is this machine set up for the course, and if not, what fixes it."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path

from puzzles.cli import requirements_file
from puzzles.course.solution_source import ROOT
from puzzles.running import compat

REQUIREMENTS = ROOT / "requirements.txt"
CHECKED = ("torch", "triton", "triton-viz", "numpy", "jaxtyping")


def pins(path: Path | None = None) -> dict[str, str]:
    """Package -> version pinned with == in requirements.txt (and the files it includes) for this Python."""
    path = path or REQUIREMENTS
    return requirements_file.pins(path) if path.exists() else {}


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - no torch: reported below
        return False


OPTIONAL = {"triton-viz": "only `puzzles.viz.launch_triton_viz` (the interactive viewer) uses it"}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def pip_command() -> str:
    """pip of the Python the doctor checked: a bare `pip` may belong to another environment."""
    return f"{sys.executable} -m pip"


def _install_hint(name: str, want: str | None, gpu: bool) -> str:
    spec = f"{name}=={want}" if want else name
    setup = "or `make setup` (which installs the pinned set into the checkout's .venv)"
    if name == "torch" and not gpu:
        # The default index gives Linux the CUDA build (GBs of NVIDIA packages); a CPU machine needs none.
        return f"{pip_command()} install {spec} --index-url {CPU_INDEX} (the CPU build), {setup}"
    if name == "triton" and not want:
        return compat.INSTALL.replace("pip", pip_command(), 1)
    return f"{pip_command()} install {spec}, {setup}"


def _differs(version: str, want: str | None) -> bool:
    return bool(want) and version.split("+")[0] != want.split("+")[0]


def diagnose(requirements: Path | None = None, run_kernel: bool = True,
             gpu: bool | None = None) -> list[tuple[bool, str]]:
    """(ok, message) for each check. The pins are the tested CPU set; on a CUDA machine (Colab, a
    GPU box) its own torch and triton are used, so a different version there is only reported.
    Needs none of torch, triton, numpy or jaxtyping: their absence is what it reports."""
    checks: list[tuple[bool, str]] = []
    pinned = pins(requirements)
    gpu = _has_cuda() if gpu is None else gpu
    python_problem = compat.python_problem()
    checks.append((python_problem is None, python_problem or f"Python {sys.version.split()[0]} at {sys.executable} "
                                                              "(the environment checked: the commands below install "
                                                              "into it)"))
    torch_version = _installed("torch")
    # A torch other than the pinned one brings the triton it requires (torch 2.14: 3.8, 2.15: 3.9):
    # a supported triton there is not a problem, and downgrading it would break that torch.
    own_torch = torch_version is not None and _differs(torch_version, pinned.get("torch"))
    viz_note = compat.triton_viz_note()
    for name in CHECKED:
        version, want = _installed(name), pinned.get(name)
        if name == "triton-viz" and viz_note:
            checks.append((True, f"{name} {version or 'is not installed'}: {viz_note}"))
        elif version is None and name in OPTIONAL:
            checks.append((True, f"{name} is not installed (optional: {OPTIONAL[name]}; "
                                 f"{_install_hint(name, want, gpu)})"))
        elif version is None:
            checks.append((False, f"{name} is not installed: {_install_hint(name, want, gpu)}"))
        elif name == "triton" and compat.triton_problem():  # the same test as grading's
            checks.append((False, str(compat.triton_problem())))
        elif _differs(version, want) and gpu and name in ("torch", "triton", "numpy"):
            checks.append((True, f"{name} {version} (this GPU machine's own; the CPU set pins {want})"))
        elif _differs(version, want) and own_torch and name in ("torch", "triton"):
            checks.append((True, f"{name} {version} (supported: triton {compat.SUPPORTED}; the pinned set that "
                                 f"`make setup` installs has {name} {want})"))
        elif _differs(version, want):
            checks.append((False, f"{name} {version} is installed, the course pins {want}: "
                                  f"run `{pip_command()} install {name}=={want}`"))
        else:
            checks.append((True, f"{name} {version}"))
    for name in CHECKED:
        module = name.replace("-", "_")
        if _installed(name) is None or (name == "triton-viz" and viz_note):
            continue
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - report any import failure
            checks.append((name in OPTIONAL and gpu,
                           f"`import {module}` fails ({type(err).__name__}: {err}); reinstall the pinned set: "
                           f"{pip_command()} install -r requirements.txt"))
    if _installed("triton") and _installed("torch") and compat.triton_problem() is None:
        try:
            checks += what_triton_supports()
        except ImportError as err:  # triton that does not import: reported above
            checks.append((False, f"`import triton` fails ({err})"))
    if run_kernel:
        if all(ok for ok, _ in checks):
            checks.append(_tiny_kernel())
        else:
            checks.append((False, "no kernel was run: fix the problems above first"))
    return checks


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def what_triton_supports() -> list[tuple[bool, str]]:
    """A few lines on what the installed Triton and Python can run in the course: block pointers, tensor
    descriptors, tl.dot_scaled under the interpreter, the triton-viz viewer; and whether the grader's hooks into
    the interpreter are found (a FAIL: no kernel is graded without them)."""
    import triton

    from puzzles.running import interpreter_hooks

    python = sys.version.split()[0]
    blocks = interpreter_hooks.has_block_pointers()
    lines = [
        (True, f"triton {triton.__version__} with Python {python} runs: tensor descriptors (tl.make_tensor_descriptor) "
               f"{_yes(interpreter_hooks.has_tensor_descriptors())}; block pointers (tl.make_block_ptr) "
               f"{_yes(blocks)}{'' if blocks else ' (removed in 3.9: use tensor descriptors)'}; tl.dot_scaled under "
               f"the interpreter {_yes(interpreter_hooks.interprets_dot_scaled())}; triton-viz's 3-D viewer "
               f"{_yes(_triton_viz_imports())}"),
    ]
    problem = interpreter_hooks.hooks_problem()
    lines.append((problem is None, problem or "the grader's hooks into Triton's interpreter are all found"))
    return lines


def _triton_viz_imports() -> bool:
    if compat.triton_viz_note() or _installed("triton-viz") is None:
        return False
    try:
        importlib.import_module("triton_viz")
    except Exception:  # noqa: BLE001 - any import failure means no viewer
        return False
    return True


def _tiny_kernel() -> tuple[bool, str]:
    try:
        import torch

        from puzzles.course.catalog import get
        from puzzles.grading import on_gpu, test

        p = get(2)
        result = test(p.reference(), p.spec, quiet=True, timeout=60)
        mode = f"compiled on {torch.cuda.get_device_name()}" if on_gpu() else "Triton's CPU interpreter"
        if result.passed:
            return True, f"a kernel ran and was graded ({mode}, {result.seconds:.2f} s)"
        return False, f"the reference kernel of puzzle 2 failed ({mode}): {result.reason()}"
    except Exception as err:  # noqa: BLE001
        return False, f"running a kernel failed: {type(err).__name__}: {err}"


def main() -> int:
    if compat.python_problem():  # nothing else can be checked usefully: the pins are for supported Pythons
        print(f"FAIL {compat.python_problem()}")
        return 1
    checks = diagnose()
    for ok, message in checks:
        print(("ok   " if ok else "FAIL ") + message)
    bad = sum(not ok for ok, _ in checks)
    print("\nall good" if not bad else f"\n{bad} problem(s)")
    return 0 if not bad else 1
