"""Puzzle 26: layer norm, backward (dx per row; dw and db summed across rows by many programs)."""

import torch
from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_dropout_norm as slips
from puzzles.course.bug_inputs import layernorm_saved_statistics
from puzzles.course.catalog.tracks import TRAINING_ORDER_NOTE
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.picture_hooks import SharedRows
from puzzles.course.puzzle import Mistake, OutputPart, OutputParts, Puzzle, SpeedGoal, cdiv


def layernorm_backward_spec(x: Float32[Tensor, "M N"], w: Float32[Tensor, "N"], dy: Float32[Tensor, "M N"],
                            mean: Float32[Tensor, "M"], rstd: Float32[Tensor, "M"]) -> Float32[Tensor, "M+2 N"]:
    """z[:M] = dx = rstd * (w*dy - mean_n(w*dy) - xhat * mean_n(w*dy*xhat)); z[M] = dw = sum_m dy*xhat; z[M+1] = db"""
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    dx = (wdy - xhat * (xhat * wdy).mean(1, keepdim=True) - wdy.mean(1, keepdim=True)) * rstd[:, None]
    dw = (dy * xhat).sum(0, keepdim=True)  # summed over the rows: every program holds a share
    db = dy.sum(0, keepdim=True)
    return torch.cat([dx, dw, db])


FIRST_N = 100  # the notebook cell's N: a kernel that writes N as a number most likely writes this one

