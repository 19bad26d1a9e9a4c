"""Production GPTQ int4 dequantize-and-multiply (split-K) kernels, their loader, quantizer and configs.

    from solutions.gptq import load_gptq_layer, gptq_matmul
    weight = load_gptq_layer(layer_tensors, quantize_config)
    y = gptq_matmul(x, weight)          # x fp16 (..., K) -> y fp16 (..., N)
"""

from solutions.gptq.configs import GPTQConfig
from solutions.gptq.loader import GPTQWeight, dequantize, load_gptq_layer
from solutions.gptq.matmul import gptq_matmul
from solutions.gptq.plans import plan_split_k
from solutions.gptq.quantize import (
    QuantizedLayer,
    pack_int4_along_k,
    pack_int4_along_n,
    quantize_rtn,
    unpack_int4_along_k,
    unpack_int4_along_n,
)

__all__ = [
    "GPTQConfig",
    "GPTQWeight",
    "QuantizedLayer",
    "dequantize",
    "gptq_matmul",
    "load_gptq_layer",
    "pack_int4_along_k",
    "pack_int4_along_n",
    "plan_split_k",
    "quantize_rtn",
    "unpack_int4_along_k",
    "unpack_int4_along_n",
]
