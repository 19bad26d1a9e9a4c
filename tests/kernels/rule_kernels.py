"""Kernels for tests/submissions/test_rules.py: puzzle 15's ban on tl.dot reached through helpers and aliases, correct
kernels whose parameters come from defaults, @triton.heuristics or autotune configs, and puzzle 20 kernels right
only under their own configs. Triton reads a kernel's source from its file, so they live in a module."""

import triton
import triton.language as T  # noqa: N812 - the alias is the point
import triton.language as tl
from triton.language import dot as mm

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


# -- parameters the puzzle does not provide, supplied otherwise (puzzle 2: x_ptr, z_ptr, N0, B0) ----------------


@triton.jit
def add_mask2_kernel_default(x_ptr, z_ptr, N0, B0: tl.constexpr, ADD: tl.constexpr = 10.0):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + ADD, mask=offsets < N0)


@triton.heuristics({"EVEN": lambda args: args["N0"] % args["B0"] == 0})
@triton.jit
def add_mask2_kernel_heuristics(x_ptr, z_ptr, N0, B0: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    if EVEN:  # no mask needed (and a kernel that got EVEN wrong would read past x)
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets) + 10.0)
    else:
        tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_unknown(x_ptr, z_ptr, N0, B0: tl.constexpr, ADD: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + ADD, mask=offsets < N0)


@triton.jit
def add_mask2_kernel_sizes_reordered(x_ptr, z_ptr, B0: tl.constexpr, N0):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < N0) + 10.0, mask=offsets < N0)


# -- puzzle 20 ------------------------------------------------------------------------------------------------


@triton.jit
def _silu_mul(x_ptr, y_ptr, z_ptr, offsets, N0):
    mask = offsets < N0
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x * tl.sigmoid(x) * tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_literal_block(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, 64), N0)  # right only where B0 is 64


@triton.autotune(configs=[triton.Config({"B0": 256}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_literal_stride(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * 256 + tl.arange(0, B0), N0)  # right only where B0 is 256


@triton.autotune(configs=[triton.Config({"B0": 64, "UNROLL": 1}, num_warps=1),
                          triton.Config({"B0": 512, "UNROLL": 1}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_extra_meta(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, UNROLL: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.heuristics({"EVEN": lambda args: args["N0"] % args["B0"] == 0})
@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_heuristics_above(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr, EVEN: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.autotune(configs=[triton.Config({"B0": 128}, num_warps=2)], key=["N0"])
@triton.jit
def silu_mul_kernel_sizes_reordered(x_ptr, y_ptr, z_ptr, B0: tl.constexpr, N0):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * B0 + tl.arange(0, B0), N0)


@triton.autotune(configs=[triton.Config({"B0": 64}, num_warps=2), triton.Config({"B0": 128}, num_warps=4),
                          triton.Config({"B0": 256}, num_warps=4)], key=["N0"])
@triton.jit
def silu_mul_kernel_wrong_second_config(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    _silu_mul(x_ptr, y_ptr, z_ptr, tl.program_id(0) * 64 + tl.arange(0, B0), N0)  # right only where B0 is 64


@triton.jit
def int8_gemv_kernel_dot_scaled(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([16, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rows, w = _padded_tiles(x_ptr, weight_ptr, N, K, n, k0, BK)
        acc = tl.dot_scaled(rows, None, "e4m3", w, None, "e4m3", acc)  # FORBIDDEN
    _store_rows(z_ptr, scale_ptr, acc, n, N)


# -- puzzle 21 ------------------------------------------------------------------------------------------------


@triton.jit
def sgd_kernel_count_last(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, lr, momentum, weight_decay, K,
                          B0: tl.constexpr):
    # Right, but K declared last: the notebook's one-launch cell passes K right after the pointers.
    pid = tl.program_id(0)
    t = tl.load(chunks_ptr + 2 * pid)
    offs = tl.load(chunks_ptr + 2 * pid + 1) * B0 + tl.arange(0, B0)
    mask = offs < tl.load(numels_ptr + t)
    p = tl.load(addresses_ptr + t).to(tl.pointer_type(tl.float32))
    g = tl.load(addresses_ptr + K + t).to(tl.pointer_type(tl.float32))
    m = tl.load(addresses_ptr + 2 * K + t).to(tl.pointer_type(tl.float32))
    x = tl.load(p + offs, mask=mask)
    new_m = momentum * tl.load(m + offs, mask=mask) + tl.load(g + offs, mask=mask) + weight_decay * x
    tl.store(tl.load(addresses_ptr + 4 * K + t).to(tl.pointer_type(tl.float32)) + offs, new_m, mask=mask)
    tl.store(tl.load(addresses_ptr + 3 * K + t).to(tl.pointer_type(tl.float32)) + offs, x - lr * new_m, mask=mask)
