"""Common slips of the training track, computed (as `puzzles/course/mistakes.py` does for puzzles 1-21):
what the spec gives with one mistake in it, from the same inputs, so that a wrong output matching one of
them is told which slip it is. Each function gets the spec's inputs by name and the size, and returns the
output the slip produces, in the spec's dtype and shape.

Puzzle 27 (fused cross-entropy): the stable logsumexp, the ignored rows, the mean's denominator, the one-hot.
Puzzle 27 also: the padded lanes, the online sum's rescaling, and the count (its padding, its rows).
Puzzle 28 (attention backward): the softmax scale (in the scores, dq, dk), the saved logsumexp (exp2 beside
its natural log, a softmax per key block instead), the rowsum(dO · O) term, which product makes dk and dv.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


# -- puzzle 27: fused softmax cross-entropy --------------------------------------------------------------

def _cross_entropy(i: Inputs, sizes: Sizes, *, subtract_max: bool = True, exp_over_sum: bool = False,
                   count_ignored: bool = False, divide_grad: bool = True, divide_loss: bool = True,
                   one_hot: bool = True, zero_ignored: bool = True, lse: Tensor | None = None,
                   count: Tensor | None = None, loss_on_ignored: bool = False) -> Tensor:
    """Puzzle 27's output (each row's gradient, then its share of the mean loss) as a kernel computes it in
    float32, with one step changed: no maximum subtracted (`exp_over_sum`: the probabilities as exp(x) / sum
    rather than exp(x - logsumexp)), the mean over all N0 rows, the gradient or the loss not divided by the
    count, the one-hot left out of the gradient, the ignored rows given a gradient (their softmax) or a loss,
    or a wrong logsumexp (`lse`, one per row) or count (`count`, one per row or one for all)."""
    x, targets = i["logits"].float(), i["targets"].long()
    kept = targets != sizes["IGNORE_INDEX"]
    if count is None:
        count = torch.tensor(float(targets.numel())) if count_ignored else kept.sum().float()
    count_rows = count.reshape(-1, 1) if count.numel() > 1 else count
    hot = torch.arange(x.shape[1], device=x.device)[None, :] == targets[:, None]
    if lse is not None:
        lse = lse.reshape(-1, 1).float()
    elif subtract_max:
        top = x.amax(1, keepdim=True)
        lse = top + (x - top).exp().sum(1, keepdim=True).log()
    else:
        lse = x.exp().sum(1, keepdim=True).log()  # inf where a logit passes about 88
    probs = x.exp() / x.exp().sum(1, keepdim=True) if exp_over_sum else (x - lse).exp()
    grad = probs - hot.float() if one_hot else probs
    grad = grad / count_rows if divide_grad else grad
    grad = torch.where(kept[:, None], grad, 0.0) if zero_ignored else torch.where(kept[:, None], grad,
                                                                                   probs / count_rows)
    loss = lse[:, 0] - torch.where(hot, x, 0.0).sum(1)
    loss = loss / count_rows.flatten() if divide_loss else loss  # before the where: a count may be 0 (one block's)
    loss = loss if loss_on_ignored else torch.where(kept, loss, 0.0)
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


def cross_entropy_one_hot_not_divided(i: Inputs, sizes: Sizes) -> Tensor:
    """g = exp(x - lse) / n - onehot: the one-hot subtracted after the division, so not divided by n."""
    grad = _cross_entropy(i, sizes)
    targets, width = i["targets"].long(), i["logits"].shape[1]
    kept = targets != sizes["IGNORE_INDEX"]
    hot = (torch.arange(width)[None, :] == targets[:, None]) & kept[:, None]
    grad[:, :width] -= hot.float() * (1 - 1 / kept.sum().float())
    return grad


def cross_entropy_ignored_rows_graded(i: Inputs, sizes: Sizes) -> Tensor:
    return _cross_entropy(i, sizes, zero_ignored=False)


def cross_entropy_ignored_rows_lose(i: Inputs, sizes: Sizes) -> Tensor:
    """The loss (lse - x_t) / n stored on ignored rows too, x_t summed from a one-hot that no column matches
    (0) unless IGNORE_INDEX is a real class."""
    return _cross_entropy(i, sizes, loss_on_ignored=True)


def _padding(length: int, block: int) -> int:
    """Lanes past `length` in its last chunk of `block`."""
    return -(-length // block) * block - length


def _logsumexp(x: Tensor) -> Tensor:
    return x.double().logsumexp(1)


def cross_entropy_padding_as_zero(i: Inputs, sizes: Sizes) -> Tensor:
    """The logits' last chunk loaded with other=0.0 instead of -inf: each padded lane adds exp(0) to the sum
    (and may raise the maximum to 0, which changes nothing else), so lse = log(Σ exp(x) + pad)."""
    pad = _padding(sizes["V"], sizes["B1"])
    if not pad:
        raise ValueError("no padded lanes at this size")
    x = i["logits"].double()
    return _cross_entropy(i, sizes, lse=_logsumexp(torch.cat([x, x.new_zeros(x.shape[0], pad)], 1)))


def cross_entropy_sum_not_rescaled(i: Inputs, sizes: Sizes) -> Tensor:
    """The online sum kept when the running maximum grows, l += Σ exp(x - m_new) without l * exp(m - m_new):
    each chunk's exps are relative to the maximum so far, the logsumexp m + log(l) to the row's maximum."""
    x = i["logits"].double()
    top = torch.full((x.shape[0],), -torch.inf, dtype=torch.float64)
    total = torch.zeros(x.shape[0], dtype=torch.float64)
    for start in range(0, x.shape[1], sizes["B1"]):
        chunk = x[:, start:start + sizes["B1"]]
        top = torch.maximum(top, chunk.amax(1))
        total = total + (chunk - top[:, None]).exp().sum(1)
    return _cross_entropy(i, sizes, lse=top + total.log())


def cross_entropy_lse_without_max(i: Inputs, sizes: Sizes) -> Tensor:
    """lse = log(l), the running maximum m left out of m + log(l)."""
    x = i["logits"].double()
    return _cross_entropy(i, sizes, lse=_logsumexp(x) - x.amax(1))


def cross_entropy_count_padding_kept(i: Inputs, sizes: Sizes) -> Tensor:
    """The targets' last chunk of the count loaded with other=0 (not IGNORE_INDEX): each padded lane holds
    class 0, which is no IGNORE_INDEX, and is counted as a kept row."""
    pad = _padding(sizes["N0"], sizes["B1"]) if sizes["IGNORE_INDEX"] != 0 else 0
    if not pad:
        raise ValueError("no padded lane is counted at this size")
    kept = i["targets"] != sizes["IGNORE_INDEX"]
    return _cross_entropy(i, sizes, count=kept.sum().float() + pad)


def cross_entropy_count_own_rows(i: Inputs, sizes: Sizes) -> Tensor:
    """n counted over the program's own B0 rows (its block of targets) instead of the whole batch's N0."""
    kept = (i["targets"] != sizes["IGNORE_INDEX"]).float()
    block = torch.arange(kept.numel()) // sizes["B0"]
    per_block = torch.zeros(int(block.max()) + 1).index_add(0, block, kept)
    return _cross_entropy(i, sizes, count=per_block[block])


# -- puzzle 28: attention backward ------------------------------------------------------------------------

def _attention_backward(i: Inputs, sizes: Sizes, *, scale_scores: bool = True, scale_dq: bool = True,
                        scale_dk: bool = True, subtract_lse: bool = True, delta: bool = True,
                        probabilities: str = "exp", dk_from_p: bool = False, dv_from_ds: bool = False,
                        delta_per_key_block: bool = False) -> Tensor:
    """Puzzle 28's dq, dk, dv (stacked) in float64, with one step changed: the scores not scaled by 1/sqrt(D),
    dq or dk without the chain rule's 1/sqrt(D), the probabilities recomputed as exp(s) instead of exp(s - lse)
    (or, `probabilities`, with exp2 from a natural-log lse, or as a softmax over each block of B1 keys), dS
    without the rowsum(dO · O) term (or with it summed as Σ_j P dP over one block of B1 keys), dK from P instead
    of dS, or dV from dS instead of P."""
    q, k, v, o, do, lse = (i[name].double() for name in ("q", "k", "v", "o", "do", "lse"))
    scale = sizes["D"] ** -0.5
    s = q @ k.T * (scale if scale_scores else 1.0)
    if probabilities == "exp2 of s·log2(e) - lse":
        p = torch.exp2(s * math.log2(math.e) - lse[:, None])
    elif probabilities == "exp2 of s - lse":
        p = torch.exp2(s - lse[:, None])
    elif probabilities == "softmax per key block":
        p = torch.cat([chunk.softmax(1) for chunk in s.split(sizes["B1"], 1)], 1)
    else:
        p = (s - lse[:, None]).exp() if subtract_lse else s.exp()
    dp = do @ v.T
    ds = p * (dp - (do * o).sum(1, keepdim=True)) if delta else p * dp
    if delta_per_key_block:  # Σ_j P_ij dP_ij over the program's own B1 keys, not all T
        ds = torch.cat([pc * (dc - (pc * dc).sum(1, keepdim=True))
                        for pc, dc in zip(p.split(sizes["B1"], 1), dp.split(sizes["B1"], 1), strict=True)], 1)
    dq = ds @ k * (scale if scale_dq else 1.0)
    dk = (p if dk_from_p else ds).T @ q * (scale if scale_dk else 1.0)
    dv = (ds if dv_from_ds else p).T @ do
    return torch.stack([dq, dk, dv]).float()


def attention_backward_without_scale(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_scores=False, scale_dq=False, scale_dk=False)


def attention_backward_scale_in_scores_only(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_dq=False, scale_dk=False)


def attention_backward_dq_unscaled(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_dq=False)


def attention_backward_dk_unscaled(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_dk=False)


def attention_backward_scores_unscaled(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, scale_scores=False)


def attention_backward_without_lse(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, subtract_lse=False)


def attention_backward_without_delta(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, delta=False)


def attention_backward_dk_from_p(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, dk_from_p=True)


def attention_backward_dv_from_ds(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, dv_from_ds=True)


def attention_backward_softmax_per_key_block(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, probabilities="softmax per key block")


def attention_backward_exp2_natural_lse(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, probabilities="exp2 of s·log2(e) - lse")


def attention_backward_exp2_without_log2e(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, probabilities="exp2 of s - lse")


def attention_backward_delta_per_key_block(i: Inputs, sizes: Sizes) -> Tensor:
    return _attention_backward(i, sizes, delta_per_key_block=True)
