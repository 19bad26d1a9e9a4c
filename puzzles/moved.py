"""Old import paths of modules that moved, still importable.

Notebooks copied into `my-notebooks/` before the course's modules were grouped into subpackages
import `puzzles.autotune`, `puzzles.grade`, `puzzles.tensor_lists`, `puzzles.catalog.pNN_...`: an
import of an old path gets the module at its new path (the same module object, not a copy). The
course's own code uses the new paths only (tests/test_structure.py checks).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# old path -> new path, both below `puzzles.` (`puzzles.execution` is not here: it was split by job, into
# running/kernel.py, errors.py, lines.py, interpreter.py, limits.py, child.py and frames.py)
MOVED = {
    "autotune": "learner.autotune",
    "autotune_configs": "grading.autotune_configs",
    "bug_inputs": "course.bug_inputs",
    "catalog": "course.catalog",
    "class_command": "classroom.command",
    "compat": "running.compat",
    "compile_check": "running.compile_check",
    "debug": "running.debug",
    "doctor": "cli.doctor",
    "gpu_worker": "running.gpu_worker",
    "grade": "cli.grade",
    "grade_worker": "classroom.worker",
    "gradebook": "classroom.gradebook",
    "harness": "grading",
    "harness.running": "grading.runs",
    "inputs": "grading.inputs",
    "isolation": "classroom.isolation",
    "kernel_source": "running.kernel_source",
    "layouts": "grading.layouts",
    "load_rules": "submissions.load_rules",
    "mistakes": "course.mistakes",
    "notebooks": "course.notebooks",
    "perf": "grading.perf",
    "picture_hooks": "course.picture_hooks",
    "primer": "course.primer",
    "puzzle": "course.puzzle",
    "recording": "running.recording",
    "result": "grading.result",
    "sandbox": "running.sandbox",
    "solution_source": "course.solution_source",
    "tensor_lists": "grading.tensor_lists",
    "workspace": "learner.workspace",
}

# Old packages (their modules moved with them). `puzzles.classroom` is not here: it was a module and is
# now the classroom package.
OLD_PACKAGES = ("harness", "catalog", "compile_check")


def new_name(name: str) -> str | None:
    """The new dotted name of an old module path (or of a module below an old package), else None."""
    if not name.startswith("puzzles."):
        return None
    rest = name[len("puzzles."):]
    if rest in MOVED:
        return "puzzles." + MOVED[rest]
    package, _, module = rest.rpartition(".")
    if package in OLD_PACKAGES:  # a module below an old package: the same module below the new one
        return "puzzles." + MOVED[package] + "." + module
    return None


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path first, and loads it as the module already at its new path."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(name)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=hasattr(importlib.import_module(new), "__path__"))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(new_name(spec.name) or spec.name)
        spec.loader_state = module.__spec__  # the import system is about to overwrite it with this spec
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed under its new name: only its own spec is put back.
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
