"""Tensors drawn from a spec's jaxtyping annotations (read once: puzzles/course/spec.py), laid out in a
guarded arena.

Every tensor of one run
is carved out of one byte buffer with guard zones between them, so an out-of-bounds pointer
lands in a guard zone and is attributed to the tensor it came from, never to a neighbour.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from puzzles.course.spec import spec_signature

# A NaN with a payload no arithmetic produces: an element still holding it was never written.
_FLOAT_POISON_BITS = {
    torch.float32: (torch.int32, 0x7FC0DEAD),
    torch.float64: (torch.int64, 0x7FF80000DEADBEEF),
    torch.float16: (torch.int16, 0x7E5D),
    torch.bfloat16: (torch.int16, 0x7FDD),
}
_INT_POISON = {
    torch.int32: -0x21524111,  # 0xDEADBEEF as a signed word
    torch.int64: -0x21524111,
    torch.int16: -0x2153,
    torch.int8: -0x53,
    torch.uint8: 0xAD,
    torch.bool: True,
}

GUARD_BYTES = 4096
# An index scaled by a word's 8 nibbles (or an element index used as a byte offset of an int64) runs up to
# 8 tensors past the end: the guard after each tensor covers that.
OVERSHOOT_TENSORS = 8
ALIGN = 128


def random_tensor(
    shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator, scale: float = 1.0
) -> torch.Tensor:
    """Floats uniform in [-scale, scale) (centred on zero, so relu and signs matter);
    ints uniform over the whole range of their type (so every bit, top nibbles included, varies)."""
    if dtype.is_floating_point:
        values = (torch.rand(shape, generator=generator, dtype=torch.float32) * 2 - 1) * scale
        return values.to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    info = torch.iinfo(dtype)
    if dtype == torch.int64:
        high = torch.randint(-(2**31), 2**31, shape, generator=generator, dtype=torch.int64)
        low = torch.randint(0, 2**32, shape, generator=generator, dtype=torch.int64)
        return (high << 32) | low
    return torch.randint(info.min, info.max + 1, shape, generator=generator, dtype=torch.int64).to(dtype)


def draw_inputs(spec: typing.Callable, sizes: dict[str, int], seed: int, device: str = "cpu",
                scale: float = 1.0) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Random inputs for `spec` at `sizes` on `device`, and an empty output (for timing)."""
    inputs, out = spec_signature(spec)
    gen = torch.Generator().manual_seed(seed)
    tensors = [random_tensor(t.shape(sizes), t.dtype, gen, scale).to(device) for t in inputs]
    return tensors, torch.empty(out.shape(sizes), dtype=out.dtype, device=device)


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill with the never-written marker of its dtype."""
    if t.dtype in _FLOAT_POISON_BITS:
        int_dtype, bits = _FLOAT_POISON_BITS[t.dtype]
        t.view(int_dtype).fill_(bits)
    else:
        t.fill_(_INT_POISON[t.dtype])
    return t


def unwritten_mask(t: torch.Tensor) -> torch.Tensor:
    """True where an element still holds the poison written before the run."""
    if t.dtype in _FLOAT_POISON_BITS:
        int_dtype, bits = _FLOAT_POISON_BITS[t.dtype]
        return t.view(int_dtype) == bits
    return t == _INT_POISON[t.dtype]


@dataclass
class Arena:
    """One byte buffer holding every tensor of a run, each between guard zones."""

    buffer: torch.Tensor
    tensors: dict[str, torch.Tensor]
    offsets: dict[str, int]  # byte offset of each tensor in the buffer
    # Names that are another region's tensor under a second name (puzzle 21's z_ptr is the first
    # output tensor, as in the notebook's launch): passed to the kernel, never a region of their own.
    aliases: dict[str, str] = field(default_factory=dict)
    # Builds the judged output from the arena when it is not simply `z` (outputs in allocations of their own).
    gather: Callable[[Arena], torch.Tensor] | None = None

    def regions(self) -> list[tuple[int, int, str]]:
        """(first byte address, one past last byte address, name), by address."""
        out = []
        for name, t in self.tensors.items():
            if name in self.aliases:
                continue
            start = t.data_ptr()
            out.append((start, start + t.numel() * t.element_size(), name))
        return sorted(out)

    def output(self) -> torch.Tensor:
        """A copy of what the kernel wrote, as the spec returns it."""
        return self.gather(self) if self.gather is not None else self.tensors["z"].clone()


def build_arena(shapes: dict[str, tuple[tuple[int, ...], torch.dtype]], device: str = "cpu") -> Arena:
    """Allocate the named tensors in one buffer, with a guard zone before, between and after."""
    offsets: dict[str, int] = {}
    cursor = GUARD_BYTES
    for name, (shape, dtype) in shapes.items():
        nbytes = max(1, _numel(shape)) * torch.empty((), dtype=dtype).element_size()
        offsets[name] = cursor
        # The guard after a tensor is OVERSHOOT_TENSORS times its size (at least GUARD_BYTES), so a
        # pointer that overshoots by that much stays attributable to it and is reported out of bounds,
        # instead of landing in the next tensor as an access that looks in bounds.
        cursor = _round_up(cursor + nbytes + max(GUARD_BYTES, OVERSHOOT_TENSORS * nbytes), ALIGN)
    buffer = torch.empty(cursor + GUARD_BYTES, dtype=torch.uint8, device=device)
    base = buffer.data_ptr()
    shift = (-base) % ALIGN
    tensors = {}
    for name, (shape, dtype) in shapes.items():
        start = offsets[name] + shift
        nbytes = _numel(shape) * torch.empty((), dtype=dtype).element_size()
        tensors[name] = buffer[start : start + nbytes].view(dtype).view(shape)
    return Arena(buffer, tensors, {n: o + shift for n, o in offsets.items()})


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple
