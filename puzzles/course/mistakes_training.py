"""Common slips of the training track, computed (as `puzzles/course/mistakes.py` does for puzzles 1-21):
what the spec gives with one mistake in it, from the same inputs, so that a wrong output matching one of
them is told which slip it is. Each function gets the spec's inputs by name and the size, and returns the
output the slip produces, in the spec's dtype and shape.

Puzzle 27 (fused cross-entropy): the stable logsumexp, the ignored rows, the mean's denominator, the one-hot.
Puzzle 28 (attention backward): the softmax scale, the saved logsumexp, the rowsum(dO · O) term.
"""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


# -- puzzle 27: fused softmax cross-entropy --------------------------------------------------------------

def _cross_entropy(i: Inputs, sizes: Sizes, *, subtract_max: bool = True, exp_over_sum: bool = False,
                   count_ignored: bool = False, divide_grad: bool = True, divide_loss: bool = True,
                   one_hot: bool = True, zero_ignored: bool = True) -> Tensor:
    """Puzzle 27's output (each row's gradient, then its share of the mean loss) as a kernel computes it in
    float32, with one step changed: no maximum subtracted (`exp_over_sum`: the probabilities as exp(x) / sum
    rather than exp(x - logsumexp)), the mean over all N0 rows, the gradient or the loss not divided by the
    count, the one-hot left out of the gradient, or the ignored rows given a gradient (their softmax)."""
    x, targets = i["logits"].float(), i["targets"].long()
    kept = targets != sizes["IGNORE_INDEX"]
    count = torch.tensor(float(targets.numel())) if count_ignored else kept.sum().float()
    hot = torch.arange(x.shape[1], device=x.device)[None, :] == targets[:, None]
    if subtract_max:
        top = x.amax(1, keepdim=True)
        lse = top + (x - top).exp().sum(1, keepdim=True).log()
    else:
        lse = x.exp().sum(1, keepdim=True).log()  # inf where a logit passes about 88
    probs = x.exp() / x.exp().sum(1, keepdim=True) if exp_over_sum else (x - lse).exp()
    grad = probs - hot.float() if one_hot else probs
    grad = grad / count if divide_grad else grad
    grad = torch.where(kept[:, None], grad, 0.0) if zero_ignored else torch.where(kept[:, None], grad, probs / count)
    loss = torch.where(kept, (lse[:, 0] - torch.where(hot, x, 0.0).sum(1)), 0.0)
    loss = loss / count if divide_loss else loss
    return torch.cat([grad, loss[:, None]], 1)


def cross_entropy_without_max(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, subtract_max=False)


def cross_entropy_exp_over_sum(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, subtract_max=False, exp_over_sum=True)


def cross_entropy_ignored_counted(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, count_ignored=True)


def cross_entropy_grad_not_divided(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, divide_grad=False)


def cross_entropy_loss_not_divided(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, divide_loss=False)


def cross_entropy_without_one_hot(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, one_hot=False)


def cross_entropy_ignored_rows_graded(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, zero_ignored=False)


# -- puzzle 28: attention backward ------------------------------------------------------------------------

def _attention_backward(i: Inputs, sizes: Sizes, *, scale_scores: bool = True, scale_chain: bool = True,
                        subtract_lse: bool = True, delta: bool = True) -> Tensor:
    """Puzzle 28's dq, dk, dv (stacked) in float64, with one step changed: the scores not scaled by
    1/sqrt(D) (and, with `scale_chain` off too, dq and dk not either), only dq and dk without the scale, the
    probabilities recomputed as exp(s) instead of exp(s - lse), or dS without the rowsum(dO · O) term."""
    q, k, v, o, do, lse = (i[name].double() for name in ("q", "k", "v", "o", "do", "lse"))
    scale = sizes["D"] ** -0.5
    s = q @ k.T * (scale if scale_scores else 1.0)
    p = (s - lse[:, None]).exp() if subtract_lse else s.exp()
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(1, keepdim=True)) if delta else p * dp
    chain = scale if scale_chain else 1.0
    return torch.stack([ds @ k * chain, ds.T @ q * chain, p.T @ do]).float()


def attention_backward_without_scale(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_scores=False, scale_chain=False)


def attention_backward_scale_in_scores_only(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_chain=False)


def attention_backward_without_lse(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, subtract_lse=False)


def attention_backward_without_delta(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, delta=False)
