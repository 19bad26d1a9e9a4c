"""Puzzle 18's speed baseline: the production kernel on the puzzle's own tensors.

`test(..., perf=True)` for puzzle 18 times this beside the learner's kernel (the catalog names it
as "solutions.gptq.puzzle_baseline:launcher", so it is imported only on a GPU, and only there).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from solutions.gptq.loader import load_gptq_layer
from solutions.gptq.matmul import gptq_matmul


def launcher(inputs: list[Tensor], sizes: dict[str, int]) -> Callable[[], Tensor]:
    """Load the puzzle's (a, qweight, scales, qzeros) as a checkpoint's layer would be, and return
    a function that runs the production kernel once."""
    a, qweight, scales, qzeros = inputs
    weight = load_gptq_layer({"qweight": qweight, "qzeros": qzeros, "scales": scales},
                             {"bits": 4, "group_size": sizes["G"]})
    return lambda: gptq_matmul(a, weight)
