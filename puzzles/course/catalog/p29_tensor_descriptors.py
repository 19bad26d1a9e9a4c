"""Puzzle 29: tensor descriptors (a tiled transpose whose tiles move by TMA; graded on its compiled code too)."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import mistakes_descriptors as slips
from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import CompiledRule, Mistake, Puzzle, SpeedGoal, TritonFeature
from puzzles.running.interpreter_hooks import has_tensor_descriptors


def transpose_spec(x: Float32[Tensor, "N1 N0"]) -> Float32[Tensor, "N0 N1"]:
    """z[i, j] = x[j, i]"""
    return x.T.contiguous()


# What the verdict adds under each load or store that is not a TMA copy.
TMA_ADVICE = (
    "A tensor descriptor's load and store (x_desc.load([...]), z_desc.store([...], tile)) compile to TMA copies for "
    "sm_90; tl.load and tl.store of a block of pointers compile to instructions of each thread, whatever their "
    "width. compiled(transpose_kernel, puzzle=29) shows what each of your loads and stores became.")

READ_TEXT = """\
## Read the copies

`compiled()` compiles your kernel for a GPU on this machine (puzzle 23). For sm_90 the summary lists each load and
store as `bulk`: one `cp.async.bulk.tensor` instruction, issued by one thread, moves the whole tile between global
and shared memory. Before them the PTX fills in the descriptor itself (`tensormap.replace`: the address, shape,
strides and tile you gave `tl.make_tensor_descriptor`). Compile the same kernel for `"sm_80"`: the A100 has no TMA,
and the same descriptor becomes per-thread `ld.global` and `st.global` with the bounds checked in registers."""

READ_CODE = """\
from puzzles import compiled

code = compiled(transpose_kernel, puzzle=29, target="sm_90")
print("\\n".join(line.strip() for line in code.ptx.splitlines() if "cp.async.bulk.tensor" in line))
print(compiled(transpose_kernel, puzzle=29, target="sm_80").summary())
code
"""

PUZZLE = Puzzle(
    number=29,
    slug="tensor_descriptors",
    title="Tensor descriptors",
    kernel_name="transpose_kernel",
    spec=transpose_spec,
    statement=r"""
**Triton as it is written now (puzzles 29 on).** Triton 3.9 removed block pointers in favour of *tensor
descriptors*, which compile to Hopper's copy engine. This puzzle needs Triton 3.5 or later (the course's
interpreter runs device-side descriptors from 3.5 on; the grader says so on an older one).

Transpose a matrix, tile by tile:

$$z_{i,j} = x_{j,i} \qquad 0 \le i < N_0,\; 0 \le j < N_1$$

`x` is `N1 × N0` float32 and `z` is `N0 × N1`, both contiguous. Program `(p0, p1)` of the grid
`(cdiv(N0, B0), cdiv(N1, B1))` takes the `B1 × B0` tile of `x` whose first row is `j0 = p1·B1` and first column
`i0 = p0·B0`, and stores it transposed as the `B0 × B1` tile of `z` at row `i0`, column `j0`.

**A tensor descriptor** describes a whole tensor once: `tl.make_tensor_descriptor(x_ptr, shape=[N1, N0],
strides=[N0, 1], block_shape=[B1, B0])` (strides in elements; the block shape is the tile each load and store
moves, powers of two). Then `x_desc.load([j0, i0])` returns the tile whose first element is `x[j0, i0]`
(coordinates in elements, not in tiles), with zeros where the tile hangs over the edge, and
`z_desc.store([i0, j0], tile)` writes one, dropping what falls outside `z`. No pointers, no masks: the descriptor
handles the boundary, and `N0` and `N1` are not multiples of the blocks.

