"""Puzzle 16: grouped ("swizzled") program order for a tiled matmul."""

import torch
from jaxtyping import Int32
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.catalog.tracks import QUANTIZATION_ORDER_NOTE
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.picture_hooks import TileOrder
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal, cdiv


def grouped_order_spec(
    *, M: int, N: int, BM: int, BN: int, GROUP_M: int
) -> Int32[Tensor, "((M+BM-1)//BM)*((N+BN-1)//BN) 2"]:
    """z[pid] = (tile_m, tile_n): GROUP_M tile rows at a time, walked column by column"""
    tiles_m, tiles_n, group_m = -(-M // BM), -(-N // BN), GROUP_M
    pid = torch.arange(tiles_m * tiles_n)
    per_band = group_m * tiles_n  # programs in one band of GROUP_M tile rows
    first_m = (pid // per_band) * group_m  # the band's first tile row
    rows = torch.clamp(tiles_m - first_m, max=group_m)  # the last band may be shorter
    tile_m = first_m + (pid % per_band) % rows
    tile_n = (pid % per_band) // rows
    return torch.stack([tile_m, tile_n], dim=1).to(torch.int32)


PUZZLE = Puzzle(
    number=16,
    slug="grouped_tile_order",
    title="Grouped tile order",
    kernel_name="grouped_order_kernel",
    spec=grouped_order_spec,
    statement=r"""
A tiled matmul `C = A @ B` (`A` is `M × K`, `B` is `K × N`) gives each program one
`BM × BN` tile of `C`: tile `(tm, tn)` reads row panel `tm` of `A` (`BM × K`) and column
panel `tn` of `B` (`K × BN`). There are `TM × TN` tiles, `TM = cdiv(M, BM)` and
`TN = cdiv(N, BN)`, and the kernel is launched on a one-dimensional grid of that many
programs. Which tile a program takes does not change the result, but it changes the speed.

**Why the order matters.** A GPU starts programs roughly in order of their id, as many at once
as its multiprocessors hold, and the panels they read pass through the L2 cache. In row-major order (program
`pid` takes `tm = pid // TN`, `tn = pid % TN`), the first `TN` programs read one panel of `A`
and *all* `TN` panels of `B`: computing 9 tiles in a 9 × 9 grid touches 1 + 9 = 10 panels.
In **grouped** order, consecutive programs walk down a column of a band of `GROUP_M` tile
rows, then move to the next column: the first 9 programs (with `GROUP_M = 3`) compute a
3 × 3 square of tiles and touch 3 + 3 = 6 panels. Every panel is re-read by several programs
while it is still in L2, so fewer bytes come from DRAM.

**The order.** Cut the tile rows into bands of `GROUP_M` (the last band has `TM mod GROUP_M`
rows when that is not 0). Bands are taken in order; inside a band, programs go down the first
column of the band, then the second, and so on. For a band starting at tile row `m0` with
`g` rows, its `i`-th program (counting from 0) takes

$$t_m = m_0 + (i \bmod g), \qquad t_n = \lfloor i / g \rfloor$$

**The kernel.** Program `pid` (grid `(TM · TN,)`) writes its tile: `z[pid, 0] = tm`,
`z[pid, 1] = tn`, into the int32 `TM·TN × 2` output. It gets `M`, `N`, `BM`, `BN` and
`GROUP_M`, and no input tensor (the spec likewise takes only the sizes). `TM` need not be a
multiple of `GROUP_M`. Write the remap yourself with integer arithmetic (`//`, `%`, `tl.minimum`,
`tl.cdiv`), or use `tl.swizzle2d`, Triton's own version of the same remap.
""",
    sizes=(
        {"M": 100, "N": 72, "BM": 16, "BN": 16, "GROUP_M": 3},
        {"M": 64, "N": 48, "BM": 16, "BN": 16, "GROUP_M": 4},
        # A short last band of 2 rows starting at program 15: a position in the band taken from `pid`
        # instead of `pid % (GROUP_M * TN)` fails here (full bands and 1-row bands hide it).
        {"M": 150, "N": 40, "BM": 32, "BN": 8, "GROUP_M": 3},
        {"M": 48, "N": 80, "BM": 16, "BN": 32, "GROUP_M": 8},
    ),
    hints=(
        "Start with `TM = tl.cdiv(M, BM)` and `TN = tl.cdiv(N, BN)`. A band of `GROUP_M` tile rows holds "
        "`GROUP_M * TN` programs, so program `pid` is in band `pid // (GROUP_M * TN)`, which starts at tile row "
        "`m0 = band * GROUP_M`.",
        "The last band can be short: its height is `g = tl.minimum(TM - m0, GROUP_M)`. Use `g`, not `GROUP_M`, in "
        "the division and the remainder of the formula, or the last band walks off the bottom of the grid.",
        "With `i = pid % (GROUP_M * TN)`: `tm = m0 + i % g`, `tn = i // g`; store both at `z_ptr + 2 * pid` and "
        "`z_ptr + 2 * pid + 1`. (Or: `tm, tn = tl.swizzle2d(pid // TN, pid % TN, TM, TN, GROUP_M)`.)",
    ),
    grid=lambda s: (cdiv(s["M"], s["BM"]) * cdiv(s["N"], s["BN"]),),
    tile_order=TileOrder(rows="M", cols="N", block_rows="BM", block_cols="BN", group="GROUP_M"),
    launch_order_note=QUANTIZATION_ORDER_NOTE,
    likely_mistakes=(
        Mistake("the tiles are in row-major order (tm = pid // TN, tn = pid % TN): take the tile rows in bands of "
                "GROUP_M and walk each band column by column", mistakes.order_row_major),
        Mistake("the last band is taken as GROUP_M tile rows high; it has only TM − m0 rows when fewer are left: "
                "g = min(TM − m0, GROUP_M) in the division and the remainder", mistakes.order_full_last_band),
        Mistake("the tile row is pid % g, not i % g with i = pid % (GROUP_M · TN) the program's position in its band: "
                "the two agree wherever g divides the band's first program id, not in a short band after the first",
                mistakes.order_row_from_pid),
    ),
    perf_size={"M": 8192, "N": 8192, "BM": 128, "BN": 128, "GROUP_M": 8},
    # One program per tile is the lesson (the remap runs at the top of each program of a matmul): at the speed
    # size 4096 programs that store two integers each, where torch.compile's kernel writes the 8192 integers
    # with a few programs. The launch floor is the goal.
    speed_goal=SpeedGoal(vs_compile=0.0, roofline=0.5, compile_note=(
        "its kernel writes the pairs with a few programs, where this puzzle's grid is one program per tile, as "
        "the matmul that uses the order has"), levers=(
        "nothing to tune: the remap is a few integer operations per program and the launch is the time; its "
        "pay-off is in the matmul that uses it (puzzle 17)")),
    no_library=NO_SUCH_OP.format(what=(
        "the order of a matmul's tiles as a tensor: a library keeps it inside its kernel")),
)
