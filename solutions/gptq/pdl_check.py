"""Offline check (no GPU needed) of the PDL rule (:mod:`solutions.gptq.pdl`) in every Triton kernel that the
lean decoding step launches: compiled for sm_90 with ``launch_pdl``, each kernel's PTX lets the next
kernel start (griddepcontrol.launch_dependents) and waits for the previous one (griddepcontrol.wait)
before any access to global memory, an L2 prefetch of the weights aside.

    python -m solutions.gptq.pdl_check        (one line per kernel; exit status 1 if one breaks the rule)

The kernels are called through the decoder's own wrappers and ``gptq_matmul`` on small CPU tensors, with
every launch captured instead of run, then compiled for sm_90 the way Triton compiles them on a GPU.
"""

from __future__ import annotations

import os
import re
import sys
from unittest import mock

os.environ["TRITON_INTERPRET"] = "0"  # before triton is imported: compile, do not interpret
import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.runtime.jit import JITFunction, create_function_from_signature  # noqa: E402

import solutions.gptq.plans as plans  # noqa: E402
from solutions.gptq import GPTQConfig, gptq_matmul, load_gptq_layer, quantize_rtn  # noqa: E402
from solutions.gptq.decode_kernels import add_rms_norm, greedy_pick, rope_attend, silu_mul  # noqa: E402
from solutions.gptq.pdl import DECODE, MATMUL_EARLY, PREFETCH, PREFETCH_FIRST, PREFETCH_TWO, WAIT  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
# A global access: ld/st/atom/red on global (or generic) addresses, asynchronous and bulk (TMA) copies.
GLOBAL_ACCESS = re.compile(r"^\s*(@%p\d+\s+)?(ld|st|atom|red)(?!\.(param|shared|local|const))\.|"
                           r"^\s*(@%p\d+\s+)?cp\.(async|reduce)")


def step_launches() -> list[tuple[JITFunction, tuple, dict]]:
    """(kernel, positional arguments, keyword arguments) of each distinct Triton launch of a decoding step
    with the decoder's flags (``pdl.DECODE``): the four step kernels and the int4 matmul (one share, and
    split-K into a zeroed C), and the matmul with the flags that experiments/ab_pdl.py tries."""
    launches: list[tuple[JITFunction, tuple, dict]] = []

    def capture(self, *args, grid, warmup, **kwargs):
        launches.append((self, args, kwargs))

    b, hidden, heads, kv_heads, d, length = 2, 256, 4, 2, 64, 16
    x = torch.randn(b, hidden).half()
    weight = load_gptq_layer(*_layer(hidden, 384))
    with mock.patch.object(JITFunction, "run", capture), mock.patch.object(plans, "pdl_available", _yes):
        add_rms_norm(x, torch.ones(hidden).half(), 1e-6, x.clone(), zero=torch.empty(64).half(), pdl=DECODE)
        add_rms_norm(x, torch.ones(hidden).half(), 1e-6, pdl=DECODE)
        qkv = torch.randn(b, (heads + 2 * kv_heads) * d).half()
        q, k, v = qkv.split([heads * d, kv_heads * d, kv_heads * d], dim=1)
        cache = torch.zeros(b, kv_heads, length, d).half()
        table = torch.randn(length, d).half()
        rope_attend(q, k, v, table, table, cache, cache.clone(), torch.zeros(1, dtype=torch.int32),
                    zero=torch.empty(64).half(), pdl=DECODE)
        silu_mul(x, x, zero=torch.empty(64).half(), pdl=DECODE)
        greedy_pick(x, torch.zeros(b, dtype=torch.long), torch.zeros(b, length, dtype=torch.long),
                    torch.zeros(1, dtype=torch.int32), pdl=DECODE)
        # The last two: experiments' flags (the whole share, the first three K steps).
        for split_k, flags in ((1, DECODE), (2, DECODE), (2, WAIT | PREFETCH | MATMUL_EARLY),
                               (2, WAIT | PREFETCH_FIRST | PREFETCH_TWO)):
            config = GPTQConfig(16, 128, 128, 1, split_k, 4, 3, maxnreg=128)
            gptq_matmul(x, weight, config=config, out=torch.zeros(b, 384).half(), out_zeroed=True, pdl=flags)
    return launches


def _yes(device=None) -> bool:
    return True


def _layer(k: int, n: int):
    layer = quantize_rtn(torch.randn(k, n, generator=torch.Generator().manual_seed(0)) * 0.02, 128)
    return layer.tensors, layer.quantize_config


def compile_ptx(fn: JITFunction, args: tuple, kwargs: dict) -> tuple[str, bool]:
    """(PTX for sm_90, whether the compiled kernel launches with PDL) of one captured launch."""
    backend = make_backend(TARGET)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=TARGET, options=options.__dict__)
    return compiled.asm["ptx"], bool(getattr(compiled.metadata, "launch_pdl", False))


def rule_breaks(ptx: str, launch_pdl: bool) -> list[str]:
    """What in this kernel breaks the PDL rule (empty: nothing)."""
    lines = [line for line in ptx.splitlines() if not line.strip().startswith(("//", ".loc", ".file"))]
    waits = [i for i, line in enumerate(lines) if "griddepcontrol.wait" in line]
    problems = [] if launch_pdl else ["not launched with launch_pdl"]
    if not any("griddepcontrol.launch_dependents" in line for line in lines):
        problems.append("never lets the next kernel start (no griddepcontrol.launch_dependents)")
    if not waits:
        return [*problems, "never waits for the previous kernel (no griddepcontrol.wait)"]
    early = [line.strip() for line in lines[: waits[0]] if GLOBAL_ACCESS.search(line)]
    return problems + [f"global access before the wait: {line}" for line in early[:3]]


def main() -> int:
    failed = False
    seen = set()
    for fn, args, kwargs in step_launches():
        key = (fn.__name__, tuple(sorted((k, v) for k, v in kwargs.items() if isinstance(v, (bool, int)))))
        if key in seen:
            continue
        seen.add(key)
        problems = rule_breaks(*compile_ptx(fn, args, kwargs))
        failed |= bool(problems)
        print(f"{fn.__name__}: {'; '.join(problems) if problems else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
