"""Kernels and tensors as data, for the GPU worker (puzzles/running/gpu_worker.py): a @triton.jit kernel with its
autotune / heuristics layers described by source and rebuilt in the other process (`ship`, `land`), and float8
tensors sent as their bytes (`ShippedBytes`), which torch's pickle cannot carry into a fresh process."""

from __future__ import annotations

import marshal
import pickle
import types
from dataclasses import dataclass, field
from typing import Any

from puzzles.running.kernel import ConfigLaunch, KernelHandle, unwrap_kernel
from puzzles.running.kernel_chain import is_config_launch, is_triton, walk_chain


class CannotShip(Exception):
    """The kernel cannot be described as data (no source, a heuristic that is a closure...)."""


@dataclass
class ShippedKernel:
    """A kernel as data: its functions' source and globals, and the layers around it, outermost
    first: ("options", {num_warps, num_stages}), ("autotune", {...}), ("heuristics", {...})."""

    description: dict
    layers: list[tuple[str, dict]] = field(default_factory=list)

    def key(self) -> bytes:
        return pickle.dumps((self.description, self.layers))


def ship(kernel: Any) -> ShippedKernel:
    """Describe a @triton.jit kernel, with its @triton.autotune / @triton.heuristics wrappers and
    an autotune config's launch options (puzzles.running.kernel.ConfigLaunch), for `land` elsewhere."""
    from puzzles.running import kernel_source

    handle = kernel if isinstance(kernel, KernelHandle) else None  # test()'s: walked and described once
    chain = handle.chain if handle is not None else walk_chain(kernel)
    layers: list[tuple[str, dict]] = []
    for link in chain.links:
        if is_config_launch(link):  # one autotune config's launch
            layers.append(("options", {"num_warps": link.config.num_warps, "num_stages": link.config.num_stages}))
        elif is_triton(link, "Autotuner"):
            layers.append(("autotune", {
                "configs": [(dict(c.kwargs), c.num_warps, c.num_stages, c.num_ctas, c.maxnreg)
                            for c in link.configs],
                "key": list(link.keys), "reset_to_zero": list(link.reset_to_zero),
                "restore_value": list(link.restore_value)}))
        elif is_triton(link, "Heuristics"):
            layers.append(("heuristics", {name: ship_function(f) for name, f in link.values.items()}))
        else:
            break
    if handle is not None:
        description = handle.description
    else:
        description = kernel_source.describe_kernel(chain.fn)
    if description is None:
        raise CannotShip("the kernel's source cannot be read (define it in a file or a notebook cell)")
    return ShippedKernel(description, layers)


def ship_function(fn: Any) -> tuple[bytes, dict, tuple]:
    """A heuristic (usually a lambda): its code object, the globals it names and its default values
    (`lambda args, v=4: v` reads its value from there)."""
    from puzzles.running import kernel_source

    if getattr(fn, "__closure__", None):
        raise CannotShip(f"the heuristic {getattr(fn, '__name__', fn)!r} reads variables of an enclosing "
                         "function: use module-level names")

    def no_jit(value: Any) -> str:
        raise CannotShip("a heuristic that calls a @triton.jit function")

    names = {n: kernel_source.encode_global(fn.__globals__[n], no_jit)
             for n in fn.__code__.co_names if n in fn.__globals__}
    defaults = tuple(kernel_source.encode_global(v, no_jit) for v in (fn.__defaults__ or ()))
    return marshal.dumps(fn.__code__), names, defaults


def land(shipped: ShippedKernel) -> Any:
    """The kernel again, in this process: rebuilt and wrapped in its layers."""
    import triton

    from puzzles.running import kernel_source

    kernel = kernel_source.rebuild_kernel(shipped.description)["root"]
    for kind, data in reversed(shipped.layers):
        if kind == "options":
            kernel = ConfigLaunch(kernel, triton.Config({}, num_warps=data["num_warps"], num_stages=data["num_stages"]))
        elif kind == "autotune":
            configs = [triton.Config(kw, num_warps=w, num_stages=s, num_ctas=c, maxnreg=r)
                       for kw, w, s, c, r in data["configs"]]
            kernel = triton.autotune(configs=configs, key=data["key"], reset_to_zero=data["reset_to_zero"] or None,
                                     restore_value=data["restore_value"] or None)(kernel)
        elif kind == "heuristics":
            values = {}
            for name, (code, names, defaults) in data.items():
                scope = {"__builtins__": __builtins__, **{n: kernel_source.decode_global(v) for n, v in names.items()}}
                values[name] = types.FunctionType(marshal.loads(code), scope, None,
                                                  tuple(kernel_source.decode_global(v) for v in defaults) or None)
            kernel = triton.heuristics(values)(kernel)
    return kernel


@dataclass(frozen=True)
class ShippedBytes:
    """A one-byte float tensor (float8) sent as its bytes: torch pickles a float8 tensor's storage in a form a
    freshly started process cannot load (its unpickler asks the untyped storage for a dtype), so the first call
    of every new worker failed on puzzle 32's inputs; a uint8 view travels, the dtype by name."""

    data: Any  # the uint8 view
    dtype: str

    def land(self) -> Any:
        import torch

        return self.data.view(getattr(torch, self.dtype))


def map_leaves(value: Any, leaf: Any) -> Any:
    """`value` with `leaf` applied to everything in it that is not a list, a tuple or a dict (their items and
    values walked)."""
    if isinstance(value, (list, tuple)):
        return type(value)(map_leaves(v, leaf) for v in value)
    if isinstance(value, dict):
        return {k: map_leaves(v, leaf) for k, v in value.items()}
    return leaf(value)


def ship_all(value: Any) -> Any:
    """Arguments with every kernel in them shipped, and float8 tensors as their bytes (ShippedBytes)."""
    return map_leaves(value, lambda v: ship(v) if is_kernel(v) else tensor_bytes(v))


def tensor_bytes(value: Any) -> Any:
    """A float8 tensor as a ShippedBytes; anything else as it is."""
    if type(value).__name__ == "Tensor" and str(getattr(value, "dtype", "")).startswith("torch.float8"):
        import torch

        return ShippedBytes(value.view(torch.uint8), str(value.dtype).removeprefix("torch."))
    return value


def as_bytes(value: Any) -> Any:
    """`value` with each float8 tensor in it as a ShippedBytes."""
    return map_leaves(value, tensor_bytes)


def from_bytes(value: Any) -> Any:
    """`as_bytes` undone."""
    return map_leaves(value, lambda v: v.land() if isinstance(v, ShippedBytes) else v)


def is_kernel(value: Any) -> bool:
    if isinstance(value, KernelHandle):
        return value.fn is not None
    try:
        return callable(getattr(value, "__getitem__", None)) and unwrap_kernel(value) is not None
    except Exception:  # noqa: BLE001
        return False
