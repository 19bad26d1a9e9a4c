"""Puzzle 9: simple flash attention."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.bug_inputs import attention_inputs
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.picture_hooks import RegisterTensor
from puzzles.course.puzzle import FastReference, KSlice, Mistake, Puzzle, Reduction, ScalarWork, SpeedGoal, cdiv


def flashatt_spec(q: Float32[Tensor, "N0"], k: Float32[Tensor, "T"], v: Float32[Tensor, "T"]) -> Float32[Tensor, "N0"]:
    """z_i = sum_j softmax_j(q_i k_j) v_j"""
    x = q[:, None] * k[None, :]
    x_max = x.max(1, keepdim=True)[0]
    x = x - x_max
    x_exp = x.exp()
    soft = x_exp / x_exp.sum(1, keepdim=True)
    return (v[None, :] * soft).sum(1)


PUZZLE = Puzzle(
    number=9,
    slug="simple_flash_attention",
    title="Simple flash attention",
    kernel_name="flashatt_kernel",
    spec=flashatt_spec,
    reduction=Reduction("T", KSlice("k", 0)),  # a loop over T that stops early is named
    statement=r"""
Attention with scalar queries, keys and values: for each of the `N0` queries,

$$z_i = \sum_{j=0}^{T-1} \mathrm{softmax}_j(q_i k_j)\, v_j$$

Each program handles `B0` queries (grid `(cdiv(N0, B0),)`) and walks the `T` keys and values
in chunks of `B1`. Do it in one pass, as flash attention does: keep for each query a running
maximum `m` (starting at `-inf`), a running denominator `l` and a running weighted sum `acc` (both
starting at 0); when a chunk raises
the maximum, rescale `l` and `acc` by `exp(m_old - m_new)` before adding the chunk. `N0` and
`T` need not be multiples of the blocks; `B0` and `B1` are powers of two. At one of the tested
sizes the keys grow along the row, so the maximum changes in every chunk, and some queries'
scores reach ±120, where `exp(s)` alone is infinite in float32: subtract the maximum. At another,
some queries' scores are all below -105, where `exp(s)` is 0: a maximum that starts at 0 instead
of `-inf` never moves there, and the row comes out as 0 / 0.
""",
    sizes=(
        {"N0": 200, "T": 200, "B0": 64, "B1": 32},
        {"N0": 33, "T": 81, "B0": 16, "B1": 16},  # a last chunk of one key: `range(0, T - 1, B1)` fails
        {"N0": 40, "T": 96, "B0": 16, "B1": 32},  # T a multiple of B1: a loop one chunk short of it fails
        {"N0": 64, "T": 130, "B0": 32, "B1": 64},  # the shaped inputs (attention_growing_scores)
        {"N0": 48, "T": 100, "B0": 16, "B1": 32},  # rows whose scores are all under -105 (attention_all_scores_low)
    ),
    hints=(
        "Scores of a chunk: `s = q[:, None] * k[None, :]`, shape `B0 × B1`; mask key lanes past `T` with `-inf`.",
        "`m_new = tl.maximum(m, tl.max(s, 1))`; `p = tl.exp(s - m_new[:, None])`; "
        "`l = l * tl.exp(m - m_new) + tl.sum(p, 1)`; `acc = acc * tl.exp(m - m_new) + tl.sum(p * v[None, :], 1)`.",
        "At the end `z = acc / l`.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]),),
    perf_size={"N0": 16384, "T": 16384, "B0": 64, "B1": 64},
    fast_reference=FastReference(
        "Two changes to the one-pass kernel. The scores are products with a scalar query, so a row's largest "
        "score is known before the pass: `q * max(k)` for a query of 0 or more, `q * min(k)` for a negative one. "
        "A first loop over `k` alone (no exponentials) finds both, and the main loop needs no running maximum and "
        "no rescaling: one `exp2` per score. And the denominator and the weighted sum stay per lane, as `B0 × B1` "
        "tiles added element by element, summed across the lanes once after the loop; summing (and taking the "
        "maximum) across each chunk inside the loop costs three reductions across threads per chunk, which is "
        "what kept the one-pass kernel behind `torch.compile`. The loop over the full chunks needs no mask."),
    register_tensor=RegisterTensor("q·k", ("N0", "T"), caption="scores, in registers only"),
    draw_inputs=attention_inputs,
    likely_mistakes=(
        Mistake("the running weighted sum acc is not rescaled when the maximum grows: like l, multiply it by "
                "exp(m - m_new) before adding the chunk", mistakes.flash_acc_not_rescaled),
        Mistake("the key lanes past T are scored: their score 0 (k loaded as 0) counts in the denominator l; give "
                "them a score of -inf, tl.where(cols < T, s, -float('inf'))", mistakes.flash_padding_scored),
        Mistake("the running maximum is never kept (m = m_new is missing after the chunk): every chunk rescales "
                "the sums by exp(-inf) = 0 and only the last chunk is left", mistakes.flash_max_not_kept),
        Mistake("acc is stored without dividing by the denominator: z = acc / l", mistakes.flash_not_divided),
        Mistake("the running maximum starts at 0, not -inf: where every score of a row is below about -104, "
                "exp(s - 0) is 0 for each of them and z = 0 / 0; start it at -inf, tl.full((B0,), -float('inf'), "
                "tl.float32)", mistakes.flash_max_starts_at_zero),
    ),
    # A float32 softmax-weighted mean is off by about 1e-6 on any device; float16 arithmetic by 5e-4 and must fail.
    rtol=1e-4,
    atol=1e-4,
    scalar_work=lambda s: ScalarWork(fmas=3 * s["N0"] * s["T"], exps=s["N0"] * s["T"]),
    speed_goal=SpeedGoal(roofline=0.3, levers=(
        "one pass over k and v with a running maximum (online softmax); tl.exp2 with log2(e) folded into q "
        "once per program; large B1 (128-512) blocks of k and v; the exponentials bound it, not the bytes: "
        "every exp you avoid or move out of the loop counts")),
    library=LibraryBaseline(
        "F.scaled_dot_product_attention (head dimension 1, scale 1)", library_ops.attention_library,
        why="this is attention with one feature per position: a user calls SDPA, which picks its backend (with "
            "a head dimension of 1, its memory-efficient or math one)"),
)
