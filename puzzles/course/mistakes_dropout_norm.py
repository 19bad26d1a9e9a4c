"""Common slips of puzzles 24-26 (seeded dropout, layer norm forward and backward), computed as
`puzzles/course/mistakes.py` computes those of puzzles 1-21: what the spec gives with one mistake in it,
from the same inputs, so that a wrong output matching one of them is told which slip it is. Each function
gets the spec's inputs by name and the size, and returns the output the slip produces, in the spec's
dtype and shape. (Puzzles 27 and 28 keep theirs in `mistakes_training.py`.)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from puzzles.course.philox import rand
from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


# -- puzzle 24: seeded dropout ----------------------------------------------------------------------------

def _dropout(i: Inputs, sizes: Sizes, draws: Tensor, *, keep_above: bool = True, rescale: bool = True,
             kept: str = "x / (1 - p)") -> Tensor:
    """Dropout of x with the random numbers `draws` (one per element): kept where the draw is above p
    (`keep_above=False`: below it), kept values divided by 1 - p (`rescale=False`: left as they are; `kept`:
    "x * (1 - p)" or "x / p", the scale turned around)."""
    x, p = i["x"], torch.tensor(sizes["p"], dtype=torch.float32)
    keep = draws > p if keep_above else draws < p
    values = {"x / (1 - p)": x / (1 - sizes["p"]), "x * (1 - p)": x * (1 - sizes["p"]), "x / p": x / sizes["p"]}
    return torch.where(keep, values[kept] if rescale else x, 0.0).to(x.dtype)


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


def dropout_scaled_by_keep(i: Inputs, sizes: Sizes) -> Tensor:
    """The kept values multiplied by 1 - p instead of divided by it."""
    return _dropout(i, sizes, rand(i["seeds"][:, None], _columns(i)), kept="x * (1 - p)")


def dropout_divided_by_p(i: Inputs, sizes: Sizes) -> Tensor:
    """The kept values divided by p, the probability of dropping, instead of 1 - p, that of keeping."""
    return _dropout(i, sizes, rand(i["seeds"][:, None], _columns(i)), kept="x / p")


# -- puzzle 25: layer norm forward ------------------------------------------------------------------------

def _layernorm(i: Inputs, sizes: Sizes, *, divisor: int | None = None, mean_divisor: int | None = None,
               unbiased: bool = False, padding_in_variance: bool = False, eps_outside: bool = False,
               swap_affine: bool = False, affine: bool = True, eps: float | None = None) -> Tensor:
    """Layer norm of each row (in float64, rounded once), with one step changed: the mean and the variance
    divided by `divisor` instead of N (the row padded to whole blocks), the mean alone by `mean_divisor`, the
    variance by N - 1, the padding lanes of the last block counted in the variance as (0 - mean)^2, eps added
    after the square root, the weight and the bias swapped or left out (`affine`), or `eps` written as a
    number instead of the size's."""
    x, w, b = i["x"].double(), i["w"].double(), i["b"].double()
    n = x.shape[1]
    count = divisor or n
    eps = sizes["eps"] if eps is None else eps
    mean = x.sum(1, keepdim=True) / (mean_divisor or count)
    squares = ((x - mean) ** 2).sum(1, keepdim=True)
    if padding_in_variance:
        squares = squares + (-(-n // sizes["BN"]) * sizes["BN"] - n) * mean ** 2
    var = squares / (n - 1 if unbiased else count)
    scale = 1 / (var.sqrt() + eps) if eps_outside else 1 / (var + eps).sqrt()
    if swap_affine:
        w, b = b, w
    normalised = (x - mean) * scale
    return (normalised * w + b if affine else normalised).float()


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


def layernorm_mean_over_block(i: Inputs, sizes: Sizes) -> Tensor:
    """mean = tl.sum(acc, axis=0) / BN: the row's sum divided by the block's width (the variance by N)."""
    return _layernorm(i, sizes, mean_divisor=sizes["BN"])


def layernorm_statistics_over_block(i: Inputs, sizes: Sizes) -> Tensor:
    """The mean and the variance both divided by BN, the block's width."""
    return _layernorm(i, sizes, divisor=sizes["BN"])


def layernorm_without_affine(i: Inputs, sizes: Sizes) -> Tensor:
    """x̂ stored as it is: the weight and the bias never applied."""
    return _layernorm(i, sizes, affine=False)


# The eps a kernel that writes it as a number most likely has: the first graded size's (the notebook's cell).
WRITTEN_EPS = 1e-5


def layernorm_eps_written(i: Inputs, sizes: Sizes) -> Tensor:
    """eps written as a number (1e-5) where the kernel's eps argument belongs."""
    return _layernorm(i, sizes, eps=WRITTEN_EPS)


def layernorm_without_eps(i: Inputs, sizes: Sizes) -> Tensor:
    """1 / sqrt(var): eps left out."""
    return _layernorm(i, sizes, eps=0.0)


def layernorm_one_pass_variance(i: Inputs, sizes: Sizes) -> Tensor:
    """var = E[x²] - mean², in float32 (as a kernel computes it): where a row's mean is large beside its spread
    the two terms nearly cancel and their rounding is left. Its rounding is not the kernel's, so it is matched
    by the rows it gets wrong (`Mistake.by_rows`), not by its values."""
    x, w, b = i["x"], i["w"], i["b"]
    mean = x.sum(1, keepdim=True) / x.shape[1]
    var = (x * x).sum(1, keepdim=True) / x.shape[1] - mean * mean
    return (x - mean) / torch.sqrt(var + sizes["eps"]) * w + b


# -- puzzle 26: layer norm backward ------------------------------------------------------------------------

def _layernorm_backward(i: Inputs, sizes: Sizes, *, mean_terms: bool = True, weight_in_dx: bool = True,
                        divisor: int | None = None, dw_from_x: bool = False, xhat_term: bool = True,
                        mean_term: bool = True) -> Tensor:
    """Puzzle 26's output (dx, then the rows dw and db) in float64, rounded once, with one step changed: dx
    without its two row means (`mean_terms`) or one of them (`mean_term`: mean(w·dy); `xhat_term`:
    x̂ · mean(w·dy·x̂)), with dy where w · dy belongs (`weight_in_dx`), the row means divided by `divisor`
    instead of N, or dw summed from x instead of x̂."""
    x, w, dy = i["x"].double(), i["w"].double(), i["dy"].double()
    mean, rstd = i["mean"].double()[:, None], i["rstd"].double()[:, None]
    xhat = (x - mean) * rstd
    wdy = w * dy if weight_in_dx else dy
    count = divisor or x.shape[1]
    c1 = (xhat * wdy).sum(1, keepdim=True) / count if xhat_term else 0.0
    c2 = wdy.sum(1, keepdim=True) / count if mean_term else 0.0
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


def layernorm_dw_db_swapped(i: Inputs, sizes: Sizes) -> Tensor:
    """db stored in row M (dw's) and dw in row M + 1."""
    out = _layernorm_backward(i, sizes)
    return torch.cat([out[:-2], out[-1:], out[-2:-1]])


def layernorm_dx_without_rstd(i: Inputs, sizes: Sizes) -> Tensor:
    """dx not multiplied by rstd: w·dy − mean(w·dy) − x̂ · mean(w·dy·x̂) alone."""
    out = _layernorm_backward(i, sizes)
    rows = i["x"].shape[0]
    return torch.cat([out[:rows] / i["rstd"][:, None], out[rows:]])


def layernorm_dx_without_mean_term(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, mean_term=False)


def layernorm_dx_without_xhat_term(i: Inputs, sizes: Sizes) -> Tensor:
    return _layernorm_backward(i, sizes, xhat_term=False)


def layernorm_dx_means_over(count: int) -> Callable[[Inputs, Sizes], Tensor]:
    """dx's row means divided by `count`, a number written in the kernel (the first size's N), not N."""
    def means_over_written_n(i: Inputs, sizes: Sizes) -> Tensor:
        return _layernorm_backward(i, sizes, divisor=count)

    return means_over_written_n
