"""Puzzle 19: colour to grey, through strides."""

from jaxtyping import Float32, UInt8
from torch import Tensor

from puzzles.course import mistakes
from puzzles.course.library_baseline import NO_SUCH_OP
from puzzles.course.puzzle import Mistake, Puzzle, SpeedGoal


def grey_spec(x: UInt8[Tensor, "N1 N0 3"]) -> Float32[Tensor, "N1 N0"]:
    """z[j, i] = 0.2989 x[j, i, 0] + 0.5870 x[j, i, 1] + 0.1140 x[j, i, 2]"""
    x = x.float()
    return 0.2989 * x[..., 0] + 0.5870 * x[..., 1] + 0.1140 * x[..., 2]


PUZZLE = Puzzle(
    number=19,
    slug="colour_to_grey",
    title="Colour to grey, through strides",
    kernel_name="grey_kernel",
    spec=grey_spec,
    statement=r"""
Turn a colour image into a grey one. `x` is an image of `N1` rows and `N0` columns with three
`uint8` channels (red, green, blue); the grey value of a pixel is their weighted sum, in
`float32`:

$$z_{j,i} = 0.2989\,x_{j,i,0} + 0.5870\,x_{j,i,1} + 0.1140\,x_{j,i,2}$$

**`x` is not contiguous.** Real images arrive as a crop of a larger picture, or channels-first
(`3 × N1 × N0`, permuted to `N1 × N0 × 3`), or with padded rows. The grader passes such a
view: element `x[j, i, c]` sits at `x_ptr + j*S1 + i*S0 + c*SC`, with the three strides (in
elements, as `tensor.stride()` gives them) passed to the kernel. Between the pixels lie other
bytes of the storage (row padding, pixels outside the crop); a kernel that assumes
`S1 = 3*N0, S0 = 3, SC = 1` reads them, and the grader reports every read of a byte that is no
element of `x` as it reports an access past a tensor's end, with the element it lies after and
the line.

`z` is contiguous: `z[j, i]` sits at `z_ptr + j*N0 + i`. Grid axis 0 walks the columns in
blocks of `B0`, axis 1 the rows in blocks of `B1`; neither `N0` nor `N1` need be a multiple of
its block, so mask both axes. Convert the loaded bytes to `float32` before the arithmetic.
""",
    sizes=(
        # A 12 x 20 crop of a 12 x 32 channels-last image.
        {"N0": 20, "N1": 12, "S1": 96, "S0": 3, "SC": 1, "B0": 16, "B1": 8},
        # Channels-first (3 x 10 x 14), permuted to 10 x 14 x 3.
        {"N0": 14, "N1": 10, "S1": 14, "S0": 1, "SC": 140, "B0": 8, "B1": 4},
        # Channels-first with rows padded to 32 elements.
        {"N0": 30, "N1": 9, "S1": 32, "S0": 1, "SC": 288, "B0": 16, "B1": 4},
    ),
    hints=(
        "Two index vectors, as in puzzle 4: `i` for the columns of this program's block, `j` for its rows; "
        "the mask is `(j[:, None] < N1) & (i[None, :] < N0)`.",
        "The red byte of pixel (j, i) is at `x_ptr + j[:, None] * S1 + i[None, :] * S0`; green and blue are "
        "`SC` and `2 * SC` further. Three masked loads, each `.to(tl.float32)`.",
        "Store at `z_ptr + j[:, None] * N0 + i[None, :]` with the same mask.",
    ),
    strided_inputs={"x": ("S1", "S0", "SC")},
    likely_mistakes=(
        Mistake("green and blue are read at pixel + 1 and pixel + 2, the channel stride of a packed image; here "
                "the channels are SC apart: load pixel + SC and pixel + 2 * SC", mistakes.grey_channels_one_apart),
    ),
    # Three float32 products of positive terms: any order (or a GPU's fused multiply-add) is off by a few
    # units in the last place; a float16 computation is off by 1e-4 of the value and must fail.
    rtol=1e-5,
    atol=1e-4,
    perf_size={"N0": 4096, "N1": 4096, "S1": 4096, "S0": 1, "SC": 4096 * 4096, "B0": 128, "B1": 16},
    speed_goal=SpeedGoal(roofline=0.6, levers=(
        "tiles wide along N0 (B0 of 128-256) for contiguous loads of each channel plane and 16-byte stores of"
        " z; B0 * B1 of 2K-8K pixels with num_warps 4-8")),
    no_library=NO_SUCH_OP.format(what=(
        "a weighted sum of three interleaved colour channels (torchvision's rgb_to_grayscale "
        "wants the channels first, and is not a dependency)")),
)
