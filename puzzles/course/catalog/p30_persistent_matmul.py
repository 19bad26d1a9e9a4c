"""Puzzle 30: a persistent matmul (NUM_PROGRAMS programs loop over the output tiles in grouped order)."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course import mistakes_persistent as slips
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal, TileOnce


def persistent_matmul_spec(x: Float32[Tensor, "M K"], y: Float32[Tensor, "K N"]) -> Float32[Tensor, "M N"]:
    """z = x @ y"""
    return x @ y


PUZZLE = Puzzle(
    number=30,
    slug="persistent_matmul",
    title="Persistent matmul",
    kernel_name="persistent_matmul_kernel",
    spec=persistent_matmul_spec,
    statement=r"""
`z = x @ y` with `x` of shape `M × K`, `y` of shape `K × N` and `z` of shape `M × N`, all float32:

$$z_{m,n} = \sum_{k=0}^{K-1} x_{m,k}\, y_{k,n}$$

**A persistent kernel.** Until now a matmul launched one program per `BM × BN` tile of `z`. Here the grid is
`(NUM_PROGRAMS,)`, a launch argument, usually the GPU's number of multiprocessors (132 on an H100 or H200), and
each program loops over its share of the `num_tiles = TM · TN` tiles (`TM = cdiv(M, BM)`, `TN = cdiv(N, BN)`):

```python
for tile in range(pid, num_tiles, NUM_PROGRAMS):   # pid, pid + NUM_PROGRAMS, pid + 2·NUM_PROGRAMS, …
```

Tile index `tile` becomes a tile row and column in **grouped order**, as in puzzle 16 (bands of `GROUP_M` tile
rows, each walked column by column; the last band may be shorter). Each tile starts a fresh float32 accumulator,
walks `K` in chunks of `BK` with `tl.dot`, and stores its tile, masked at the ragged edges (`M`, `N` and `K` are
not multiples of the blocks).

**Why.** One program per tile launches thousands of programs in *waves*: the last wave is often part-full, and
every program pays its start-up. With one program per multiprocessor, every program stays resident for the whole
launch, there is no tail wave, and the loop over tiles is where today's Triton overlaps the next tile's loads with
this tile's math (pipelining) and splits the work between warps (warp specialization, the next puzzle).

**Every tile computed exactly once.** The grader varies `NUM_PROGRAMS` (1, 3, 7, and more programs than tiles)
and reads the stores: a tile computed twice (even with the right values) or never is named by its
(tile row, tile column).
""",
    sizes=(
        {"M": 100, "N": 72, "K": 40, "BM": 32, "BN": 16, "BK": 16, "GROUP_M": 2, "NUM_PROGRAMS": 3},
        {"M": 64, "N": 64, "K": 64, "BM": 16, "BN": 32, "BK": 32, "GROUP_M": 2, "NUM_PROGRAMS": 1},  # whole tiles
        # TM = 4 with GROUP_M = 3: a last band of one tile row
        {"M": 50, "N": 90, "K": 33, "BM": 16, "BN": 16, "BK": 32, "GROUP_M": 3, "NUM_PROGRAMS": 7},
        {"M": 40, "N": 24, "K": 20, "BM": 16, "BN": 16, "BK": 16, "GROUP_M": 2, "NUM_PROGRAMS": 10},  # 6 tiles
    ),
    hints=(
        "The shape: `pid = tl.program_id(0)`, `num_tiles = tl.cdiv(M, BM) * tl.cdiv(N, BN)`, then "
        "`for tile in range(pid, num_tiles, NUM_PROGRAMS):` around the whole of a tiled matmul (puzzle 11's body).",
        "Inside the loop, turn `tile` into `(tile_m, tile_n)` with puzzle 16's grouped remap (`tile` in place of "
        "`pid`), or `tl.swizzle2d(tile // TN, tile % TN, TM, TN, GROUP_M)`.",
        "Create `acc = tl.zeros([BM, BN], dtype=tl.float32)` inside the tile loop, not before it; mask the loads "
        "with `other=0.0` (rows past M, columns past N, chunks past K) and the store with rows < M and columns < N.",
    ),
    grid=lambda s: (s["NUM_PROGRAMS"],),
    # On a GPU, tl.dot on float32 uses TF32 (10 mantissa bits) unless told otherwise.
    rtol=1e-2,
    atol=1e-2,
    tile_once=TileOnce(block=("BM", "BN")),
    likely_mistakes=(
        Mistake("the loop starts at 0, range(0, num_tiles, NUM_PROGRAMS): every program computes the same tiles and "
                "the others are left; start at the program's id, range(pid, num_tiles, NUM_PROGRAMS)",
                slips.loop_from_zero, where=slips.loop_from_zero_where),
        Mistake("the tile index is split by the number of tile rows (tile_m = tile // TM, tile_n = tile % TM); in "
                "row-major order a row holds TN tiles: tile_m = tile // TN, tile_n = tile % TN",
                slips.row_major_split_by_tiles_m),
        Mistake("the accumulator is created once, before the tile loop, so each tile adds the program's earlier "
                "tiles: create acc = tl.zeros([BM, BN], dtype=tl.float32) inside the loop over tiles",
                slips.accumulator_once_per_program),
        Mistake("the last band is taken as GROUP_M tile rows high; it has only TM − first_m rows when fewer are "
                "left: rows = min(TM − first_m, GROUP_M) in the remap's division and remainder", slips.full_last_band),
    ),
    # NUM_PROGRAMS = 132 is the SM count of an H100 SXM and an H200, the GPUs the course's goals are measured on; the
    # speed run launches this fixed size, where a learner's notebook would pass
    # torch.cuda.get_device_properties(0).multi_processor_count.
    perf_size={"M": 4096, "N": 4096, "K": 4096, "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "NUM_PROGRAMS": 132},
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    speed_goal=SpeedGoal(levers=(
        "128 x 128 x 64 tiles (or 128 x 256), num_warps 8, num_stages 3-4 so the next chunk's loads overlap this "
        "chunk's dot; NUM_PROGRAMS the SM count; GROUP_M of 8 so resident programs share panels in L2"),
        # Not yet measured for this puzzle: puzzle 11 measured cuBLAS's TF32 matmul out of reach of float32 tl.dot
        # tiles on an H200 (y's tiles are N-major); the lead's GPU run confirms or drops this note.
        library_note=(
            "cuBLAS's TF32 matmul reads y in the layout Hopper's TF32 tensor-core instruction wants, while a "
            "tl.dot of float32 tiles has y's N-major tiles transposed on the way: puzzle 11 measured every such "
            "kernel over 2x behind cuBLAS on an H200")),
    library=LibraryBaseline(
        "torch.mm (cuBLAS, TF32 on)", library_ops.persistent_mm_library, allow_tf32=True,
        why="a user multiplies float32 matrices with torch.mm, with TF32 allowed when its 10-bit mantissa is "
            "enough, as this puzzle's tolerance says it is"),
)
