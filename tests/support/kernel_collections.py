"""The tests' kernels, one collection per puzzle: tests/kernels/pNN_<slug>.py holds every kernel a test grades as
puzzle NN (its right answers in other styles, `CORRECT`; its known-wrong kernels and slips, each saying how it is
wrong). A test reads them by puzzle (`collection(2).add_mask2_kernel_no_mask`) or, where it holds only a kernel's
name, finds it here (`kernel_named`)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any

from puzzles.course import catalog
from puzzles.running.kernel import kernel_file


def module_name(number: int) -> str:
    """The collection's module: the catalog's `pNN_<slug>`."""
    return f"p{catalog.get(number).id}"


def collection(number: int) -> ModuleType:
    return importlib.import_module(module_name(number))


def all_collections() -> dict[int, ModuleType]:
    return {p.number: collection(p.number) for p in catalog.all_puzzles()}


def kernel_named(name: str) -> Any:
    """The kernel (or @triton.jit helper) of this name, in whichever puzzle's collection defines it."""
    found = [vars(module)[name] for collection_module in all_collections().values()
             for module in modules_of(collection_module)
             if name in vars(module) and kernel_file(vars(module)[name]) == module.__file__]
    assert len(found) == 1, f"{name}: defined in {len(found)} collections"
    return found[0]


def modules_of(collection_module: ModuleType) -> list[ModuleType]:
    """A collection's modules: itself, and where it outgrew one file, the modules of its package."""
    if not hasattr(collection_module, "__path__"):
        return [collection_module]
    return [collection_module] + [importlib.import_module(f"{collection_module.__name__}.{info.name}")
                                  for info in pkgutil.iter_modules(collection_module.__path__)]
