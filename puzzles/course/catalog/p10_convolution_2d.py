"""Puzzle 10: two-dimensional convolution."""

import torch
from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.picture_hooks import SlidingWindow
from puzzles.course.puzzle import FastReference, Puzzle, SpeedGoal, cdiv


def conv2d_spec(x: Float32[Tensor, "N0 H W"], k: Float32[Tensor, "KH KW"]) -> Float32[Tensor, "N0 H W"]:
    """z[n, h, w] = sum_{a<KH, b<KW} k[a, b] * x[n, h + a, w + b], x zero outside the image"""
    n0, h, w = x.shape
    kh, kw = k.shape
    padded = x.new_zeros(n0, h + kh, w + kw)
    padded[:, :h, :w] = x
    z = torch.zeros_like(x)
    for a in range(kh):
        for b in range(kw):
            z += k[a, b] * padded[:, a : a + h, b : b + w]
    return z


PUZZLE = Puzzle(
    number=10,
    slug="convolution_2d",
    title="2-D convolution",
    kernel_name="conv2d_kernel",
    spec=conv2d_spec,
    statement=r"""
Slide a `KH × KW` filter `k` over each of `N0` images `x` of size `H × W`:

$$z_{n,h,w} = \sum_{a=0}^{KH-1}\sum_{b=0}^{KW-1} k_{a,b}\; x_{n,\,h+a,\,w+b}$$

where `x` counts as zero outside the image (so the output has the image's size). All three tensors
are contiguous: `x[n, h, w]` sits at `x_ptr + n·H·W + h·W + w` (as `z[n, h, w]` at `z_ptr`), and
`k[a, b]` at `k_ptr + a·KW + b`. The grid is
`(cdiv(N0, B0),)`: each program handles `B0` images, and loops over the output pixels
`(h, w)`, loading the `KH × KW` window under each (masked where it leaves the image). `KH`,
`KW` and `B0` are powers of two; `H` and `W` are any sizes.
""",
    sizes=(
        {"N0": 2, "H": 8, "W": 8, "KH": 4, "KW": 4, "B0": 1},
        {"N0": 3, "H": 5, "W": 7, "KH": 2, "KW": 4, "B0": 2},
        {"N0": 8, "H": 4, "W": 5, "KH": 4, "KW": 2, "B0": 4},
    ),
    hints=(
        "Load the filter once: offsets `a[:, None] * KW + b[None, :]` "
        "with `a = tl.arange(0, KH)`, `b = tl.arange(0, KW)`.",
        "For each `(h, w)`, the window's rows are `h + a`, its columns `w + b`; mask `(h + a < H) & (w + b < W)`.",
        "With `B0` images per program the window becomes 3-D, `B0 × KH × KW`: `n[:, None, None] * H * W + ...`. "
        "Multiply it by the filter, sum over the two window axes (`tl.sum(tl.sum(..., axis=2), axis=1)`), one "
        "value per image, and store it at `z_ptr + n * H * W + h * W + w`, masked by `n < N0`.",
    ),
    grid=lambda s: (cdiv(s["N0"], s["B0"]),),
    # B0=2: 512 programs, enough to fill an H100's 132 multiprocessors with loads in flight (at B0=8 the
    # grid is 128 programs, one per multiprocessor, and any kernel of this grid waits on memory).
    perf_size={"N0": 1024, "H": 64, "W": 64, "KH": 4, "KW": 4, "B0": 2},
    fast_reference=FastReference(
        "The teaching kernel computes one output pixel of its `B0` images per step: 4096 dependent steps per "
        "program at the speed size, each a few loads. The fast one computes 512 pixels of the `B0` images per "
        "step (pixel `p` of an image is row `p // W`, column `p % W`), as groups of four neighbouring pixels "
        "that one thread holds. For each filter row `a` it makes two loads per group: the group's four inputs "
        "`a` rows down, and the next group's four. Where `W` is a multiple of 4 each is one aligned 128-bit "
        "load; a load shifted by the filter's column `b` would be four 32-bit loads. Output `j` of the group "
        "under tap `(a, b)` is component `j + b` of those eight values, picked in registers (zeroed where "
        "`w + b` passes the end of the row), and the four sums go out in one 128-bit store. So a step makes "
        "`2·KH` loads per group where the direct form makes `KH·KW·4`. Eight warps per program, set with a "
        "one-config `@triton.autotune` (`test()` launches a kernel with Triton's default of 4)."),
    sliding_window=SlidingWindow("x", rows="H", cols="W", height="KH", width="KW"),
    # At most 16 float32 products summed: off by a few units in the last place in any order; float16 products
    # are off by 5e-4 and must fail.
    rtol=1e-5,
    atol=1e-5,
    speed_goal=SpeedGoal(levers=(
        "more output pixels per program (several rows of an image, or several images: B0 > 1), the KH x KW "
        "taps loaded once per program and reused for every pixel, loads along the contiguous W axis; or "
        "im2col tiles and tl.dot")),
    library=LibraryBaseline(
        "F.conv2d (cuDNN, TF32 off) after F.pad", library_ops.conv_library,
        why="torch's convolution is a cross-correlation, as the spec's; the zeros outside the image are a pad of "
            "KH - 1 rows and KW - 1 columns, as a user would write it. TF32 off: the tolerance, 1e-5, is float32's"),
)
