"""Kernels for tests/course/test_hint_ladders.py: the other ways that puzzle 26's and puzzle 28's statements allow, each
with no atomics (a statement that names a way must be one the grader passes)."""

import triton
import triton.language as tl


@triton.jit
def layernorm_backward_kernel_one_program_sums(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N,
                                               BM: tl.constexpr, BN: tl.constexpr):
    """Puzzle 26 without atomics: every program writes its rows' dx; program 0 alone sums dw and db over all M
    rows and stores them plainly (it reads every row again: slower, and the same bits on every run)."""
    cols = tl.arange(0, BN)
    col_in = cols < N
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        xhat = tl.where(mask, (x - tl.load(mean_ptr + row, mask=row < M, other=0.0))
                        * tl.load(rstd_ptr + row, mask=row < M, other=0.0), 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        tl.store(z_ptr + row * N + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    if tl.program_id(0) == 0:
        dw = tl.zeros([BN], dtype=tl.float32)
        db = tl.zeros([BN], dtype=tl.float32)
        for row in range(0, M):
            x = tl.load(x_ptr + row * N + cols, mask=col_in, other=0.0)
            dy = tl.load(dy_ptr + row * N + cols, mask=col_in, other=0.0)
            xhat = tl.where(col_in, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
            dw += dy * xhat
            db += dy
        tl.store(z_ptr + M * N + cols, dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, db, mask=col_in)


@triton.jit
def attention_backward_kernel_two_walks(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dqkv_ptr, T, D: tl.constexpr,
                                        B0: tl.constexpr, B1: tl.constexpr):
    """Puzzle 28 without atomics: program j's first walk owns keys j·B1 … (dK, dV over every query block of B0);
    its second owns the queries j·B1 …, a block B1 wide (the grid has cdiv(T, B1) programs), and walks the keys
    in blocks of B0 for their dQ."""
    scale = 1.0 / (D ** 0.5)
    cols = tl.arange(0, D)
    keys = tl.program_id(0) * B1 + tl.arange(0, B1)
    keys_in = keys < T
    k = tl.load(k_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0)
    v = tl.load(v_ptr + keys[:, None] * D + cols[None, :], mask=keys_in[:, None], other=0.0)
    dk = tl.zeros([B1, D], dtype=tl.float32)
    dv = tl.zeros([B1, D], dtype=tl.float32)
    for i0 in range(0, T, B0):
        rows = i0 + tl.arange(0, B0)
        rows_in = rows < T
        at = rows[:, None] * D + cols[None, :]
        q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0)
        o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
        do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
        lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
        p = tl.where(rows_in[:, None] & keys_in[None, :], tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p), do)
        ds = p * (tl.dot(do, tl.trans(v)) - tl.sum(do * o, axis=1)[:, None])
        dk += tl.dot(tl.trans(ds), q)
    tl.store(dqkv_ptr + T * D + keys[:, None] * D + cols[None, :], dk * scale, mask=keys_in[:, None])
    tl.store(dqkv_ptr + 2 * T * D + keys[:, None] * D + cols[None, :], dv, mask=keys_in[:, None])
    # The second walk: these B1 queries, every key block of B0.
    rows = tl.program_id(0) * B1 + tl.arange(0, B1)
    rows_in = rows < T
    at = rows[:, None] * D + cols[None, :]
    q = tl.load(q_ptr + at, mask=rows_in[:, None], other=0.0)
    o = tl.load(o_ptr + at, mask=rows_in[:, None], other=0.0)
    do = tl.load(do_ptr + at, mask=rows_in[:, None], other=0.0)
    lse = tl.load(lse_ptr + rows, mask=rows_in, other=0.0)
    delta = tl.sum(do * o, axis=1)
    dq = tl.zeros([B1, D], dtype=tl.float32)
    for j0 in range(0, T, B0):
        other = j0 + tl.arange(0, B0)
        other_in = other < T
        k_block = tl.load(k_ptr + other[:, None] * D + cols[None, :], mask=other_in[:, None], other=0.0)
        v_block = tl.load(v_ptr + other[:, None] * D + cols[None, :], mask=other_in[:, None], other=0.0)
        p = tl.where(rows_in[:, None] & other_in[None, :], tl.exp(tl.dot(q, tl.trans(k_block)) * scale - lse[:, None]),
                     0.0)
        ds = p * (tl.dot(do, tl.trans(v_block)) - delta[:, None])
        dq += tl.dot(ds, k_block)
    tl.store(dqkv_ptr + at, dq * scale, mask=rows_in[:, None])
