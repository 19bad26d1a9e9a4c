"""Common slips of puzzles 24-26 (seeded dropout, layer norm forward and backward), computed as
`puzzles/course/mistakes.py` computes those of puzzles 1-21: what the spec gives with one mistake in it,
from the same inputs, so that a wrong output matching one of them is told which slip it is. Each function
gets the spec's inputs by name and the size, and returns the output the slip produces, in the spec's
dtype and shape. (Puzzles 27 and 28 keep theirs in `mistakes_training.py`.)
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.philox import rand
from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


# -- puzzle 24: seeded dropout ----------------------------------------------------------------------------

def _dropout(i: Inputs, sizes: Sizes, draws: Tensor, *, keep_above: bool = True, rescale: bool = True) -> Tensor:
    """Dropout of x with the random numbers `draws` (one per element): kept where the draw is above p
    (`keep_above=False`: below it), kept values divided by 1 - p (`rescale=False`: left as they are)."""
    x, p = i["x"], torch.tensor(sizes["p"], dtype=torch.float32)
    keep = draws > p if keep_above else draws < p
    return torch.where(keep, x / (1 - sizes["p"]) if rescale else x, 0.0).to(x.dtype)


def _columns(i: Inputs) -> Tensor:
    return torch.arange(i["x"].shape[1])[None, :]


def dropout_flat_offsets(i: Inputs, sizes: Sizes) -> Tensor:
    """Each row's own seed, drawn at the flat element index row * N0 + column instead of the column."""
    rows = torch.arange(i["x"].shape[0])[:, None]
    return _dropout(i, sizes, rand(i["seeds"][:, None], rows * sizes["N0"] + _columns(i)))


def dropout_block_offsets(i: Inputs, sizes: Sizes) -> Tensor:
    """Drawn at tl.arange(0, B0) alone, the lane within the block: every block of a row repeats the mask of
    the first (and another block size gives another mask)."""
    return _dropout(i, sizes, rand(i["seeds"][:, None], _columns(i) % sizes["B0"]))


def dropout_first_seed(i: Inputs, sizes: Sizes) -> Tensor:
    """seeds[0] for every row (the seed loaded without the row): every row gets row 0's mask."""
    return _dropout(i, sizes, rand(i["seeds"][:1, None], _columns(i)).expand_as(i["x"]))


def dropout_one_seed_flat(i: Inputs, sizes: Sizes) -> Tensor:
    """One seed for the whole matrix at the flat index (the 1-D dropout kernel run over the matrix)."""
    rows = torch.arange(i["x"].shape[0])[:, None]
    return _dropout(i, sizes, rand(i["seeds"][:1, None], rows * sizes["N0"] + _columns(i)))


def dropout_keep_below(i: Inputs, sizes: Sizes) -> Tensor:
    """Kept where the draw is below p: the probability of keeping is p, not 1 - p."""
    return _dropout(i, sizes, rand(i["seeds"][:, None], _columns(i)), keep_above=False)


def dropout_not_rescaled(i: Inputs, sizes: Sizes) -> Tensor:
    """The kept values not divided by 1 - p: the output's expectation is (1 - p) x instead of x."""
    return _dropout(i, sizes, rand(i["seeds"][:, None], _columns(i)), rescale=False)


# -- puzzle 25: layer norm forward ------------------------------------------------------------------------

def _layernorm(i: Inputs, sizes: Sizes, *, divisor: int | None = None, unbiased: bool = False,
               padding_in_variance: bool = False, eps_outside: bool = False, swap_affine: bool = False) -> Tensor:
    """Layer norm of each row (in float64, rounded once), with one step changed: the mean and the variance
    divided by `divisor` instead of N (the row padded to whole blocks), the variance by N - 1, the padding
    lanes of the last block counted in the variance as (0 - mean)^2, eps added after the square root, or the
    weight and the bias swapped."""
    x, w, b = i["x"].double(), i["w"].double(), i["b"].double()
    n = x.shape[1]
    count = divisor or n
    mean = x.sum(1, keepdim=True) / count
    squares = ((x - mean) ** 2).sum(1, keepdim=True)
    if padding_in_variance:
        squares = squares + (-(-n // sizes["BN"]) * sizes["BN"] - n) * mean ** 2
    var = squares / (n - 1 if unbiased else count)
    scale = 1 / (var.sqrt() + sizes["eps"]) if eps_outside else 1 / (var + sizes["eps"]).sqrt()
    if swap_affine:
        w, b = b, w
    return ((x - mean) * scale * w + b).float()


def layernorm_unbiased(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm(i, sizes, unbiased=True)


def layernorm_eps_outside(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm(i, sizes, eps_outside=True)


def layernorm_padding_in_variance(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm(i, sizes, padding_in_variance=True)


def layernorm_padded_count(i: Inputs, sizes: Sizes) -> Tensor:
    n = i["x"].shape[1]
    return _layernorm(i, sizes, divisor=-(-n // sizes["BN"]) * sizes["BN"])


def layernorm_affine_swapped(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm(i, sizes, swap_affine=True)


# -- puzzle 26: layer norm backward ------------------------------------------------------------------------

def _layernorm_backward(i: Inputs, sizes: Sizes, *, mean_terms: bool = True, weight_in_dx: bool = True,
                        divisor: int | None = None, dw_from_x: bool = False) -> Tensor:
    """Puzzle 26's output (dx, then the rows dw and db) in float64, rounded once, with one step changed: dx
    without its two row means (`mean_terms`), with dy where w · dy belongs (`weight_in_dx`), the row means
    divided by `divisor` instead of N, or dw summed from x instead of x̂."""
    x, w, dy = i["x"].double(), i["w"].double(), i["dy"].double()
    mean, rstd = i["mean"].double()[:, None], i["rstd"].double()[:, None]
    xhat = (x - mean) * rstd
    wdy = w * dy if weight_in_dx else dy
    count = divisor or x.shape[1]
    c1 = (xhat * wdy).sum(1, keepdim=True) / count
    c2 = wdy.sum(1, keepdim=True) / count
    dx = (wdy - (xhat * c1 + c2)) * rstd if mean_terms else wdy * rstd
    dw = (dy * (x if dw_from_x else xhat)).sum(0, keepdim=True)
    return torch.cat([dx, dw, dy.sum(0, keepdim=True)]).float()


def layernorm_dx_without_means(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, mean_terms=False)


def layernorm_dx_without_weight(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, weight_in_dx=False)


def layernorm_dx_means_over_block(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, divisor=sizes["BN"])


def layernorm_dw_from_x(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, dw_from_x=True)
