"""Puzzle 20: autotuning and benchmarking."""

from jaxtyping import Float32
from torch import Tensor

from puzzles.course import library_ops
from puzzles.course.library_baseline import LibraryBaseline
from puzzles.course.puzzle import Puzzle, ScalarWork, SpeedGoal


def silu_mul_spec(x: Float32[Tensor, "N0"], y: Float32[Tensor, "N0"]) -> Float32[Tensor, "N0"]:
    """z_i = x_i * sigmoid(x_i) * y_i"""
    return x * (1 / (1 + (-x).exp())) * y


BENCHMARK_TEXT = """\
## Benchmark: the sweep

`triton.testing.do_bench` runs a launch many times and returns the median time in milliseconds;
`triton.testing.perf_report` runs a function over a range of sizes and providers and prints the
table of the results. The cell below times the kernel under each of your configs, then the
autotuned kernel against the PyTorch spec, in GB/s (three tensors of `N0` floats move through
memory).

**On a GPU** the numbers are real: the autotuner's pick (`silu_mul_kernel.best_config`) should be
at or near the best row of the first table, and a memory-bound kernel like this one should reach
a good fraction of the GPU's bandwidth at large `N0` (small sizes are dominated by launch
overhead, a few microseconds). The PyTorch spec runs one kernel per operation, each reading and
writing a whole temporary, so the fused kernel should win several times over at large sizes (on
an H100, about 3000 against 560 GB/s at `N0 = 2**26`).

**On a CPU** (Triton's interpreter) there is nothing to measure: the interpreter runs each
program as NumPy code, one after another, so its times say nothing about a GPU, and `num_warps`
has no meaning there. The cell says so and skips the sweep; the grade above (every config
correct) is the part that counts.
"""

BENCHMARK_CODE = """\
from puzzles import sweep

# Each config alone with triton.testing.do_bench at N0 = 2**24, then the autotuned kernel against the spec
# over N0 = 2**12 .. 2**26 with triton.testing.perf_report (`sweep??` shows the code). It runs in the GPU
# worker, where test() runs your kernel: a kernel that faults gives a message here, not a dead notebook.
table = sweep(silu_mul_kernel)
"""

PUZZLE = Puzzle(
    number=20,
    slug="autotune",
    title="Autotuning and benchmarking",
    kernel_name="silu_mul_kernel",
    spec=silu_mul_spec,
    statement=r"""
The gate of a SwiGLU layer, fused into one pass: $z_i = x_i \,\sigma(x_i)\, y_i$ with
$\sigma(t) = 1 / (1 + e^{-t})$. The kernel itself is puzzle 2 with a little arithmetic; the
lesson is the decorator above it.

**`@triton.autotune`.** Which block size and how many warps are fastest depends on the GPU
and on `N0`. The starter's kernel is already wrapped in
`@triton.autotune(configs=[...], key=["N0"])`: each `triton.Config({"B0": ...}, num_warps=...)`
is one candidate. The first time the kernel runs for a new `N0`, the autotuner launches every
config, times them, and keeps the fastest for that `N0`. So `B0` is **not** yours to pass: it
comes from the config, and the grid must ask for it, `grid = lambda meta: (triton.cdiv(N0,
meta["B0"]),)`.

**Graded under every config.** Any config can be the one picked, on some GPU or some size, so
the grader runs your kernel under each of them (each config's `B0`, at every size below) and
reports each config's verdict; a failure names its config. Your configs are not the only
ones an autotuner could be given, so the grader also runs the kernel under two configs of its
own, within these rules: `B0` a power of two from 32 to 1024, `num_warps` 1, 2, 4 or 8 (it
says whose config failed). The `B0` in the sizes below is only the one the diagram uses.
Write the kernel for any power-of-two `B0`: offsets from `B0`, never from a number.

After the grade, a benchmark cell sweeps the configs and compares the autotuned kernel with the
PyTorch spec using `triton.testing` (on a GPU; on a CPU it says why it does not).
""",
    sizes=(
        {"N0": 300, "B0": 64},
        {"N0": 2100, "B0": 64},  # several programs even under the largest config
        {"N0": 97, "B0": 64},
    ),
    hints=(
        "Inside the kernel, `B0` is an ordinary `tl.constexpr`: `offsets = tl.program_id(0) * B0 + "
        "tl.arange(0, B0)` and `mask = offsets < N0`, as in puzzle 2.",
        "`tl.sigmoid(x)` exists; so does `1 / (1 + tl.exp(-x))`.",
        "A kernel right under only one config usually hides a number where `B0` belongs (`* 64`).",
    ),
    notebook_cells=(("markdown", BENCHMARK_TEXT), ("code", BENCHMARK_CODE)),
    # The grader asks for an @triton.autotune kernel, runs each of its configs, and two of its own
    # drawn from these values (the rules the statement gives).
    autotune={"B0": (32, 64, 128, 256, 512, 1024), "num_warps": (1, 2, 4, 8)},
    # The benchmark cell launches `silu_mul_kernel[grid](x, y, z, N0)`: N0 by position, so the grader too.
    positional_sizes=("N0",),
    # Float32 products and one sigmoid of values in [-1, 1]: any order, a GPU's fused multiply-add or its
    # fast exp is off by a few units in the last place; float16 arithmetic is off by 1e-4 and must fail.
    rtol=1e-5,
    atol=1e-5,
    perf_size={"N0": 1 << 26, "B0": 1024},
    scalar_work=lambda s: ScalarWork(fmas=4 * s["N0"], exps=s["N0"]),
    speed_goal=SpeedGoal(roofline=0.8, levers=(
        "configs with B0 of 1024-4096 and num_warps 4-8 among those the autotuner tries, so each thread moves"
        " 16-byte vectors; the sigmoid is cheap next to the bytes")),
    library=LibraryBaseline(
        "F.silu(x) * y", library_ops.silu_mul_library,
        why="SiLU is one torch op; a user multiplies by the gate after it (two kernels, as a gated MLP in eager "
            "PyTorch runs)"),
)
