"""Common slips of puzzle 31 (a pipelined, warp-specialized float16 matmul through tensor descriptors), computed:
the output a kernel with one slip in it stores, from the same inputs (see mistakes.py for how a verdict uses them).

Both slips are in the K loop, the part this puzzle rewrites; each is the same for every tile, so it is played on
the whole of x and y at once: float32 products of float16 inputs, the descriptor's zeros past K, a float16 result.

Not here: a loop that is right in values but not pipelined or not warp-specialized. Its values are the spec's;
the compiled rule (puzzles/running/compiled_code/rules.py, judge_pipeline) names what its compiled loop lacks.
"""

from __future__ import annotations

from torch import Tensor

from puzzles.course.puzzle import Sizes, cdiv

Inputs = dict[str, Tensor]


def chunk_product(x: Tensor, y: Tensor, k0: int, width: int) -> Tensor:
    """x[:, k0:k0+width] @ y[k0:k0+width, :] in float32, the columns past K read as zeros (a descriptor's load)."""
    return x[:, k0:k0 + width].float() @ y[k0:k0 + width, :].float()


def last_chunk_only(inputs: Inputs, sizes: Sizes) -> Tensor:
    """`acc = tl.dot(x_tile, y_tile)` replaces the accumulator each chunk: z is the last chunk's product."""
    x, y = inputs["x"], inputs["y"]
    last = (cdiv(sizes["K"], sizes["BK"]) - 1) * sizes["BK"]
    return chunk_product(x, y, last, sizes["BK"]).half()


def coordinates_in_chunks(inputs: Inputs, sizes: Sizes) -> Tensor:
    """The loop counts chunks (`for k in tl.range(0, tl.cdiv(K, BK), ...)`) and loads at [m0, k], [k, n0]: a
    descriptor counts elements, so chunk j starts at column j, not j·BK, and the chunks overlap."""
    x, y = inputs["x"], inputs["y"]
    total = sum(chunk_product(x, y, j, sizes["BK"]) for j in range(cdiv(sizes["K"], sizes["BK"])))
    return total.half()


def coordinates_in_chunks_where(sizes: Sizes) -> str:
    """Which columns the slip read at this size."""
    chunks = cdiv(sizes["K"], sizes["BK"])
    return (f"at K = {sizes['K']}, BK = {sizes['BK']} the {chunks} chunks started at columns 0 … {chunks - 1} "
            f"instead of 0, {sizes['BK']}, … {(chunks - 1) * sizes['BK']}")
