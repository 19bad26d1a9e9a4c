"""The one walk of a kernel's decorator chain: from the object a learner passes (`@triton.autotune`,
`@triton.heuristics`, `@triton.jit`, or one autotune config's launch) down through each `.fn` to the jitted
function and the plain Python function under it.

Everything that needs to know what wraps a kernel reads a `KernelChain` (the `KernelHandle` builds its
function, decorators, autotuner and heuristics from one; the GPU worker ships a kernel's layers from one;
the description shipped to other processes finds the learner's @triton.jit helpers with one).

Standard library only, Triton's classes recognised by name: `kernel_source.py`, which the compile check's
workers load by path without importing torch or `puzzles`, walks kernels with it too.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 8  # decorators stacked deeper than this are not a kernel the course grades


def is_triton(obj: Any, class_name: str) -> bool:
    """Whether `obj` is an instance of Triton's class `class_name` (`Autotuner`, `Heuristics`, `Config`), or of a
    subclass of it, recognised without importing Triton."""
    return any(c.__name__ == class_name and (c.__module__ or "").startswith("triton") for c in type(obj).__mro__)


def is_config_launch(obj: Any) -> bool:
    """One autotune config's launch (`puzzles.running.kernel.ConfigLaunch`): a kernel with a `triton.Config`."""
    return hasattr(obj, "fn") and is_triton(getattr(obj, "config", None), "Config")


@dataclass(frozen=True)
class KernelChain:
    """A kernel as its wrappers nest: `links` is the object given, then each `.fn` below it, ending at the jitted
    function when there is one; `fn` is the Python function under it (None: not a Triton kernel)."""

    links: tuple[Any, ...]
    fn: types.FunctionType | None
    # The decorators as the learner stacked them, outermost first: the links, or for a config's launch the
    # links of the kernel it came from (its @triton.heuristics and autotuner still apply to it).
    decorators: tuple[Any, ...]

    @property
    def jitted(self) -> Any:
        """The @triton.jit function (None: not a Triton kernel)."""
        return self.links[-1] if self.fn is not None else None

    @property
    def config_launch(self) -> Any:
        """The config launch given (None: a kernel as decorated)."""
        return self.links[0] if is_config_launch(self.links[0]) else None

    @property
    def autotuner(self) -> Any:
        """The @triton.autotune wrapper, also under a @triton.heuristics above it; None for a config's launch,
        which is one config of it."""
        if self.config_launch is not None:
            return None
        return next((link for link in self.links if is_triton(link, "Autotuner")), None)

    @property
    def heuristics(self) -> tuple[Any, ...]:
        """The @triton.heuristics wrappers, outermost first."""
        return tuple(d for d in self.decorators if is_triton(d, "Heuristics"))

    @property
    def supplied(self) -> frozenset[str]:
        """The parameters that @triton.heuristics or an autotune config fills in."""
        names: set[str] = set()
        for d in self.decorators:
            if is_triton(d, "Heuristics"):
                names |= set(d.values)
            elif is_triton(d, "Autotuner"):
                names |= {k for config in d.configs for k in config.kwargs}
        return frozenset(names)


def walk_chain(kernel: Any) -> KernelChain:
    """Follow `.fn` from `kernel` until it holds a plain Python function: the holder is the jitted function (a
    JITFunction's `.fn` is the function; an autotuner's, heuristics' or config launch's is the kernel below)."""
    links: list[Any] = []
    fn = None
    current = kernel
    for _ in range(MAX_DEPTH):
        links.append(current)
        inner = getattr(current, "fn", None)
        if isinstance(inner, types.FunctionType):
            fn = inner if hasattr(current, "arg_names") else None
            break
        if inner is None:
            break
        current = inner
    outer = getattr(kernel, "outer", None) if is_config_launch(kernel) else None
    decorators = walk_chain(outer).links if outer is not None else tuple(links)
    return KernelChain(tuple(links), fn, decorators)


def jitted_python_function(value: Any) -> types.FunctionType | None:
    """The Python function under a @triton.jit function (through its wrappers); None for anything else."""
    return walk_chain(value).fn
