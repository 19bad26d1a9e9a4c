"""Puzzle 26 reference: each program walks its BM rows one at a time (dx per row, stored), keeps its partial
dw and db in registers, and adds them into z's last two rows with one atomic per column."""

import triton
import triton.language as tl


@triton.jit
def layernorm_backward_kernel(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                              BN: tl.constexpr):
    # BEGIN SOLUTION
    cols = tl.arange(0, BN)
    col_in = cols < N
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row, mask=row < M, other=0.0)
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        # dx's two row means: every xhat of the row depends on every x through mean and rstd.
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        tl.store(z_ptr + row * N + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
        dw += dy * xhat
        db += dy
    # The partial sums of this program's rows; other programs add theirs into the same columns at the same
    # time, so the adds must be atomic (z starts at zero).
    tl.atomic_add(z_ptr + M * N + cols, dw, mask=col_in)
    tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=col_in)
    # END SOLUTION
