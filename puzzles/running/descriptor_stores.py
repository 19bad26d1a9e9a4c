"""A tensor descriptor's store as a GPU with TMA (sm_90 and later) performs it: in whole 16-byte chunks.

Triton's interpreter drops a descriptor store's lanes past the tensor's shape, element by element. The copy engine of
a Hopper or Blackwell GPU writes the innermost dimension in 16-byte chunks, so where that dimension's size in bytes is
no multiple of 16 (37 floats: 148 bytes) the store also writes the rest of the last chunk, past the tensor (up to 160
bytes: 12 bytes of whatever lies after it). Triton documents it as a hardware limitation (triton-lang/triton issue
11583). The recording (recording.py) stores those lanes too, so the grader reports them as the GPU would commit them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

CHUNK_BYTES = 16


def chunk_end(extent: int, itemsize: int) -> int:
    """The first element past the 16-byte chunk that holds element `extent - 1` of a row (`extent` itself where the
    row's bytes are a whole number of chunks)."""
    if itemsize <= 0 or extent <= 0:
        return extent
    return -(-extent * itemsize // CHUNK_BYTES) * CHUNK_BYTES // itemsize


def innermost(desc: Any) -> tuple[int, int]:
    """The descriptor's innermost extent in elements, and its element size in bytes."""
    return int(np.asarray(desc.shape[-1].data).item()), desc.base.dtype.element_ty.primitive_bitwidth // 8


def stored_lanes(desc: Any, offsets: list[Any], mask: np.ndarray) -> np.ndarray:
    """The lanes a TMA store of the descriptor's block at `offsets` writes: those within the tensor (`mask`, as
    Triton's interpreter computed it) and, along the innermost dimension, the rest of the last 16-byte chunk."""
    extent, itemsize = innermost(desc)
    end = chunk_end(extent, itemsize)
    if end == extent:
        return mask
    ndim = len(desc.block_shape)
    lanes = np.ones(desc.block_shape, dtype=bool)
    for dim in range(ndim):
        axis = [1] * ndim
        axis[dim] = desc.block_shape[dim]
        offset = (np.asarray(offsets[dim].data) + np.arange(desc.block_shape[dim])).reshape(axis)
        limit = end if dim == ndim - 1 else int(np.asarray(desc.shape[dim].data).item())
        lanes = lanes & (offset >= 0) & (offset < limit)
    return lanes


def note(desc: Any) -> str:
    """Why a descriptor store wrote past its tensor, in the learner's terms."""
    extent, itemsize = innermost(desc)
    row_bytes = extent * itemsize
    past = chunk_end(extent, itemsize) * itemsize - row_bytes
    return (f"a tensor descriptor's store is done in whole 16-byte chunks on a GPU with TMA (sm_90 and later): its "
            f"innermost dimension holds {extent} elements, {row_bytes} bytes, so the last chunk writes {past} bytes "
            f"past it. Store the ragged end through pointers with a mask (tl.store(ptr + offsets, value, "
            f"mask=offsets < N)), or keep descriptor stores to rows whose size is a multiple of 16 bytes")


class TmaStores:
    """Wraps a builder's `create_descriptor_store` so that its block is stored as TMA stores it; `current_note` is
    the reason while such a store writes lanes past the tensor (the recording attaches it to what it reports)."""

    def __init__(self) -> None:
        self.current_note = ""

    def wrap(self, store: Any) -> Any:
        def descriptor_store(desc: Any, value: Any, indices: list[Any], *rest: Any, **kwargs: Any) -> Any:
            materialize = desc.materialize_pointers

            def widened(offsets: list[Any]) -> Any:
                ptrs, mask = materialize(offsets)
                # A numpy array up to Triton 3.8, a TensorHandle of int1 from 3.9: given back as it came.
                handle = mask if hasattr(mask, "dtype") and not isinstance(mask, np.ndarray) else None
                inside = np.asarray(handle.data if handle is not None else mask, dtype=bool)
                lanes = stored_lanes(desc, offsets, inside)
                if (lanes & ~inside).any():
                    self.current_note = note(desc)
                return ptrs, (type(handle)(lanes, handle.dtype) if handle is not None else lanes)

            desc.materialize_pointers = widened  # this call only: the instance's own attribute, removed below
            try:
                return store(desc, value, indices, *rest, **kwargs)
            finally:
                del desc.materialize_pointers
                self.current_note = ""

        return descriptor_store
