"""Puzzle 21: multi-tensor apply (a fused SGD-with-momentum step over many tensors)."""

import torch
from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops, mistakes
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal, TensorLists
from puzzles.course.tensor_lists import list_sizes


def sgd_spec(params: Float32[Tensor, "T"], grads: Float32[Tensor, "T"], moms: Float32[Tensor, "T"], *,
             lr: float, momentum: float, weight_decay: float) -> Float32[Tensor, "2 T"]:
    """g = grad + wd * p;  m' = momentum * m + g;  p' = p - lr * m'  (z[0] = p', z[1] = m')"""
    g = grads + weight_decay * params
    new_moms = momentum * moms + g
    return torch.stack([params - lr * new_moms, new_moms])

LOOP_TEXT = """\
## One launch against a loop of launches

A model has hundreds of parameter tensors, many of them small (biases, norms). Updating them one
launch per tensor pays the launch overhead (several microseconds on a GPU) hundreds of times and
leaves most of the GPU idle during each small launch; one launch over the chunk map keeps every
program busy with a chunk of `B0` elements, whichever tensor it belongs to.

The cell below defines the loop's kernel, one tensor per launch, and hands both kernels to
`compare_with_loop` (from `puzzles`; `compare_with_loop??` shows its source). It
builds the tables for a list of real tensors with `tables` (what a fused optimizer does once per
step), runs your kernel once and the plain kernel once per tensor, checks that they agree and
counts the launches. On a GPU it also times both; on a CPU the interpreter's times mean nothing
(every program is NumPy code run one after another), so it reports only the counts. It runs the
kernels where `test()` does (a child process on a CPU, the GPU worker on a GPU), so a kernel with
a wild pointer gives a message here instead of ending the notebook.
"""

LOOP_CODE = """\
from puzzles import compare_with_loop


@triton.jit
def sgd_one_kernel(p_ptr, g_ptr, m_ptr, po_ptr, mo_ptr, N, lr, momentum, weight_decay, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < N
    p, g, m = tl.load(p_ptr + offs, mask=mask), tl.load(g_ptr + offs, mask=mask), tl.load(m_ptr + offs, mask=mask)
    m = momentum * m + g + weight_decay * p
    tl.store(mo_ptr + offs, m, mask=mask)
    tl.store(po_ptr + offs, p - lr * m, mask=mask)


numbers = compare_with_loop(sgd_kernel, sgd_one_kernel, lr=0.1, momentum=0.9, weight_decay=0.01)
"""

PUZZLE = Puzzle(
    number=21,
    slug="multi_tensor_apply",
    title="Multi-tensor apply",
    kernel_name="sgd_kernel",
    spec=sgd_spec,
    statement=r"""
One optimizer step over **many tensors of different sizes in one launch**: the trick behind
PyTorch's `foreach`/fused optimizers and Apex's `multi_tensor_apply`. The step is SGD with
momentum (weight decay `wd`, no dampening), element by element for each parameter tensor $p$,
its gradient $g$ and its momentum buffer $m$:

$$m' = \mu\, m + (g + \mathrm{wd}\; p), \qquad p' = p - \mathrm{lr}\; m'$$

There are `K` parameter tensors of lengths `L0, L1, ...` (all different), each in its **own
allocation**. The host cannot pass `3K` pointers, so it passes tables (the kernel reads them):

* `addresses` (`int64`, `5 × K`): row 0 the parameters, row 1 the gradients, row 2 the momentum
  buffers, row 3 where the new parameters go, row 4 where the new momentum goes; column `t` is
  tensor `t`'s address. Turn one back into a pointer with
  `tl.load(addresses_ptr + row * K + t).to(tl.pointer_type(tl.float32))`.
* `numels` (`int32`, `K`): tensor `t` has `numels[t]` elements.
* `chunks` (`int32`, `C × 2`), the **program-to-chunk map**: program `pid` updates chunk
  `chunks[pid, 1]` (elements `chunk*B0` to `chunk*B0 + B0 - 1`) of tensor `chunks[pid, 0]`.
  Each tensor is cut into `cdiv(L, B0)` chunks, so the grid is `(C,)` and the last chunk of
  a tensor is usually partial: mask it with that tensor's own size.

`lr`, `momentum` and `weight_decay` come as scalars. The new values go to tensors of their own,
one allocation each, like the inputs: rows 3 and 4 of the table point at them. `z_ptr` is the
first of them (the notebook's launch below passes `out_p[0]`), so it is not needed, and a kernel
that writes the lists end to end through it runs past that tensor. To compare with the spec, the
grader gathers the new values into `z` (row 0 the parameters, row 1 the momentum, each list end
to end).
`T` (the total size) and the `L`s are the grader's, not the kernel's.
""",
    sizes=(
        list_sizes([100, 37, 256, 5], 64, lr=0.1, momentum=0.9, weight_decay=0.01),
        list_sizes([300, 3, 130], 128, lr=0.05, momentum=0.8, weight_decay=0.0),
        list_sizes([64, 64, 1, 200, 77, 9], 32, lr=0.2, momentum=0.95, weight_decay=0.001),
    ),
    hints=(
        "First the map: `t = tl.load(chunks_ptr + 2 * pid)` and `c = tl.load(chunks_ptr + 2 * pid + 1)`; "
        "then `n = tl.load(numels_ptr + t)`.",
        "Five pointers from one table: `tl.load(addresses_ptr + r * K + t).to(tl.pointer_type(tl.float32))` for "
        "r = 0 .. 4. From here on it is puzzle 2: `offs = c * B0 + tl.arange(0, B0)`, `mask = offs < n`.",
        "The offset inside the tensor comes from the chunk index, not from the program id: program ids run "
        "across all the tensors.",
    ),
    grid=lambda s: (s["C"],),
    # Two float32 multiply-adds per element: a GPU's fused multiply-add is off by a unit in the last place;
    # an update computed in float16 is off by 1e-4 of the value and must fail.
    rtol=1e-5,
    atol=1e-5,
    # 120 tensors as a model's parameters come: large matrices, vectors, a few tiny ones (26M elements).
    perf_size=list_sizes([1 << 20, 4096, 1000, 1 << 18, 1024, 100] * 20, 1024, lr=0.1, momentum=0.9,
                         weight_decay=0.01),
    tensor_lists=TensorLists(lists=("params", "grads", "moms"), outputs=("params", "moms")),
    likely_mistakes=(
        Mistake("the weight decay is left out: the gradient is g + wd · p before it enters the momentum",
                mistakes.sgd_without_weight_decay),
        Mistake("the parameters step by the old momentum: p' = p − lr · m', with m' the new momentum just computed",
                mistakes.sgd_with_old_momentum),
    ),
    positional_sizes=("K",),  # the one-launch cell passes len(lengths) right after the pointers
    notebook_cells=(("markdown", LOOP_TEXT), ("code", LOOP_CODE)),
    speed_goal=SpeedGoal(roofline=0.5, levers=(
        "chunks of 1024-4096 elements per program so the 120 tensors' bytes stream in full vectors; one "
        "launch for the whole list (the table of addresses), never one per tensor")),
    library=LibraryBaseline(
        "torch.optim SGD step, foreach (multi-tensor apply)", library_ops.sgd_library,
        why="what torch.optim.SGD(momentum=..., weight_decay=...).step() runs on a GPU by default: torch's "
            "multi-tensor apply over the list of tensors, a few launches for the whole list"),
)
