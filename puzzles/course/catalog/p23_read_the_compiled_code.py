"""Puzzle 23: read the compiled code (a copy of padded rows, graded on how wide its loads and stores compile)."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course.library_baseline import ONE_TORCH_OP
from puzzles.course.puzzle import CompiledRule, Puzzle


def copy_rows_spec(x: Float32[Tensor, "N1 N0"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = x[j, i]"""
    return x.clone()


# What the verdict adds under the reasons it reads from the compiled code for each narrower load or store.
WIDTH_ADVICE = (
    "compiled(copy_rows_kernel, puzzle=23) shows the same compile: in `.ttgir` each load's layout (sizePerThread: "
    "the adjacent elements one thread holds) and the promises Triton kept (tt.divisibility, tt.constancy), in "
    "`.ptx` the instructions. The statement says what you know that the compiler does not; the hints, how to "
    "tell it.")

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
thread and instruction, the widest a thread can move at once), for sm_90 at the first size below. The compiler
writes one only where three things hold, and the compiled code shows each:

- **elements per thread**: one thread holds four adjacent float32 of the block. A program's elements are shared
  among its threads, `num_warps` warps of 32 (4 warps, 128 threads, unless the kernel says otherwise): a block of
  128 columns gives each of 128 threads one.
- **alignment**: the compiler can prove that each group of four starts at a multiple of 16 bytes.
- **the mask**: it can prove the mask the same for all four.

The statement guarantees what alignment and the mask need: **`N0` and `S1` are multiples of 4 at every size**,
so every row of `x` and of `z` starts at a multiple of 16 bytes. The compiler does not know it, and a first copy
that computes the right values compiles to 32-bit loads and stores. The verdict names each narrower load or
store, its line, and which of the three it misses; find out in the compiled code how to tell the compiler.

Block it as you like: tiles of `B1` rows by `B0` columns, or one row at a time in a loop over the program's `B1`
rows. The launch is yours too: a kernel that wants other than 4 warps carries its number, as
`@triton.autotune(configs=[triton.Config({}, num_warps=1)], key=[])` above `@triton.jit` does (one config:
nothing is timed), so that the grading cell, `python -m puzzles grade` and a class's grader launch it alike.
""",
    sizes=(
        {"N0": 100, "N1": 6, "S1": 108, "S0": 1, "B0": 128, "B1": 8},
        {"N0": 36, "N1": 20, "S1": 52, "S0": 1, "B0": 32, "B1": 4},
        {"N0": 200, "N1": 9, "S1": 212, "S0": 1, "B0": 64, "B1": 2},
        {"N0": 20, "N1": 7, "S1": 20, "S0": 1, "B0": 16, "B1": 8},  # rows not padded: S1 = N0
    ),
    hints=(
        "The idea: first a copy with the right values (puzzle 19's, with `S1` for the rows of `x`), then read what "
        "it compiles to. Each narrow access misses one of the statement's three conditions; the verdict and "
        "`compiled(copy_rows_kernel, puzzle=23)` say which (in `.ttgir`, `sizePerThread` is what one thread holds, "
        "and `tt.divisibility` / `tt.constancy` the promises the compiler kept).",
        "The shape: what the compiler lacks, you promise on a value the kernel computes, never on an argument "
        "(Triton drops a promise on a kernel argument). `tl.multiple_of(value, n)` says every element of the value "
        "is a multiple of n (elements for an integer offset; bytes for a pointer), `tl.max_constancy(mask, n)` "
        "that the mask is the same over each aligned group of n. One promise for each row start, one for the "
        "column mask. A one-row block of 128 columns also needs fewer threads than 128.",
        "One key line: `x_rows = tl.multiple_of(j * S1, 4)`: every row of `x` starts at a multiple of 4 elements "
        "(16 bytes). Its twin for `z` uses `N0`; the mask's promise is about `i < N0`.",
    ),
    strided_inputs={"x": ("S1", "S0")},
    compiled_rule=CompiledRule(min_bits=128, target=90, advice=WIDTH_ADVICE),
    notebook_cells=(("markdown", READ_TEXT), ("code", READ_CODE)),
    # A copy: every element exact.
    rtol=0.0,
    atol=0.0,
    no_library=ONE_TORCH_OP.format(op="x.clone(), a copy"),
)
