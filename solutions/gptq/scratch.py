"""Scratch memory for kernels whose programs hand partial sums to each other within one launch.

Two kernels do: the warp-specialised prefill kernel with stream-K (:mod:`solutions.gptq.ws_prefill`) and the
fused kernel's split-K where the last share of a tile adds up the others (:mod:`solutions.gptq.kernels`,
``SUM_SHARES``). Both keep a float32 buffer whose first ``head`` words are flags or counters, which must be
zero when a launch starts and which every launch leaves zero when it ends; the rest holds partial sums
(which the fused kernel also leaves zero: it adds into them). The zeroing is done once, when a buffer is
made; each kernel keeps its flags at the same place in every launch.

One buffer per (device, stream): launches on different streams never share counters, and launches on one
stream run in order. Under CUDA-graph capture a stream that has no buffer yet (or too small a one) gets a
buffer for that launch alone, the zeroing of its head captured with it (a memset node in the graph: make
one eager call on the capture stream first to avoid it). A buffer that a larger launch outgrew is kept
alive, never freed: a CUDA graph captured earlier may still write into it.
"""

from __future__ import annotations

import torch
from torch import Tensor


class StreamScratch:
    """Float32 scratch buffers, one per (device, stream), their head (or all of them: ``zero_all``) zeroed
    when made; the kernels that use one rezero what they count or add into, so it stays zero between launches."""

    def __init__(self, keep: int = 8, zero_all: bool = False) -> None:
        self.zero_all = zero_all
        self.keep = keep  # streams whose buffers are kept: code making a stream per call must not grow memory
        self.buffers: dict[tuple[str, int | None, int], Tensor] = {}  # oldest first
        self.outgrown: list[Tensor] = []

    def get(self, device: torch.device, stream: int, words: int, head: int = 0) -> Tensor:
        """A buffer of at least ``words`` float32 words for launches on ``stream``, the first ``head`` zero."""
        key = (device.type, device.index, stream)
        buf = self.buffers.get(key)
        needed = words
        if buf is not None and buf.numel() >= needed:
            return buf
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            return zeroed_head(needed, needed if self.zero_all else head, device)
        if buf is not None:
            self.outgrown.append(self.buffers.pop(key))
            needed = max(needed, 2 * buf.numel())
        elif len(self.buffers) >= self.keep:
            # Freed in stream order: the caching allocator hands its memory only to later work on that
            # stream, which runs after every launch that used it.
            del self.buffers[next(iter(self.buffers))]
        buf = self.buffers[key] = zeroed_head(needed, needed if self.zero_all else head, device)
        return buf


def zeroed_head(words: int, head: int, device: torch.device) -> Tensor:
    buf = torch.empty(words, dtype=torch.float32, device=device)
    buf[:head].zero_()
    return buf


def current_stream(device: torch.device) -> int:
    """The handle of the current stream on ``device`` (0 for the CPU, where the interpreter runs kernels)."""
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
