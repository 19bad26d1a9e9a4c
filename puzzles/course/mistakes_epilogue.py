"""Likely slips of puzzle 22's fused epilogue (z = relu(x @ w + b)), computed as puzzles/course/mistakes.py
computes the others: each function returns what the spec gives with that one slip, from the same inputs."""

from __future__ import annotations

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]


def _product(i: Inputs) -> Tensor:
    """x @ w summed in float32, as tl.dot sums fp16 tiles."""
    return i["x"].float() @ i["w"].float()


def linear_without_bias(i: Inputs, sizes: Sizes) -> Tensor:
    return torch.relu(_product(i)).half()


def linear_without_relu(i: Inputs, sizes: Sizes) -> Tensor:
    return (_product(i) + i["b"].float()).half()


def linear_bias_after_relu(i: Inputs, sizes: Sizes) -> Tensor:
    return (torch.relu(_product(i)) + i["b"].float()).half()


def linear_bias_by_row(i: Inputs, sizes: Sizes) -> Tensor:
    """b indexed by the row m instead of the column n; where M > N that reads past b and the out-of-bounds
    check tells it, so the right output stands in (never named)."""
    product, b = _product(i), i["b"].float()
    rows = product.shape[0]
    if rows > b.shape[0]:
        return torch.relu(product + b).half()
    return torch.relu(product + b[:rows, None]).half()


def linear_without_epilogue(i: Inputs, sizes: Sizes) -> Tensor:
    """The accumulator stored as it is: neither + b nor the relu."""
    return _product(i).half()


def linear_w_read_as_n_by_k(i: Inputs, sizes: Sizes) -> Tensor:
    """w addressed as if it were N × K (w_ptr + n * K + k): element w[k, n] taken from flat position n·K + k."""
    w = i["w"].flatten().reshape(sizes["N"], sizes["K"]).T
    return torch.relu(i["x"].float() @ w.float() + i["b"].float()).half()


def linear_x_read_as_k_by_m(i: Inputs, sizes: Sizes) -> Tensor:
    """x addressed as if it were K × M (x_ptr + k * M + m): element x[m, k] taken from flat position k·M + m."""
    x = i["x"].flatten().reshape(sizes["K"], sizes["M"]).T
    return torch.relu(x.float() @ i["w"].float() + i["b"].float()).half()


def linear_float16_accumulator(i: Inputs, sizes: Sizes) -> Tensor:
    """The running sum over K kept in float16: each chunk of BK added to it rounds it to 11 bits."""
    x, w, block = i["x"].float(), i["w"].float(), sizes["BK"]
    acc = torch.zeros(x.shape[0], w.shape[1], dtype=torch.float16)
    for k0 in range(0, sizes["K"], block):
        acc = (acc.float() + x[:, k0:k0 + block] @ w[k0:k0 + block]).half()
    return torch.relu(acc.float() + i["b"].float()).half()