PUZZLE = Puzzle(
    number=26,
    slug="layernorm_backward",
    title="Layer norm, backward",
    kernel_name="layernorm_backward_kernel",
    spec=layernorm_backward_spec,
    statement=r"""
The backward pass of puzzle 25's layer norm. The forward pass saved each row's mean $\mu_m$ and
$r_m = 1/\sqrt{\sigma^2_m + \varepsilon}$ (the "rstd"); with them, $\hat x_{m,n} = (x_{m,n} - \mu_m)\,r_m$
is the normalised row and $z = \hat x\, w + b$. Given the incoming gradient `dy` (`M × N`), three
gradients come back:

$$dx_{m,n} = r_m\Big(w_n\,dy_{m,n} - \frac{1}{N}\sum_{k} w_k\,dy_{m,k}
- \hat x_{m,n}\,\frac{1}{N}\sum_{k} w_k\,dy_{m,k}\,\hat x_{m,k}\Big), \qquad
dw_n = \sum_{m} dy_{m,n}\,\hat x_{m,n}, \qquad db_n = \sum_{m} dy_{m,n}$$

(the two row means are there because every $\hat x_{m,k}$ depends on every $x_{m,n}$ of its row,
through $\mu_m$ and $r_m$).

**Two directions of reduction.** `dx` reduces along each row, like the forward pass: one program can
own whole rows. `dw` and `db` reduce down the columns, over **all** `M` rows, and those rows are
spread over many programs. This puzzle grades one launch, and two ways finish those sums in it; both
are accepted:
- **atomics**: each program sums its own rows' terms (its *partial* sums) and adds them into `z` with
  `tl.atomic_add` (the grader starts `z` at zero, as `torch.zeros` would); one atomic per column per
  program. Fast, but float atomics add in an order that changes from run to run, and so do the last bits;
- **one program sums every row**: besides its own rows' `dx`, one program (program 0, say) walks all
  `M` rows for `dw` and `db` and stores them with a plain `tl.store`. It reads `x` and `dy` again and
  works alone at the end, which is slow where `M` is large, but it needs no atomics and gives the same
  bits on every run.

Triton's tutorial does a third, over two launches: partial sums into a `GROUP × N` buffer (rows taken
under a lock, `tl.atomic_cas`), then a second kernel sums the buffer. What does **not** work is a
load, an add and a store into `dw` by each program: on a GPU the programs run at the same time, two
of them read the same old value, and one program's rows are lost. Triton's interpreter runs the
programs one after another, so the sum comes out right there: the grader reports such a kernel as a
race, with the line of its plain store.

**Layout.** `x`, `dy` are `M × N`; `w` has `N` elements; `mean` and `rstd` have `M` (the grader
computes them from `x`, as puzzle 25's forward pass would: the row's mean, and `rstd = 1/√(σ² + ε)`
with the biased variance and `ε = 1e-5`, layer norm's default). The output `z` is `(M + 2) × N`: rows
`0 … M−1` hold `dx`, row `M` holds `dw` (at `z_ptr + M*N`), row `M + 1` holds `db`. The grid is
`(cdiv(M, BM),)`: program `p` owns rows `p·BM … p·BM + BM − 1` (`M` need not be a multiple of `BM`).
A row fits in one block: `BN` is a power of two at least `N`, so mask the columns `n < N`.
""",
    sizes=(
        {"M": 30, "N": FIRST_N, "BM": 4, "BN": 128},
        {"M": 17, "N": 33, "BM": 8, "BN": 64},
        {"M": 48, "N": 64, "BM": 16, "BN": 64},
        # Twenty programs adding into the same dw and db: a lost update is no rare event here.
        {"M": 40, "N": 200, "BM": 2, "BN": 256},
    ),
    hints=(
        "The idea: two reductions in two directions. `dx` needs two means along its own row, and a program owns "
        "whole rows. `dw` and `db` sum down the columns over all `M` rows, which lie in many programs: each "
        "program sums its own rows' terms, and those partial sums are combined across programs (the statement's "
        "two ways: atomics, or one program that sums every row itself).",
        "The shape, with atomics: the row is one block (`BN ≥ N`), so load `w` once. Loop over the program's `BM` "
        "rows (masked at `M` too): load the row's `x`, `dy`, `mean` and `rstd`, form `x̂` (0 on masked lanes), the "
        "two row means, store the row of `dx`, and add `dy · x̂` and `dy` into two `BN`-wide accumulators. After the "
        "loop, add each accumulator into its row of `z`, atomically.",
        "One key line: `tl.atomic_add(z_ptr + M * N + cols, dw, mask=cols < N)`: this program's share of `dw` (and "
        "`db` one row further).",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]),),
    output_init="zeros",
    draw_inputs=layernorm_saved_statistics,
    launch_order_note=TRAINING_ORDER_NOTE,
    shared_rows=SharedRows("M", ("dw", "db"), "BM"),
    output_parts=OutputParts(0, (OutputPart("dx", "M"), OutputPart("dw", 1, keeps_axis=False),
                                 OutputPart("db", 1, keeps_axis=False))),
    likely_mistakes=(
        Mistake("dx lacks its two row means: dx = rstd · (w·dy − mean(w·dy) − x̂ · mean(w·dy·x̂)), because every x̂ "
                "of a row depends on every x of it", slips.layernorm_dx_without_means),
        Mistake("dx lacks its term − mean(w·dy) (c2 = tl.sum(w * dy, axis=0) / N, through the row's mean μ): "
                "dx = rstd · (w·dy − mean(w·dy) − x̂ · mean(w·dy·x̂))", slips.layernorm_dx_without_mean_term),
        Mistake("dx lacks its term − x̂ · mean(w·dy·x̂) (c1 = tl.sum(x̂ * w * dy, axis=0) / N, through the row's "
                "rstd): dx = rstd · (w·dy − mean(w·dy) − x̂ · mean(w·dy·x̂))", slips.layernorm_dx_without_xhat_term),
        Mistake("dx uses dy where w · dy belongs (the gradient reaching x̂ is w · dy, in all three terms)",
                slips.layernorm_dx_without_weight),
        Mistake("the row means of dx are divided by BN, the block's width: divide by N (the masked lanes hold no "
                "element)", slips.layernorm_dx_means_over_block),
        Mistake(f"the row means of dx are divided by {FIRST_N}, the first size's N written as a number: divide by "
                "the kernel's argument N, which the graded sizes change", slips.layernorm_dx_means_over(FIRST_N)),
        Mistake("dw sums dy · x: the weight multiplies the normalised x̂ = (x − mean) · rstd, so dw = Σ dy · x̂",
                slips.layernorm_dw_from_x),
        Mistake("dw and db are swapped: dw = Σ dy · x̂ goes in row M (z_ptr + M * N + cols), db = Σ dy in row M + 1",
                slips.layernorm_dw_db_swapped),
        Mistake("dx is not multiplied by rstd: dx = rstd · (w·dy − mean(w·dy) − x̂ · mean(w·dy·x̂)), the rstd "
                "coming from x̂ = (x − mean) · rstd", slips.layernorm_dx_without_rstd),
    ),
    # dw and db are sums of up to 40 float32 terms added by atomics in any order, dx a difference of row
    # means: off by about 1e-6; a term left out, or float16 arithmetic, must fail.
    rtol=1e-4,
    atol=1e-4,
    perf_size={"M": 8192, "N": 1024, "BM": 16, "BN": 1024},
    speed_goal=SpeedGoal(
        vs_compile=1.0, roofline=0.5,
        levers="BM, the rows per program: enough programs to fill every multiprocessor, few enough that the "
               "atomics into each column of dw and db stay cheap (512 programs at the perf size); num_warps 4 to 8 "
               "for a BN of 1024; x and dy read once, dx written once"),
    library=LibraryBaseline(
        "aten native_layer_norm_backward (F.layer_norm's autograd)", library_ops.layernorm_backward_library,
        why="the kernel autograd runs for F.layer_norm's backward, given the forward's saved mean and 1/sigma as "
            "this puzzle's kernel is: dx, dw and db from x, w and dy"),
)
