"""A spec read once: its tensors' dtypes and symbolic shapes (from the jaxtyping annotations), its
input names, the sizes it takes by keyword, and how to call it.

`Float32[Tensor, "N1 N0"]` says the dtype and the shape; the shape's names are looked up in the
puzzle's sizes (a name may be an expression such as `MID//8`). `parse_spec(spec)` reads a spec
function once per process (the catalog's specs and a learner's own alike); `Puzzle.parsed_spec`
is the puzzle's, and every step of grading reads that instead of the annotations again.
"""

from __future__ import annotations

import inspect
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,  # puzzle 32: fp8 inputs, drawn exactly representable
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


class SpecError(ValueError):
    """A spec whose annotations cannot be turned into tensors."""


@dataclass(frozen=True)
class TensorSpec:
    """The dtype and the symbolic shape of one annotated argument or result."""

    name: str
    dtype: torch.dtype
    dims: tuple[str, ...]

    def shape(self, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(_eval_dim(d, sizes, self.name) for d in self.dims)


def _eval_dim(dim: str, sizes: dict[str, int], name: str) -> int:
    if dim.isdigit():
        return int(dim)
    try:
        value = eval(dim, {"__builtins__": {}}, dict(sizes))  # dims like "MID//8" are expressions
    except NameError as err:
        known = sorted(sizes)
        raise SpecError(f"the shape of `{name}` uses {err.name!r}, which is not among the sizes {known}") from None
    return int(value)


def tensor_spec(name: str, annotation: object) -> TensorSpec:
    """Read a jaxtyping annotation through its public attributes (`dtypes`, `dim_str`)."""
    dtypes = getattr(annotation, "dtypes", None)
    dim_str = getattr(annotation, "dim_str", None)
    if dtypes is None or dim_str is None:
        raise SpecError(f"`{name}` needs a jaxtyping annotation such as Float32[Tensor, \"N0\"], got {annotation!r}")
    if len(dtypes) != 1 or dtypes[0] not in _DTYPES:
        raise SpecError(f"`{name}` must name exactly one concrete dtype (Float32, Int32, ...), got {dtypes}")
    return TensorSpec(name, _DTYPES[dtypes[0]], tuple(dim_str.split()))


@dataclass(frozen=True)
class ParsedSpec:
    """One spec function, read once: what every step of grading needs to know of it."""

    fn: Callable[..., Any]
    input_names: tuple[str, ...]  # its tensor arguments, in order
    keyword_sizes: tuple[str, ...]  # keyword-only arguments: sizes it asks for by name (`*, M, BM`)
    tensors: tuple[tuple[TensorSpec, ...], TensorSpec] | None  # (inputs, result); None: see `problem`
    problem: str | None  # why the annotations cannot be turned into tensors

    @property
    def name(self) -> str:
        return self.fn.__name__

    def signature(self) -> tuple[list[TensorSpec], TensorSpec]:
        """The annotated inputs and the annotated result (SpecError where they cannot be read)."""
        if self.tensors is None:
            raise SpecError(self.problem)
        return list(self.tensors[0]), self.tensors[1]

    def call(self, inputs: list[torch.Tensor], sizes: dict[str, int]) -> Any:
        """Run the spec: its tensors by position, and the sizes it asks for by name."""
        return self.fn(*inputs, **{name: sizes[name] for name in self.keyword_sizes})


_PARSED: weakref.WeakKeyDictionary[Callable[..., Any], ParsedSpec] = weakref.WeakKeyDictionary()


def parse_spec(spec: Callable[..., Any]) -> ParsedSpec:
    """The spec read once per process (a redefined spec is a new function, read anew)."""
    try:
        return _PARSED[spec]
    except (KeyError, TypeError):
        pass
    params = inspect.signature(spec).parameters.items()
    names = tuple(n for n, p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY)
    keyword = tuple(n for n, p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)
    try:
        tensors, problem = _read_annotations(spec, names), None
    except SpecError as err:
        tensors, problem = None, str(err)
    parsed = ParsedSpec(spec, names, keyword, tensors, problem)
    try:
        _PARSED[spec] = parsed
    except TypeError:  # not weakly referenceable (a builtin): read again next time
        pass
    return parsed


def _read_annotations(spec: Callable[..., Any], names: tuple[str, ...]) -> tuple[tuple[TensorSpec, ...], TensorSpec]:
    import jaxtyping

    # Annotations may be strings (`from __future__ import annotations`): resolve them with the
    # usual names available even when the spec's module imported them somewhere else.
    fallback = {name: getattr(jaxtyping, name) for name in dir(jaxtyping) if name[:1].isupper()}
    fallback["Tensor"] = torch.Tensor
    try:
        hints = typing.get_type_hints(spec, globalns={**fallback, **getattr(spec, "__globals__", {})})
    except NameError as err:
        raise SpecError(f"cannot read the annotations of {spec.__name__}: {err}") from None
    missing = [p for p in [*names, "return"] if p not in hints]
    if missing:
        raise SpecError(f"{spec.__name__} must annotate every argument and its result; missing: {missing}")
    return tuple(tensor_spec(p, hints[p]) for p in names), tensor_spec("z", hints["return"])


def spec_input_names(spec: Callable[..., Any]) -> list[str]:
    """The spec's tensor arguments; keyword-only arguments are sizes, not tensors."""
    return list(parse_spec(spec).input_names)


def call_spec(spec: Callable[..., Any], inputs: list[torch.Tensor], sizes: dict[str, int]) -> Any:
    """Run a spec: its tensors by position, and any size it asks for (`*, M, BM`) by name."""
    return parse_spec(spec).call(inputs, sizes)


def spec_signature(spec: Callable[..., Any]) -> tuple[list[TensorSpec], TensorSpec]:
    """The annotated inputs and the annotated result of a spec function."""
    return parse_spec(spec).signature()
