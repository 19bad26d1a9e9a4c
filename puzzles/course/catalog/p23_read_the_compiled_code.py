"""Puzzle 23: read the compiled code (a copy of padded rows, graded on how wide its loads and stores compile)."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course.puzzle import CompiledRule, Puzzle


def copy_rows_spec(x: Float32[Tensor, "N1 N0"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = x[j, i]"""
    return x.clone()


# What the verdict adds when a load or store is narrower than 128 bits (it names which, its width and its line).
WIDTH_ADVICE = (
    "Triton turns four float32 into one 128-bit instruction only where it can prove three things about each group "
    "of four columns: their addresses are consecutive (tl.arange gives that), the first is a multiple of 16 bytes, "
    "and the mask is the same for all four. S1 and N0 reach the kernel as plain integers, and Triton assumes "
    "nothing of an integer that is not a multiple of 16: tell it what the statement guarantees, "
    "tl.multiple_of(row offset, 4) for each row's start in x and in z, and tl.max_constancy(column mask, 4) "
    "(the hints show where), then look again with compiled(copy_rows_kernel, puzzle=23)")

READ_TEXT = """\
## Read it yourself

`compiled()` shows what your kernel compiles to, for `target="sm_90"` (H100 class, the default), `"sm_80"`
(A100 class) or `"sm_75"` (the T4), on this machine: no GPU needed. The summary lists every global load and store
with its width and your line; `.ttir`, `.ttgir`, `.ptx` and `.sass` hold the four listings, folded under the
summary in a notebook. `test(..., compiled=True)` shows the same summary under the verdict of any puzzle.

Things to try: remove one hint at a time and watch which instruction narrows; pass `num_warps=8` (each thread
gets fewer columns); compile puzzle 11's `tl.dot` for sm_80 and sm_90 (`mma` against Hopper's `wgmma`); or
search the PTX yourself, as below. In the PTX a `.loc 1 14 ...` line says that the instructions after it come
from line 14 of your cell."""

READ_CODE = """\
from puzzles import compiled

code = compiled(copy_rows_kernel, puzzle=23, target="sm_90")
print("\\n".join(line.strip() for line in code.ptx.splitlines() if "ld.global" in line or "st.global" in line))
code
"""

PUZZLE = Puzzle(
    number=23,
    slug="read_the_compiled_code",
    title="Read the compiled code",
    kernel_name="copy_rows_kernel",
    spec=copy_rows_spec,
    statement=r"""
Puzzle 22 read the code that `torch.compile` writes for a spec. This one reads the code that Triton's compiler
makes of *your* kernel: the step to take when a kernel is slower than it should be. The course compiles every
kernel you grade for real GPUs, on this machine, and `compiled(kernel, puzzle=N)` shows the result: Triton's IR
(TTIR, then TTGIR with its layouts), the PTX and the SASS that the GPU runs, and a summary that names each
global load and store with its width.

This puzzle is graded on the compiled code. Copy a matrix whose rows are padded:

$$z_{j,i} = x_{j,i}$$

`x` has `N1` rows of `N0` float32, and row `j` starts `S1` elements after row `j - 1` (`S1 ≥ N0`; the grader
fills the padding with noise). Element `x[j, i]` sits at `x_ptr + j*S1 + i` (`S0 = 1`: a row's elements are
adjacent; the kernel does not get `S0`). `z` is contiguous: `z[j, i]` at `z_ptr + j*N0 + i`. Grid axis 0 walks
the columns in blocks of `B0`, axis 1 the rows in blocks of `B1`; mask both.

**Every global load and store must compile to 128-bit instructions** (`ld.global.v4.b32`: four float32 per
thread and instruction, the widest a thread can move at once), for sm_90 at the first size below. The statement
guarantees what that needs: **`N0` and `S1` are multiples of 4 at every size**, so every row of `x` and of `z`
starts at a multiple of 16 bytes. A first copy that computes the right values compiles to 32-bit loads and
stores: the compiler does not know what you know. The verdict says which load or store is narrower and at which
line; find out why in the compiled code and tell the compiler.
""",
    sizes=(
        {"N0": 100, "N1": 6, "S1": 108, "S0": 1, "B0": 128, "B1": 8},
        {"N0": 36, "N1": 20, "S1": 52, "S0": 1, "B0": 32, "B1": 4},
        {"N0": 200, "N1": 9, "S1": 212, "S0": 1, "B0": 64, "B1": 2},
        {"N0": 20, "N1": 7, "S1": 20, "S0": 1, "B0": 16, "B1": 8},  # rows not padded: S1 = N0
    ),
    hints=(
        "First the copy, as in puzzle 19: `i` for this program's columns, `j` for its rows, the mask "
        "`(j[:, None] < N1) & (i[None, :] < N0)`, a load at `x_ptr + j[:, None] * S1 + i[None, :]` and a store at "
        "`z_ptr + j[:, None] * N0 + i[None, :]`. The grader checks its values, then reads its compiled code.",
        "Run `compiled(copy_rows_kernel, puzzle=23)` (below the grading cell). Each `ld.global.b32` moves one "
        "float. The compiler groups four columns into one `ld.global.v4.b32` only where it can prove that their "
        "addresses are consecutive, that the first is a multiple of 16 bytes and that the mask is the same for "
        "the four. Which of these can it not see?",
        "`tl.multiple_of(j * S1, 4)` is `j * S1`, with your promise that every value is a multiple of 4 (a "
        "promise: the compiler trusts it, and a false one makes a GPU load from the wrong address). Use it for the "
        "rows of `x`, and `tl.multiple_of(j * N0, 4)` for the rows of `z`.",
        "The mask: `i < N0` is the same for columns 4k to 4k + 3 because `N0` is a multiple of 4, which the "
        "compiler does not know. `columns = tl.max_constancy(i < N0, 4)` says so; then "
        "`mask = (j[:, None] < N1) & columns[None, :]`.",
    ),
    strided_inputs={"x": ("S1", "S0")},
    compiled_rule=CompiledRule(min_bits=128, target=90, advice=WIDTH_ADVICE),
    notebook_cells=(("markdown", READ_TEXT), ("code", READ_CODE)),
    # A copy: every element exact.
    rtol=0.0,
    atol=0.0,
)
