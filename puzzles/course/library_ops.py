"""How each puzzle's library op runs (`LibraryBaseline.prepare`): the catalog names the op, its settings and why
it is the fair comparison (`Puzzle.library`); the code that calls it on the spec's inputs lives here, out of the
catalog modules, whose code (all but the Puzzle record) the notebooks show the learner.

Each function gets the spec's inputs and the sizes and returns a `LibraryRun`: what is timed, and the puzzle's
output made from its results (tests/course/test_library_baselines.py checks it against the spec on a CPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.optim.sgd import sgd

from puzzles.course import mxfp4
from puzzles.course.library_baseline import LibraryRun, Sizes, single_call
from puzzles.course.puzzle import TensorLists

INT4_PER_WORD = 8


def int4_nibbles(words: Tensor, dim: int) -> Tensor:
    """int32 words as their 8 nibbles (0..15), low nibble first, along `dim` (GPTQ's packing)."""
    shifts = torch.arange(INT4_PER_WORD, dtype=torch.int32, device=words.device) * 4
    moved = words.movedim(dim, -1)
    return ((moved[..., None] >> shifts) & 0xF).flatten(-2).movedim(-1, dim)


def softmax_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 8: torch.softmax along each row."""
    (x,) = inputs
    return single_call(lambda: torch.softmax(x, dim=1))


def attention_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 9: scaled_dot_product_attention with one feature per position and no 1/sqrt(d) scale."""
    q, k, v = (t[None, None, :, None] for t in inputs)  # batch 1, head 1, head dimension 1
    return single_call(lambda: F.scaled_dot_product_attention(q, k, v, scale=1.0), lambda z: z.reshape(-1))


def conv_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 10: F.conv2d (a cross-correlation, as the spec) of x padded with zeros past its last row and column."""
    x, k = inputs
    kh, kw = k.shape
    weight = k[None, None]  # one input and one output channel
    return single_call(lambda: F.conv2d(F.pad(x[:, None], (0, kw - 1, 0, kh - 1)), weight), lambda z: z[:, 0])


def bmm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 11: torch.bmm (TF32 allowed by the baseline's settings)."""
    x, y = inputs
    return single_call(lambda: torch.bmm(x, y))


def int8_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 15: torch's int8 weight-only matmul on the weight stored N x K, as it takes it."""
    x, weight, scale = inputs
    by_row = weight.t().contiguous()  # stored once in the op's layout, as a model's weights would be
    row = x[None, :]
    return single_call(lambda: torch._weight_int8pack_mm(row, by_row, scale), lambda z: z[0])


def mm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 17: torch.mm of float16 matrices into a float32 result."""
    a, b = inputs
    return single_call(lambda: torch.mm(a, b, out_dtype=torch.float32))


def persistent_mm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 30: torch.mm of float32 matrices (TF32 allowed by the baseline's settings)."""
    x, y = inputs
    return single_call(lambda: torch.mm(x, y))


def int4_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 18: torch's int4 weight-only matmul (tinygemm), the GPTQ weights repacked once into its layout;
    bfloat16 activations."""
    a, qweight, scales, qzeros = inputs
    q = int4_nibbles(qweight, dim=0).t().contiguous()  # N x K, 0..15
    zero = int4_nibbles(qzeros, dim=1)  # K/G x N
    # tinygemm dequantizes (q - 8) * scale + offset: GPTQ's (q - (zero + 1)) * scale, with offset (7 - zero) * scale
    scale_offset = torch.stack([scales.float(), (7 - zero).float() * scales.float()], dim=2).to(torch.bfloat16)
    tiles = next(t for t in (8, 4, 2) if q.shape[1] % (16 * t) == 0)
    rows = a.to(torch.bfloat16)
    group = int(sizes["G"])
    if a.is_cuda:
        packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), tiles)
        op = lambda: torch._weight_int4pack_mm(rows, packed, group, scale_offset)  # noqa: E731
    else:  # the same op's CPU kernel, under its own name
        packed = torch._convert_weight_to_int4pack_for_cpu(q, tiles)
        op = lambda: torch._weight_int4pack_mm_for_cpu(rows, packed, group, scale_offset)  # noqa: E731
    return single_call(op, lambda z: z.to(torch.float16))


def silu_mul_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 20: F.silu(x) * y."""
    x, y = inputs
    return single_call(lambda: F.silu(x) * y)


def sgd_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 21: torch.optim's SGD step over the tensors (views of the spec's buffers), multi-tensor (foreach)."""
    params, grads, moms = inputs[0].clone(), inputs[1], inputs[2].clone()  # the step updates them in place
    lengths = TensorLists.lengths(sizes)
    p_list, g_list, m_list = (list(t.split(lengths)) for t in (params, grads, moms))
    hyper = {"lr": sizes["lr"], "momentum": sizes["momentum"], "weight_decay": sizes["weight_decay"]}
    step = lambda: sgd(p_list, g_list, m_list, foreach=True, dampening=0.0, nesterov=False,  # noqa: E731
                       maximize=False, **hyper)
    return single_call(step, lambda _: torch.stack([params, moms]))


def addmm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 22: torch.addmm (the bias in cuBLASLt's epilogue), then relu in place."""
    x, w, b = inputs
    return single_call(lambda: torch.addmm(b, x, w).relu_())


