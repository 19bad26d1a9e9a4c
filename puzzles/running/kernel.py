"""The learner's kernel as the grader holds it: the Python function under its decorators, its file and
definition line, its decorator chain and parameters, and its source and its helpers' (`KernelHandle`,
resolved once per `test()`).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton

from puzzles.running import kernel_source
from puzzles.running.kernel_chain import KernelChain, walk_chain
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
    return walk_chain(kernel).fn


def kernel_file(kernel: Any) -> str | None:
    if isinstance(kernel, KernelHandle):
        return kernel.file
    fn = unwrap_kernel(kernel)
    return fn.__code__.co_filename if fn is not None else None


def autotuner_of(kernel: Any) -> Any:
    """The @triton.autotune wrapper of a kernel, also under a @triton.heuristics above it (None for one config's
    launch, and for a plain kernel)."""
    chain = kernel.chain if isinstance(kernel, KernelHandle) else walk_chain(kernel)
    return chain.autotuner


def is_autotuned(kernel: Any) -> bool:
    return autotuner_of(kernel) is not None


class ConfigLaunch:
    """The autotuner's kernel, launched as one config would launch it."""

    def __init__(self, jit: Any, config: triton.Config, outer: Any = None) -> None:
        self.fn = jit  # the kernel under the autotuner, where the chain walk goes on
        self.config = config
        self.outer = outer  # the decorated kernel, whose @triton.heuristics still apply

    def __getitem__(self, grid: Any) -> Any:
        launch = self.fn[grid]
        options = {"num_warps": self.config.num_warps, "num_stages": self.config.num_stages}
        return lambda *args, **kwargs: launch(*args, **kwargs, **options)


@dataclass(frozen=True)
class KernelHandle:
    """The learner's kernel, resolved once per `test()`: every step of grading reads this instead of
    unwrapping the kernel, reading its signature or parsing its source again.

    `kernel` is as given (@triton.jit, @triton.autotune, @triton.heuristics, or one autotune config's
    launch); `chain` its one walk (`kernel_chain.py`), which everything else here is built from; `fn` the
    Python function under the decorators (None: not a Triton kernel)."""

    kernel: Any
    chain: KernelChain
    fn: Callable[..., Any] | None
    file: str | None
    def_line: int | None
    parameters: tuple[inspect.Parameter, ...]
    supplied: frozenset[str]  # parameters that @triton.heuristics or an autotune config fills in
    heuristics: tuple[Any, ...]  # the @triton.heuristics wrappers, outermost first
    # The kernel's and its helpers' sources, read on first use (by code object): the operation rules,
    # the interpreter probe and the description shipped to the compile check and the GPU worker share them.
    sources: dict[Any, FunctionSource | None] = field(default_factory=dict, compare=False, repr=False)
    # What is derived from the sources on first use (the description): shared by every config's launch.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, kernel: Any) -> KernelHandle:
        if isinstance(kernel, KernelHandle):
            return kernel
        chain = walk_chain(kernel)
        fn = chain.fn
        parameters = tuple(inspect.signature(fn).parameters.values()) if fn is not None else ()
        return cls(kernel, chain, fn, fn.__code__.co_filename if fn is not None else None,
                   def_line(fn) if fn is not None else None, parameters, chain.supplied, chain.heuristics)

    def for_launch(self, launch: Any) -> KernelHandle:
        """The handle of one autotune config's launch of this kernel: the same function, parameters, sources and
        description (nothing read, walked or described again), another object to launch."""
        below = getattr(launch, "fn", None)
        links = self.chain.links
        if below is not None and any(link is below for link in links):
            rest = links[next(i for i, link in enumerate(links) if link is below):]
            chain = KernelChain((launch, *rest), self.chain.fn, self.chain.decorators)
        else:  # a launch of something else than this kernel's own wrappers
            chain = walk_chain(launch)
        return dataclasses.replace(self, kernel=launch, chain=chain)

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

    def reached_sources(self) -> list[FunctionSource]:
        """The sources of the kernel and of every @triton.jit function it reaches, each read (and parsed) once:
        the walk that describes the kernel reads them through `source`."""
        self.description  # noqa: B018 - the walk fills self.sources
        return [found for found in self.sources.values() if found is not None]

    @property
    def description(self) -> dict | None:
        """The jitted function as source plus the globals it reads (puzzles/running/kernel_source.py), for
        another process to rebuild: the compile check's workers and the GPU worker get this one, made once for
        the kernel and every config's launch of it."""
        if "description" not in self.derived:
            self.derived["description"] = kernel_source.describe_kernel(self.fn, self.source)
        return self.derived["description"]


def own_jit_function(value: Any) -> Callable[..., Any] | None:
    """The Python function behind a @triton.jit function of the learner's (not Triton's own library); None for
    anything else (a module, a value, an object with no code). The kernel-body rules and the operation rules read a
    kernel's helpers through it."""
    if not (hasattr(value, "fn") or hasattr(value, "arg_names")) or inspect.ismodule(value):
        return None
    try:
        inner = walk_chain(value).fn
    except Exception:  # noqa: BLE001 - anything odd is not a helper
        return None
    if inner is None or not hasattr(inner, "__code__") or (inner.__module__ or "").startswith("triton."):
        return None
    return inner
