"""Common slips of puzzle 31 (a pipelined, warp-specialized float16 matmul through tensor descriptors), computed:
the output a kernel with one slip in it stores, from the same inputs (see mistakes.py for how a verdict uses them).

Each is played on the whole of x and y at once: float32 products of float16 inputs, the descriptor's zeros past K
and the columns of z past N dropped, a float16 result.

Not slips here (no computed output would match them): m0 and n0 from swapped program ids (each tile the
programs reach gets right values; the grader names the rows never written), and a loop that counts chunks and
loads at [m0, k] (its coordinates are no multiples of 16 bytes: the interpreter stops at the load, and
puzzles/running/errors.py says that a descriptor counts elements).

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


def y_loaded_at_swapped_corner(inputs: Inputs, sizes: Sizes) -> Tensor:
    """y's tile loaded at [n0, k0] instead of [k0, n0]: each chunk multiplies x's tile by the BK × BN block of y
    whose first row is n0 and first column k0 (zeros past y's edges), tile column by tile column."""
    x, y = inputs["x"].float(), inputs["y"].float()
    m_size, n_size, k_size = sizes["M"], sizes["N"], sizes["K"]
    bn, bk = sizes["BN"], sizes["BK"]
    tiles_n, chunks = cdiv(n_size, bn), cdiv(k_size, bk)
    x_padded = x.new_zeros(m_size, chunks * bk)
    x_padded[:, :k_size] = x
    y_padded = y.new_zeros(max(k_size, tiles_n * bn + bk), max(n_size, chunks * bk + bn))
    y_padded[:k_size, :n_size] = y
    z = x.new_zeros(m_size, tiles_n * bn)
    for n0 in range(0, tiles_n * bn, bn):
        for k0 in range(0, k_size, bk):
            z[:, n0:n0 + bn] += x_padded[:, k0:k0 + bk] @ y_padded[n0:n0 + bk, k0:k0 + bn]
    return z[:, :n_size].half()
