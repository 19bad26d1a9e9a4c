"""Old import paths that notebooks the course shipped used, still importable.

Notebooks copied into `my-notebooks/` before the course's modules were grouped into subpackages
import `puzzles.autotune` (sweep), `puzzles.grade` (progress), `puzzles.tensor_lists` (tables,
compare_with_loop) and `puzzles.catalog.p02_constant_add_block` (add2_spec): an import of an old path
gets the module at its new path (the same module object, not a copy). Only those paths are kept
(`git log -p -- notebooks/` lists every import the shipped notebooks had); the course's own code uses
the new paths, and its notebooks import public names only (`from puzzles import sweep`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# old path -> new path, both below `puzzles.`
MOVED = {
    "autotune": "learner.autotune",
    "catalog": "course.catalog",
    "grade": "cli.grade",
    "tensor_lists": "grading.tensor_lists",
}

# Old packages (their modules moved with them).
OLD_PACKAGES = ("catalog",)


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