def layernorm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 25: F.layer_norm over each row."""
    x, w, b = inputs
    shape, eps = (x.shape[1],), float(sizes["eps"])
    return single_call(lambda: F.layer_norm(x, shape, w, b, eps))


def layernorm_backward_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 26: aten's layer-norm backward, on the saved mean and 1/sigma: what autograd runs for F.layer_norm."""
    x, w, dy, mean, rstd = inputs
    shape, mean_col, rstd_col = [x.shape[1]], mean[:, None], rstd[:, None]
    bias = torch.zeros_like(w)  # its shape and device only: the op gives db where the layer has a bias
    op = lambda: torch.ops.aten.native_layer_norm_backward(  # noqa: E731
        dy, x, shape, mean_col, rstd_col, w, bias, [True, True, True])
    return single_call(op, lambda grads: torch.cat([grads[0], grads[1][None], grads[2][None]]))


def cross_entropy_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 27: F.cross_entropy forward and its gradient by autograd (each row's loss kept, as the output)."""
    logits, targets = inputs
    ignore = int(sizes["IGNORE_INDEX"])
    x, t = logits.detach().requires_grad_(), targets.long()  # torch wants int64 targets: converted once
    count = (targets != ignore).sum()

    def step() -> tuple[Tensor, Tensor]:
        rows = F.cross_entropy(x, t, ignore_index=ignore, reduction="none")
        (grad,) = torch.autograd.grad(rows.sum() / count, x)
        return rows.detach(), grad

    return single_call(step, lambda out: torch.cat([out[1], out[0][:, None] / count], 1))


def sdpa_backward_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 28: scaled_dot_product_attention's backward by autograd: the forward runs once, untimed, and saves
    its own O and logsumexp (the same as the puzzle's, from the same q, k and v)."""
    q, k, v, _o, do, _lse = inputs
    leaves = [t.detach()[None, None].requires_grad_() for t in (q, k, v)]  # batch 1, head 1
    out = F.scaled_dot_product_attention(*leaves)
    grad_out = do[None, None]
    backward = lambda: torch.autograd.grad(out, leaves, grad_out, retain_graph=True)  # noqa: E731
    return single_call(backward, lambda grads: torch.stack([g[0, 0] for g in grads]))


def pipelined_mm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 31: torch.mm of float16 matrices into a float16 result (cuBLAS, float32 accumulation)."""
    x, y = inputs
    return single_call(lambda: torch.mm(x, y))


def mxfp4_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 33: the MXFP4 weights dequantized to float16 on every call (they stay 4-bit in memory), then torch.mm:
    each byte looked up once in a 256-entry table of its two float16 values, the pairs interleaved into K rows, each
    block of 32 rows times its scale."""
    x, w, scale = inputs
    table = mxfp4.E2M1_VALUES.to(device=x.device, dtype=torch.float16)
    byte = torch.arange(256, device=x.device)
    pairs = torch.stack([table[byte & 0xF], table[byte >> 4]], dim=1)  # byte -> (row 2j, row 2j + 1)
    multiplier = torch.exp2(scale.float() - mxfp4.BIAS).to(torch.float16)[:, None, :]  # K/32 × 1 × N
    k_size, n_size = 2 * w.shape[0], w.shape[1]

    def op() -> Tensor:
        rows = pairs[w.int()].permute(0, 2, 1).reshape(k_size // mxfp4.BLOCK, mxfp4.BLOCK, n_size)
        return torch.mm(x, (rows * multiplier).reshape(k_size, n_size))

    return single_call(op, lambda z: z.float())


def fp8_scaled_mm_library(inputs: list[Tensor], sizes: Sizes) -> LibraryRun:
    """Puzzle 32: torch._scaled_mm with rowwise scales (x's per row, w's per output channel); w (N x K, row-major)
    transposed is the column-major K x N operand cuBLASLt's fp8 matmul takes, with no copy; rowwise scaling returns
    bfloat16 only, cast to the puzzle's float16."""
    x, x_scale, w, w_scale = inputs
    row_scales, column_scales = x_scale[:, None].contiguous(), w_scale[None, :].contiguous()
    return single_call(lambda: torch._scaled_mm(x, w.t(), scale_a=row_scales, scale_b=column_scales,
                                                out_dtype=torch.bfloat16), lambda z: z.to(torch.float16))
