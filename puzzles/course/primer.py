"""Notebook 00: the Triton programming model in four small runnable demos.

Content only: `primer_cells` gives the cells as (kind, source); puzzles/course/notebooks.py assembles them
into the notebook with the course's Colab link and set-up cells, as it does for every puzzle.
"""

from __future__ import annotations

PRIMER_NAME = "00_primer.ipynb"


def primer_cells(colab_link: str, setup_source: str, imports_source: str) -> list[tuple[str, str]]:
    """The primer's cells, in order, as (kind, source): `colab_link` is the markdown of its "Open in
    Colab" badge, `setup_source` and `imports_source` the course's first two code cells."""
    return [
        ("markdown", f"""{colab_link}

# Puzzle 0: a primer on Triton

A Triton kernel is a Python function decorated with `@triton.jit` that runs once per
**program**. Each program works on a **block** of elements at once: `tl.arange(0, B)` is a
block of `B` offsets (a power of two), `tl.load(ptr + offsets, mask=...)` reads a block from
memory, `tl.store` writes one, and `tl.program_id(axis)` says which program this is. You launch
a kernel over a **grid** of programs: `kernel[grid](arguments...)`. A kernel returns nothing: its
results go to memory through `tl.store`. Block sizes are parameters marked `B0: tl.constexpr`:
their values are fixed when the kernel is compiled (once per value), as `tl.arange` and block
shapes need; sizes such as `N0` are plain arguments, known only when the kernel runs, so a block
of `B0` lanes covers them with a mask.

Without a GPU, `import puzzles` turns on Triton's interpreter (`TRITON_INTERPRET=1`): the same
kernels run on the CPU as ordinary Python, so you can print inside them and use a debugger.
On a CUDA GPU they are compiled and run for real, in a separate process with the GPU's memory.
The demos below launch through `sandboxed(kernel)[grid](...)` instead of `kernel[grid](...)`: the
same launch, run where a mistake cannot hurt this notebook (the grader's own place: a child process,
or the GPU process), with the tensors' new values copied back into yours. Edit the demos freely: a
wrong address ends that launch with a message, not the notebook."""),
        ("code", setup_source),
        ("code", imports_source + """from puzzles import sandboxed
"""),
        ("markdown", """## Demo 1: load a block with a mask

A block has a power-of-two size, but the data rarely does. The mask says which lanes are real:
masked-off lanes are not read, and `other=` gives the value they take."""),
        ("code", """@triton.jit
def demo_load(x_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0, other=0.0)
    print("offsets", offsets)
    print("x", x)


x = torch.arange(5, dtype=torch.float32)
sandboxed(demo_load)[(1,)](x, 5, B0=8)  # one program; lanes 5, 6, 7 are masked off and read as 0"""),
        ("markdown", """## Demo 2: a 2-D block

Blocks can have two dimensions. Broadcasting builds a grid of offsets: `rows[:, None] * N0 +
cols[None, :]` is the address of element `[row, col]` of a row-major matrix with `N0` columns."""),
        ("code", """@triton.jit
def demo_load_2d(x_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    cols = tl.arange(0, B0)
    rows = tl.arange(0, B1)
    mask = (rows[:, None] < N1) & (cols[None, :] < N0)
    x = tl.load(x_ptr + rows[:, None] * N0 + cols[None, :], mask=mask, other=-1.0)
    print("x", x)  # a kernel's print starts with a constant string (the compiler needs one)


x = torch.arange(12, dtype=torch.float32).view(3, 4)  # 3 rows of 4
sandboxed(demo_load_2d)[(1,)](x, 4, 3, B0=8, B1=4)"""),
        ("markdown", """## Demo 3: a masked store

`tl.store(ptr + offsets, values, mask=...)` writes only where the mask is true. Without the mask,
lanes past the end would write outside the tensor: the grader reports that as an out-of-bounds
access, with the program id and the line."""),
        ("code", """@triton.jit
def demo_store(z_ptr, N0, B0: tl.constexpr):
    offsets = tl.arange(0, B0)
    tl.store(z_ptr + offsets, offsets * 10, mask=offsets < N0)


z = torch.zeros(5, dtype=torch.int32)
sandboxed(demo_store)[(1,)](z, 5, B0=8)
z"""),
        ("markdown", """## Demo 4: several programs

A grid of `cdiv(N0, B0)` programs covers a long vector: program `pid` takes the block that starts
at `pid * B0`. Programs run independently (on a GPU, in parallel; here, one after another)."""),
        ("code", """@triton.jit
def demo_programs(z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    tl.store(z_ptr + offsets, pid, mask=offsets < N0)


N0, B0 = 10, 4
z = torch.full((N0,), -1, dtype=torch.int32)
sandboxed(demo_programs)[(triton.cdiv(N0, B0),)](z, N0, B0=B0)
z  # which program wrote each element"""),
        ("markdown", """## Printing and stopping in one program

In the interpreter, `print` works inside a kernel, once per program. To keep the output short,
`print_if(..., pid_0=[...])` prints only in the programs you name, and `breakpoint_if(pid_0=[...])`
stops there in the debugger (run the grader with `test(..., isolate=False)` so the debugger can
reach you; type `p offsets` to see a block, `c` to continue). Compiled for a GPU, `print` and
`print_if` become `tl.device_print`: a line per element with its program id and index (repeated
where several threads hold the element; the message must be a string in quotes, the program ids
numbers); `breakpoint_if` does nothing there,
and the grader says how to switch the notebook to the interpreter to step through the kernel.
Before launching your own kernels on tensors you made, `check_tensors(x, z)` checks they are
contiguous: kernels index memory by hand and a transposed view would be read wrongly."""),
        ("code", """from puzzles import check_tensors, print_if


@triton.jit
def demo_print(z_ptr, N0, B0: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    print_if("program 1 writes", offsets, pid_0=[1])
    tl.store(z_ptr + offsets, 1, mask=offsets < N0)


z = torch.zeros(10, dtype=torch.int32)
check_tensors(z)
sandboxed(demo_print)[(3,)](z, 10, B0=4)"""),
        ("markdown", """## Reading the grader's verdict

Each puzzle ends with a grading cell such as `test(add_kernel, add_spec, nelem={"N0": 32})`. It
runs your kernel at the size shown and at other sizes the puzzle allows (so a hard-coded size or a
missing mask is caught), on fresh random inputs each time, with the output filled with a marker
first. The verdict lists, per size: **right**; **wrong** values (the first ones, expected vs got);
elements **never written**; accesses **out of bounds** (tensor, element, program id, your line);
or an **error** in your kernel (its message and your line). A kernel that runs too long is
stopped; your notebook survives. Every verdict carries the random `seed`: pass `seed=...` to get
the same inputs again. The result is also an object: `result.passed`, `result.outcomes`.

Here is the verdict on a kernel that forgot its mask:"""),
        ("code", """from puzzles import get

add2_spec = get(2).spec  # puzzle 2's spec


@triton.jit
def forgot_the_mask_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)  # no mask: the last block reads past the end
    tl.store(z_ptr + offsets, x + 10.0)


result = test(forgot_the_mask_kernel, add2_spec, nelem={"N0": 200}, B={"B0": 32})"""),
        ("code", "result.passed, result.first_failure.status"),
        ("markdown", "On to [puzzle 1](01_constant_add.ipynb)."),
    ]
