"""Programmatic dependent launch (PDL, Hopper and later): a kernel that starts before the one before it ends.

In a CUDA graph of many short kernels (a decoding step: about 130 of them), each kernel still costs
its launch latency and its ramp: its programs start only once the previous kernel has drained, and
only then do its first weight reads go out. With PDL the next kernel is launched as soon as every
program of the running one has called :func:`start_next_kernel`; its programs do what does not depend
on the previous kernel (here: ask the L2 cache for this program's weights, :func:`prefetch_to_l2`), then
wait in :func:`wait_for_previous_kernel` until the previous kernel has finished and its writes are visible.

The rule that keeps this correct: a kernel launched with PDL touches nothing that an earlier kernel
writes or reads before its wait (reading the weights is fine: no kernel of the step writes them).
Since every kernel waits for the one before it, and that one waited for its own predecessor, after the
wait every earlier kernel of the stream has finished. A kernel launched without PDL (cuBLAS, torch)
waits for everything before it, as always.

The kernels take ``PDL`` as a constexpr made of the flags below: 0 compiles none of this (and runs under
Triton's interpreter); any other value also needs the launch's ``launch_pdl=True`` to overlap anything
(the instructions are harmless without it). :func:`pdl_available` says where to ask for it.

Measured on an H100 and an H200 (benchmarks/gptq/experiments/ab_pdl.py, results/h100_pdl/): the step's
small kernels letting the next kernel start first thing and the matmuls only after their main loop took
a 16-layer Llama step from 1.154 to 1.091 ms (H100, batch 1); the matmuls letting it start first thing
lost at batch 8; asking L2 for a matmul program's whole weight share lost everywhere (up to 25% slower),
for its first K step only won 1-1.5%, for two or three steps lost again (``DECODE``: those three).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

try:  # Triton 3.3+ (griddepcontrol); without it PDL is simply never used
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # pragma: no cover - older Triton
    gdc_launch_dependents = gdc_wait = None


# Flags of a kernel's PDL constexpr.
WAIT = tl.constexpr(1)  # launched with PDL: wait for the previous kernel before any memory access
PREFETCH = tl.constexpr(2)  # the matmul asks L2 for its weight share before it waits
MATMUL_EARLY = tl.constexpr(4)  # the matmul lets the next kernel start first thing (else after its main loop)
STEP_EARLY = tl.constexpr(8)  # the step's other kernels let the next start first thing (else at their end)
# As PREFETCH, only the first K steps of the share: the two bits count them (16: one, 32: two, 48: three).
PREFETCH_FIRST = tl.constexpr(16)
PREFETCH_TWO = tl.constexpr(32)
DECODE = WAIT.value | STEP_EARLY.value | PREFETCH_FIRST.value  # what the lean decoder uses (the fastest measured)


def pdl_available(device: torch.device | str | None = None) -> bool:
    """Whether kernels on ``device`` can be launched with PDL: a CUDA GPU of compute capability 9.0 or
    later (griddepcontrol is a Hopper instruction), a Triton that has it, and not the interpreter."""
    if gdc_wait is None or not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET", "0") == "1":
        return False
    device = torch.device("cuda") if device is None else torch.device(device)
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9


@triton.jit
def start_next_kernel():
    """Let the next kernel (launched with PDL) start once every program of this one got here."""
    gdc_launch_dependents()


@triton.jit
def wait_for_previous_kernel():
    """Block until the previous kernel of the stream has finished and its memory writes are visible."""
    gdc_wait()


@triton.jit
def prefetch_to_l2(ptrs):
    """Ask the L2 cache to fetch the 128-byte lines holding ``ptrs`` (a tensor of pointers); nothing is
    returned and nothing waits for it. Use one pointer per line."""
    tl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l", [ptrs], dtype=tl.int32,
                              is_pure=False, pack=1)


def pdl_flags(pdl: bool | int) -> int:
    """The flags that a ``pdl`` argument asks for: True is ``DECODE``, False none, an int those flags."""
    return DECODE if pdl is True else int(pdl)


def pdl_kwargs(pdl: bool | int) -> dict:
    """The keywords of a launch of one of our kernels with ``pdl`` (:func:`pdl_flags`): its PDL constexpr and,
    where it is on, ``launch_pdl``."""
    flags = pdl_flags(pdl)
    return {"PDL": flags, **launch_options(flags)}


def launch_options(flags: int) -> dict:
    """The launch keywords of a kernel call with ``PDL=flags`` (none without, so the interpreter never sees one)."""
    return {"launch_pdl": True} if flags else {}
