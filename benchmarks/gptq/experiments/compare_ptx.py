"""Whether a refactoring kept the GPTQ kernels' code: compile the Triton launches of a few plans for sm_90
offline (no GPU needed) and print a digest of each PTX, debug info stripped and kernel names normalised
(the split of kernel.py by job made ``_gptq_small_m_kernel`` ``gptq_small_m_kernel``, and so on).
Run it against two trees and compare the output:

    PYTHONPATH=OLD_TREE python3 benchmarks/gptq/experiments/compare_ptx.py > old.json
    PYTHONPATH=$PWD python3 benchmarks/gptq/experiments/compare_ptx.py > new.json; diff old.json new.json

The inline-PTX dequantization is compiled in (PTX_DEQUANT, as on a GPU), though the plans are built on CPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

os.environ["TRITON_INTERPRET"] = "0"  # before triton is imported: compile, do not interpret
import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.runtime.jit import create_function_from_signature  # noqa: E402

from solutions.gptq import GPTQConfig, load_gptq_layer, quantize_rtn  # noqa: E402

try:
    from solutions.gptq.plans import Plan
except ImportError:  # a tree from before the split (issue 23)
    from solutions.gptq.kernel import _Plan as Plan

TARGET = GPUTarget("cuda", 90, 32)
BACKEND = make_backend(TARGET)
KERNEL_NAMES = (r"(?<![A-Za-z0-9])_?"
                r"(gptq_small_m_kernel|gptq_large_m_kernel|splitk_reduce_kernel|dequant_to_fp16_kernel)")


def ptx_digest(launch, c_dtype: torch.dtype) -> tuple[str, int]:
    """(sha256 prefix, lines) of the launch's PTX for sm_90, without debug info, names normalised."""
    fn = launch.fn
    names = [p.name for p in fn.params]
    kwargs = dict(launch.kwargs)
    if "PTX_DEQUANT" in kwargs:
        kwargs["PTX_DEQUANT"] = True
    positional = list(launch.args[: launch.n_positional])
    for i, value in enumerate(positional):
        if value is None:  # A and C are given per call
            positional[i] = torch.empty(64, dtype=torch.float16 if names[i] == "a_ptr" else c_dtype)
    binder = create_function_from_signature(fn.signature, fn.params, BACKEND)
    bound, specialization, opts = binder(*positional, **kwargs, **launch.options)
    opts, signature, constexprs, attrs = fn._pack_args(BACKEND, {**kwargs, **launch.options}, bound,
                                                       specialization, opts)
    compiled = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=TARGET, options=opts.__dict__)
    ptx = compiled.asm["ptx"].split(".section\t.debug")[0].split(".section .debug")[0]
    skipped = (".loc", ".file", "//", "$L__tmp")
    ptx = "\n".join(line for line in ptx.splitlines() if not line.strip().startswith(skipped))
    ptx = re.sub(r"\$L__tmp\d+", "$L__tmp", ptx)  # debug labels of inlined scopes: a helper function adds some
    ptx = re.sub(KERNEL_NAMES, r"K_\1", ptx)
    return hashlib.sha256(ptx.encode()).hexdigest()[:16], len(ptx.splitlines())


def main() -> None:
    k, n = 1024, 1152
    layer = quantize_rtn(torch.randn(k, n, generator=torch.Generator().manual_seed(0)) * 0.02, 128)
    repacked = load_gptq_layer(layer.tensors, layer.quantize_config)
    plain = load_gptq_layer(layer.tensors, layer.quantize_config, keep_plain=True)
    cases = {  # (M, weight, config, deterministic)
        "decode_m1": (1, repacked, GPTQConfig(16, 128, 128, 8, 16, 4, 2, maxnreg=128), False),
        "m64_scale_weights": (64, repacked, GPTQConfig(64, 128, 128, 8, 4, 4, 3, scale_after_dot=False), False),
        "prefill_8warps": (300, repacked, GPTQConfig(256, 128, 128, 8, 1, 8, 3), False),
        "deterministic_m17": (17, repacked, GPTQConfig(16, 128, 128, 8, 4, 4, 3), True),
        "plain_swapped": (5, plain, GPTQConfig(16, 64, 64, 8, 2, 4, 2), False),
        "published_unswapped": (5, plain, GPTQConfig(16, 32, 128, 8, 4, 4, 3, swap_ab=False), False),
    }
    out = {}
    for name, (m, weight, cfg, deterministic) in cases.items():
        plan = Plan(torch.randn(m, k).half(), weight, cfg, deterministic, "fused")
        launches = list(plan.launches) + ([plan.reduce] if plan.partial else [])
        out[name] = [ptx_digest(launch, torch.float32 if deterministic else torch.float16) for launch in launches]
    plan = Plan(torch.randn(3, k).half(), repacked, None, False, "dequant")
    out["dequant_path"] = [ptx_digest(plan.launches[0], torch.float16)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