**TMA.** On an H100 (sm_90) a descriptor is a 128-byte *tensor map* and each load or store is one
`cp.async.bulk.tensor` instruction: the Tensor Memory Accelerator, a copy engine beside each SM, moves the whole
tile between global and shared memory and does the addressing and the bounds in hardware, while the threads do
other work. On older GPUs (the A100, Colab's T4) and under the interpreter the same kernel runs with ordinary
loads and stores. The hardware has rules, and every size here keeps them:

- the tensor starts at a multiple of 16 bytes (every torch allocation does), and every stride but the last is a
  multiple of 16 bytes: **`N0` and `N1` are multiples of 4 at every size** (rows of 4·N0 and 4·N1 bytes);
- a store writes whole 16-byte chunks along the last dimension: a row whose bytes are not a multiple of 16 would
  also get the bytes past its end (the grader writes them, as a GPU does). Rows of `N1` floats, `N1` a multiple
  of 4, end on a chunk;
- a tile's last dimension is at least 16 bytes (`B0`, `B1` ≥ 4) and no side is over 256 elements.

**This puzzle is graded on its compiled code too**: compiled for sm_90 at the first size, every global load and
store must be a TMA copy. A transpose with `tl.load` and `tl.store` of pointers computes the right values and is
told which line is not one.

On a GPU, a kernel that makes descriptors needs scratch memory for its tensor maps: `test()` gives it one; to
launch it yourself, first `triton.set_allocator(lambda size, alignment, stream: torch.empty(size,
dtype=torch.int8, device="cuda"))`.
""",
    sizes=(
        {"N0": 100, "N1": 60, "B0": 32, "B1": 16},
        {"N0": 36, "N1": 92, "B0": 16, "B1": 32},
        {"N0": 200, "N1": 132, "B0": 64, "B1": 64},
        {"N0": 64, "N1": 96, "B0": 32, "B1": 32},  # whole tiles
    ),
    hints=(
        "The idea: two descriptors, one per tensor, each with that tensor's own shape and strides and the tile it "
        "moves (x's `[B1, B0]`, z's `[B0, B1]`); then one load, a transpose of the tile in registers "
        "(`tl.trans`), one store. There is no mask to write.",
        "The coordinates are elements, in the order of the tensor's dimensions: x's tile starts at row "
        "`j0 = tl.program_id(1) * B1`, column `i0 = tl.program_id(0) * B0`; z = xᵀ swaps them, so z's tile starts "
        "at `[i0, j0]`. z's descriptor: `shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1]`.",
        "The key line: `z_desc.store([i0, j0], tl.trans(x_desc.load([j0, i0])))`.",
    ),
    likely_mistakes=(
        Mistake("z's tile is stored at x's corner [j0, i0]: z = xᵀ swaps the axes, so x's tile at row j0, column i0 "
                "lands in z at row i0, column j0: store at [i0, j0]", slips.store_at_load_corner),
        Mistake("x's tile is loaded at z's corner [i0, j0]: x's rows are the j's (program_id(1) * B1) and its "
                "columns the i's (program_id(0) * B0): load at [j0, i0]", slips.load_at_store_corner),
        Mistake("z's descriptor has x's shape and strides ([N1, N0], [N0, 1]); z = xᵀ is N0 × N1, its rows N1 "
                "long: shape=[N0, N1], strides=[N1, 1]", slips.z_described_as_x),
        Mistake("each tile is stored as it was loaded: transpose it first, tl.trans(tile)", slips.tile_not_transposed),
    ),
    compiled_rule=CompiledRule(target=90, advice=TMA_ADVICE, tma=True),
    no_library=ONE_TORCH_OP.format(op="x.T.contiguous()"),
    needs_triton=TritonFeature("device-side tensor descriptors (tl.make_tensor_descriptor)", "3.5",
                               has_tensor_descriptors),
    notebook_cells=(("markdown", READ_TEXT), ("code", READ_CODE)),
    # Measured on an H200 (benchmarks/results/nvidia-h200/p29_tiles.md, p29_variants.md): every TMA-only transpose
    # tried (the reference over 18 tile shapes and warps, both halves' copies in flight, puzzle 16's grouped order)
    # took 148 to 154 us; torch.compile's pointer transpose 138 us; a copy's memory floor 131 us.
    perf_size={"N0": 8192, "N1": 8192, "B0": 64, "B1": 128},
    speed_goal=SpeedGoal(vs_compile=0, roofline=0.8, compile_note=(
        "every load and store here is a TMA copy, which torch.compile's transpose is not: its pointer loads and "
        "stores took 138 us on an H200 where every TMA-only transpose measured took 148 to 154 us (the tile's "
        "transpose goes through registers between the two copies); the goal is the memory roofline"), levers=(
        "tiles of 64 x 128 (or 32 x 256) float32 with 4 warps: each TMA copy then moves 32 KB, and fewer programs pay "
        "the descriptor's set-up")),
    # A copy: every element exact.
    rtol=0.0,
    atol=0.0,
)
