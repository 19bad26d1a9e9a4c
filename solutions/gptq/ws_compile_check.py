"""Offline check of the warp-specialised prefill kernel (:mod:`solutions.gptq.ws_prefill`): compile it for
sm_90 on any machine, GPU or not, and report the wgmma count and what ptxas says (serialised wgmma,
spills). tests/gptq/test_gptq_ws.py runs it in a subprocess, one line of JSON per tile:

    python -m solutions.gptq.ws_compile_check 128,4 256,3
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend
from triton.runtime.jit import create_function_from_signature

from solutions.gptq import ws_prefill
from solutions.gptq.loader import load_gptq_layer
from solutions.gptq.quantize import quantize_rtn


def compile_report(block_m: int, stages: int) -> dict:
    """Compile the kernel for sm_90 without a GPU (Triton's own compiler and ptxas) and report what
    matters: the wgmma count in the PTX and ptxas's verbose output (serialised wgmma, spills).

        python -m solutions.gptq.ws_compile_check 128,4 256,3     (needs TRITON_INTERPRET unset or 0)
    """
    # Imported here: a Triton without Gluon can still import this module (and skip the check).
    from triton.experimental.gluon._runtime import GluonASTSource

    m, k, n = 1024, 512, 256
    layer = quantize_rtn(torch.randn(k, n, generator=torch.Generator().manual_seed(0)) * 0.02, 128)
    weight = load_gptq_layer(layer.tensors, layer.quantize_config)
    kernel, grid, args, options, a_descriptor = ws_prefill.launch_spec(m, weight, block_m, stages)
    args[0], args[4] = a_descriptor(torch.empty(m, k, dtype=torch.float16)), torch.empty(m, n, dtype=torch.float16)
    args[5] = torch.empty(1, dtype=torch.float32)
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, opts = binder(*args, **options)
    opts, signature, constexprs, attrs = kernel._pack_args(backend, options, bound, specialization, opts)
    compiled = triton.compile(GluonASTSource(kernel, signature, constexprs, attrs), target=target,
                              options=opts.__dict__)
    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "ws.ptx")
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        report = subprocess.run([ptxas, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(tmp, "ws.cubin")],
                                capture_output=True, text=True, check=True).stderr
    return {"tile": [block_m, stages], "wgmma": compiled.asm["ptx"].count("wgmma.mma_async"),
            "shared_bytes": compiled.metadata.shared, "ptxas": report}


if __name__ == "__main__":
    for spec in sys.argv[1:] or ["128,4", "256,2", "256,3"]:
        print(json.dumps(compile_report(*(int(x) for x in spec.split(",")))))

