"""The learner's kernel as the grader holds it: the Python function under its decorators, its file and
definition line, its decorator chain and parameters, and its source and its helpers' (`KernelHandle`,
resolved once per `test()`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton

from puzzles.running import kernel_source
from puzzles.running.kernel_source import FunctionSource, read_source
from puzzles.running.lines import def_line


def on_gpu() -> bool:
    """True when kernels are compiled for a CUDA GPU rather than interpreted (the mode `import puzzles`
    chose): where the grader, the notebook cells' safe path and the learner's API run kernels."""
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") != "1"


def unwrap_kernel(kernel: Any) -> Callable[..., Any] | None:
    """The plain Python function behind a @triton.jit kernel (through autotune/heuristics); a
    `KernelHandle`'s, already resolved."""
    if isinstance(kernel, KernelHandle):
        return kernel.fn
    seen = 0
    while not hasattr(kernel, "arg_names") or isinstance(kernel, (triton.runtime.Autotuner, triton.runtime.Heuristics)):
        if not hasattr(kernel, "fn") or seen > 5:
            return None
        kernel, seen = kernel.fn, seen + 1
    return getattr(kernel, "fn", None)


def kernel_file(kernel: Any) -> str | None:
    if isinstance(kernel, KernelHandle):
        return kernel.file
    fn = unwrap_kernel(kernel)
    return fn.__code__.co_filename if fn is not None else None



def decorator_chain(kernel: Any) -> list[Any]:
    """The kernel and what it wraps, outermost first: heuristics, autotuner, ..., the jitted function.
    An autotune config's launch (puzzles/grading/autotune_configs.py) starts at the kernel it came from (`outer`)."""
    chain, obj = [], getattr(kernel, "outer", None) or kernel
    for _ in range(8):
        chain.append(obj)
        if hasattr(obj, "arg_names") and not isinstance(obj, (triton.runtime.Autotuner, triton.runtime.Heuristics)):
            break
        if not hasattr(obj, "fn"):
            break
        obj = obj.fn
    return chain


@dataclass(frozen=True)
class KernelHandle:
    """The learner's kernel, resolved once per `test()`: every step of grading reads this instead of
    unwrapping the kernel, reading its signature or parsing its source again.

    `kernel` is as given (@triton.jit, @triton.autotune, @triton.heuristics, or one autotune config's
    launch); `fn` the Python function under the decorators (None: not a Triton kernel)."""

    kernel: Any
    fn: Callable[..., Any] | None
    file: str | None
    def_line: int | None
    chain: tuple[Any, ...]  # outermost first, down to the jitted function
    parameters: tuple[inspect.Parameter, ...]
    supplied: frozenset[str]  # parameters that @triton.heuristics or an autotune config fills in
    heuristics: tuple[Any, ...]  # the @triton.heuristics wrappers, outermost first
    # The kernel's and its helpers' sources, read on first use (by code object): the operation rules,
    # the interpreter probe and the description shipped to the compile check and the GPU worker share them.
    sources: dict[Any, FunctionSource | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, kernel: Any) -> KernelHandle:
        if isinstance(kernel, KernelHandle):
            return kernel
        fn = unwrap_kernel(kernel)
        chain = tuple(decorator_chain(kernel))
        heuristics = tuple(o for o in chain if isinstance(o, triton.runtime.Heuristics))
        supplied: set[str] = set()
        for obj in chain:
            if isinstance(obj, triton.runtime.Heuristics):
                supplied |= set(obj.values)
            elif isinstance(obj, triton.runtime.Autotuner):
                supplied |= {k for config in obj.configs for k in config.kwargs}
        parameters = tuple(inspect.signature(fn).parameters.values()) if fn is not None else ()
        return cls(kernel, fn, fn.__code__.co_filename if fn is not None else None,
                   def_line(fn) if fn is not None else None, chain, parameters, frozenset(supplied), heuristics)

    def for_launch(self, launch: Any) -> KernelHandle:
        """The handle of one autotune config's launch of this kernel: the same function, parameters and
        sources (nothing read again), another object to launch."""
        other = dataclasses.replace(self, kernel=launch, chain=tuple(decorator_chain(launch)))
        if "description" in self.__dict__:
            other.__dict__["description"] = self.__dict__["description"]
        return other

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", None) or getattr(self.kernel, "__name__", repr(self.kernel))

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.parameters]

    def source(self, fn: Callable[..., Any]) -> FunctionSource | None:
        """The source of the kernel or of a function it reaches, read once."""
        key = getattr(fn, "__code__", fn)
        if key not in self.sources:
            self.sources[key] = read_source(fn)
        return self.sources[key]

    @functools.cached_property
    def description(self) -> dict | None:
        """The jitted function as source plus the globals it reads (puzzles/running/kernel_source.py), for
        another process to rebuild: the compile check's workers and the GPU worker get this one."""
        return kernel_source.describe_kernel(self.fn, self.source)


def own_jit_function(value: Any) -> Callable[..., Any] | None:
    """The Python function behind a @triton.jit function of the learner's (not Triton's own library); None for
    anything else (a module, a value, an object with no code). The kernel-body rules and the operation rules read a
    kernel's helpers through it."""
    if not (hasattr(value, "fn") or hasattr(value, "arg_names")) or inspect.ismodule(value):
        return None
    try:
        inner = unwrap_kernel(value)
    except Exception:  # noqa: BLE001 - anything odd is not a helper
        return None
    if inner is None or not hasattr(inner, "__code__") or (inner.__module__ or "").startswith("triton."):
        return None
    return inner
