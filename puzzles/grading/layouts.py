"""Inputs the grader lays out itself: strided views of a larger storage.

A puzzle that teaches strides (puzzle 19) names, per input, the sizes that hold its stride
along each axis (`Puzzle.strided_inputs`). The grader allocates the whole storage those
strides span, fills all of it (the gaps too, so a kernel that reads a gap gets noise, not a
lucky zero), and hands the spec the strided view and the kernel its first element's address. The
access check guards the gaps: a read of a byte that is no element of the view is reported as an access
outside the tensor (`strided_layout`, recording.StridedLayout).
"""

from __future__ import annotations

import torch

from puzzles.course.puzzle import Sizes
from puzzles.running.recording import StridedLayout


def strides_of(names: tuple[str, ...], sizes: Sizes) -> tuple[int, ...]:
    """The strides, in elements, that a puzzle's sizes give an input."""
    return tuple(sizes[n] for n in names)


def storage_numel(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements of the smallest storage that holds a view of this shape and these strides."""
    if len(shape) != len(strides):
        raise ValueError(f"{len(shape)} axes but {len(strides)} strides")
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0


def strided_view(storage: torch.Tensor, shape: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
    """The view of a flat storage that the kernel is asked to read."""
    return torch.as_strided(storage, shape, strides)


def strided_layout(shape: tuple[int, ...], names: tuple[str, ...], sizes: Sizes) -> StridedLayout:
    """What the access check needs to guard the bytes between a strided view's elements."""
    strides = strides_of(names, sizes)
    return StridedLayout(tuple(shape), strides, names, storage_numel(tuple(shape), strides))
