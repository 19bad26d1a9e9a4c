"""Puzzle 15 (int8 gemv): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as T
import triton.language as tl
from triton.language import dot as mm

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def gemv_dtype_branch(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x.to(tl.float32)[:, None] * w, axis=0)
    out = acc * tl.load(scale_ptr + n, mask=n < N, other=0).to(tl.float32)
    if z_ptr.dtype.element_ty == tl.float16:
        tl.store(z_ptr + n, out.to(tl.float16), mask=n < N)
    else:
        tl.store(z_ptr + n, out, mask=n < N)


@triton.jit
def gemv_scale_in_loop(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    s = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    acc = tl.zeros((BK, BN), dtype=tl.float32)
    for k0 in tl.range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0)
        acc += x.to(tl.float32)[:, None] * w.to(tl.float32) * s[None, :]
    tl.store(z_ptr + n, tl.sum(acc, axis=0).to(tl.float16), mask=n < N)


@triton.jit
def gemv_where_masks(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    n = pid * BN + tl.arange(0, BN)
    acc = tl.zeros((BN,), dtype=tl.float32)
    k0 = 0
    while k0 < K:
        k = k0 + tl.arange(0, BK)
        km = k < K
        x = tl.where(km, tl.load(x_ptr + k, mask=km), 0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=km[:, None] & (n < N)[None, :])
        acc += tl.sum(tl.where(km[:, None], x[:, None] * w, 0.0), axis=0)
        k0 += BK
    scale = tl.load(scale_ptr + n, mask=n < N)
    tl.store(z_ptr + n, (acc * scale.to(tl.float32)).to(z_ptr.dtype.element_ty), mask=n < N)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def gemv_to_last_index(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K - 1, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)



# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def gemv_without_scale(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    tl.store(z_ptr + n, acc.to(tl.float16), mask=n < N)  # the per-column scale forgotten


@triton.jit
def gemv_with_tl_dot(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
        rows = tl.zeros([16, BK], dtype=tl.float16) + x[None, :]  # the vector padded to 16 rows
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc = tl.dot(rows, w.to(tl.float16), acc)
    tl.store(z_ptr + n, (tl.sum(acc, axis=0) / 16 * tl.load(scale_ptr)).to(tl.float16), mask=n < N)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def gemv_accumulating_in_float16(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float16)  # rounds at every step: a few sums end past the tolerance
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float16), axis=0)
    tl.store(z_ptr + n, acc * tl.load(scale_ptr + n, mask=n < N, other=0.0), mask=n < N)



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def _gemv_body(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr, X_OTHER: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        if X_OTHER:
            x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        else:
            x = tl.load(x_ptr + k, mask=k < K).to(tl.float32)
        # No other= on the weights either: with x's lanes 0 the undefined weights add 0 (a right kernel).
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :])
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def gemv_relying_on_zero_lanes(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    _gemv_body(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, False)


@triton.jit
def gemv_with_other_on_x_only(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    _gemv_body(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN, BK, True)



# -- what a graded file and a kernel's body may use -----------------------------------------------------------------

matmul = tl.dot  # a module-level alias


@triton.jit
def _tile_product(a, b, acc):
    return tl.dot(a, b, acc)  # FORBIDDEN


@triton.jit
def _outer(a, b, acc):
    return _tile_product(a, b, acc)


@triton.jit
def dot(a, b):  # a helper that happens to be called dot, and does not use tl.dot
    return tl.sum(a * b, axis=0)


@triton.jit
def _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK: tl.constexpr):
    """The activation vector padded to 16 rows (tl.dot needs 16), and the weight tile, both fp16."""
    k = k0 + tl.arange(0, BK)
    x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
    w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
    return tl.zeros([16, BK], dtype=tl.float16) + x[None, :], w.to(tl.float16)


@triton.jit
def _store_rows(z_ptr, scale_ptr, acc, n, N):
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (tl.sum(acc, axis=0) / 16 * scale).to(tl.float16), mask=n < N)


@triton.jit
def int8_gemv_kernel_helper(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = _outer(rows, w, acc)
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def int8_gemv_kernel_import_alias(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = mm(rows, w, acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def int8_gemv_kernel_module_alias(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = matmul(rows, w, acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def int8_gemv_kernel_module_as(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = T.dot(rows, w, acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def int8_gemv_kernel_local_alias(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    product = tl.dot
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = product(rows, w, acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)


def _kernel_with_a_closure():
    product = tl.dot

    @triton.jit
    def int8_gemv_kernel_closure(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
        n = tl.program_id(0) * BN + tl.arange(0, BN)
        acc = tl.zeros([16, BN], dtype=tl.float32)
        for k0 in range(0, K, BK):
            rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
            acc = product(rows, w, acc)  # FORBIDDEN
        _store_rows(z_ptr, scale_ptr, acc, n, N)

    return int8_gemv_kernel_closure


# Each calls tl.dot on the line marked FORBIDDEN (of the kernel, or of the helper named second).
GEMV_WITH_DOT = {
    "helper": (int8_gemv_kernel_helper, _tile_product),
    "import_alias": (int8_gemv_kernel_import_alias, None),
    "module_alias": (int8_gemv_kernel_module_alias, None),
    "module_as": (int8_gemv_kernel_module_as, None),
    "local_alias": (int8_gemv_kernel_local_alias, None),
    "closure": (_kernel_with_a_closure(), None),
}


@triton.jit
def int8_gemv_kernel_helper_named_dot(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr,
                                      BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += dot(x[:, None], w.to(tl.float32))
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def int8_gemv_kernel_dot_by_name(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
        rows = tl.zeros([16, BK], dtype=tl.float16) + x[None, :]
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc = getattr(tl, "d" + "ot")(rows, w.to(tl.float16), acc)  # FORBIDDEN: only the compiled IR shows it
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def _apply(op: tl.constexpr, a, b, c):
    return op(a, b, c)  # FORBIDDEN: `op` is a parameter, tl.dot the argument: only the compiled IR shows it


@triton.jit
def int8_gemv_kernel_dot_by_alias(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float16)
        rows = tl.zeros([16, BK], dtype=tl.float16) + x[None, :]
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc = _apply(tl.dot, rows, w.to(tl.float16), acc)
    _store_rows(z_ptr, scale_ptr, acc, n, N)


@triton.jit
def int8_gemv_kernel_dot_scaled(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = tl.dot_scaled(rows, None, "e4m3", w, None, "e4m3", acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def gemv_without_k_mask(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=(n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


@triton.jit
def gemv_weight_read_as_n_by_k(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + n[None, :] * K + k[:, None], mask=(k < K)[:, None] & (n < N)[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n < N)


CORRECT = (gemv_dtype_branch, gemv_scale_in_loop, gemv_where_masks)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (dot,)
