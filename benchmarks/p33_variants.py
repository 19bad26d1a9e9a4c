"""Puzzle 33 (a block-scaled MXFP4 matmul) on a GPU: the teaching reference, the fast reference, each of the fast
reference's changes alone, and the fast reference at other trips, stages, decodes, BN and warps, at the puzzle's
perf size (M=16 tokens, an 8192 x 8192 layer), against torch.compile(spec), the library's dequantize-then-torch.mm
and the memory floor. Every result is checked against the spec. What it finds decides the fast reference's text.

    python benchmarks/p33_variants.py [--out benchmarks/results]

Needs a CUDA GPU; without one it says so and exits 0. Writes p33_variants.md under --out/<device>/. The kernels are
tests/kernels/p33_mxfp4_matmul.py's (each graded at every size under the interpreter by
tests/course/test_mxfp4_track.py) and the two references; one that fails to compile or run is a row saying so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
from cuda_here import variants_out, write_device_table

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "kernels")]
import p33_mxfp4_matmul as p33  # noqa: E402

from puzzles.course import catalog, mxfp4  # noqa: E402
from puzzles.course.library_ops import mxfp4_library  # noqa: E402
from solutions.p33_mxfp4_matmul import mxfp4_matmul_kernel  # noqa: E402
from solutions.p33_mxfp4_matmul_fast import mxfp4_matmul_kernel as fast_mxfp4_matmul_kernel  # noqa: E402

HBM_BYTES_PER_S = 4.8e12  # an H200's; the floor printed is at this rate
# A right kernel's error is float32 rounding (the products are exact); a wrong one's is of the order of 1.
TOLERANCE = 1e-3

# (name, kernel, launch changes from the perf size: BN, BK, num_warps)
VARIANTS: tuple[tuple[str, Any, dict[str, int]], ...] = (
    ("teaching reference", mxfp4_matmul_kernel, {}),
    ("fast reference", fast_mxfp4_matmul_kernel, {}),
    ("bytes once alone: a chunk's bytes and scales loaded once, x split even/odd, two dots",
     p33.mxfp4_bytes_once_split, {}),
    ("scale after the dot alone: a dot per block of 32 rows, its sum times the block's scales",
     p33.mxfp4_scale_after_dot, {}),
    ("decode by float16 bits alone", p33.mxfp4_decode_by_bits, {}),
    ("bytes once, interleaved with tl.join, the e2m1 table as selects", p33.mxfp4_bytes_once, {}),
    ("fast, 2 x BK a trip", p33.mxfp4_fast_two_chunks, {}),
    ("fast, 4 stages", p33.mxfp4_fast_four_stages, {}),
    ("fast, 2 x BK a trip, 4 stages", p33.mxfp4_fast_two_chunks_four_stages, {}),
    ("fast, 1 stage (not pipelined)", p33.mxfp4_fast_unpipelined, {}),
    ("fast, float16 subnormals into tl.dot (no x 2^14)", p33.mxfp4_fast_subnormals_into_dot, {}),
    ("fast, decoded through a tl.gather table", p33.mxfp4_fast_table_lookup, {}),
    ("fast reference, BN 32 (256 programs)", fast_mxfp4_matmul_kernel, {"BN": 32}),
    ("fast reference, BN 128 (64 programs)", fast_mxfp4_matmul_kernel, {"BN": 128}),
    ("fast reference, 8 warps", fast_mxfp4_matmul_kernel, {"num_warps": 8}),
    ("fast, 2 x BK a trip, BN 32", p33.mxfp4_fast_two_chunks, {"BN": 32}),
    ("tl.dot_scaled (the compiler's own decode)", p33.mxfp4_dot_scaled, {}),
)


def relative_max_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.float() - want).abs().max() / want.abs().max()).item()


def timed(run: Callable[[], Any]) -> float:
    """do_bench's median, in microseconds (the first call, which compiles, is not timed)."""
    run()
    torch.cuda.synchronize()
    return triton.testing.do_bench(run) * 1000


def time_bar(name: str, call: Callable[[], torch.Tensor], want: torch.Tensor) -> tuple[str, str, float, float | None]:
    """A bar's row (torch.compile of the spec, the library op): inf and None where it did not run."""
    try:
        return name, "", timed(call), relative_max_error(call(), want)
    except Exception as exc:  # noqa: BLE001 - the kernels are still timed against the other bar
        return name, f"{type(exc).__name__}: {str(exc).strip()[:80]}", float("inf"), None


def time_variant(kernel: Any, changes: dict[str, int], inputs: dict[str, torch.Tensor], sizes: dict[str, int],
                 want: torch.Tensor) -> tuple[str, float, float | None]:
    """(launch described, microseconds, error): inf and None where it did not compile or run."""
    launch = {**sizes, **{k: v for k, v in changes.items() if k != "num_warps"}}
    warps = changes.get("num_warps", 4)
    grid = (triton.cdiv(launch["M"], launch["BM"]), triton.cdiv(launch["N"], launch["BN"]))
    what = f"BN {launch['BN']}, BK {launch['BK']}, {warps} warps, grid {grid}"
    z = torch.full((launch["M"], launch["N"]), float("nan"), device=inputs["x"].device)

    def run() -> None:
        kernel[grid](inputs["x"], inputs["w"], inputs["scale"], z, launch["M"], launch["N"], launch["K"],
                     BM=launch["BM"], BN=launch["BN"], BK=launch["BK"], num_warps=warps)

    try:
        us = timed(run)
    except Exception as exc:  # noqa: BLE001 - a compile or launch failure of one variant: say so, time the others
        return f"{what}: {type(exc).__name__}: {str(exc).strip()[:80]}", float("inf"), None
    return what, us, relative_max_error(z, want)


def table_row(row: tuple[str, str, float, float | None], compiled_us: float, library_us: float,
              floor_us: float) -> str:
    """One kernel's or bar's line: its time against the two bars and the floor (against a bar that did not run: inf),
    and its error (WRONG past the tolerance, NaN included)."""
    name, what, us, error = row
    verdict = "did not run" if error is None else f"{error:.1e}" + ("" if error <= TOLERANCE else " WRONG")
    speed = "- | - | - | -" if us == float("inf") else \
        f"{us:.1f} | {compiled_us / us:.2f} | {library_us / us:.2f} | {us / floor_us:.1f}"
    return f"| {name} | {what} | {speed} | {verdict} |"


def main() -> int:
    out = variants_out(__doc__)
    if out is None:
        return 0
    p = catalog.get(33)
    sizes = dict(p.perf_size)
    gen = torch.Generator().manual_seed(p.number)
    inputs = {"x": (torch.rand(sizes["M"], sizes["K"], generator=gen) - 0.5).half().cuda(),
              **{k: v.cuda() for k, v in mxfp4.graded_weights(sizes, 0, gen).items()}}
    want = p.spec(inputs["x"], inputs["w"], inputs["scale"])
    moved = sum(t.numel() * t.element_size() for t in inputs.values()) + want.numel() * 4
    floor_us = moved / HBM_BYTES_PER_S * 1e6
    compiled = torch.compile(p.spec)
    library = mxfp4_library([inputs["x"], inputs["w"], inputs["scale"]], sizes)

    def library_call() -> torch.Tensor:
        library.run()
        return library.output()

    rows = [time_bar("torch.compile(spec)", lambda: compiled(inputs["x"], inputs["w"], inputs["scale"]), want),
            time_bar(p.library.label, library_call, want)]
    compiled_us, library_us = rows[0][2], rows[1][2]
    rows += [(name, *time_variant(kernel, changes, inputs, sizes, want)) for name, kernel, changes in VARIANTS]
    lines = [f"# Puzzle 33 variants on {torch.cuda.get_device_name()}", "",
             f"torch {torch.__version__}, triton {triton.__version__}; `python benchmarks/p33_variants.py`; perf size "
             f"{sizes}; do_bench medians. Memory floor ({moved / 2**20:.1f} MiB at {HBM_BYTES_PER_S / 1e12:.1f} "
             f"TB/s): {floor_us:.1f} us. Error: max |z - spec| / max |spec|, WRONG past {TOLERANCE:g}.", "",
             "| kernel | launch | us | x torch.compile | x library | x floor | error |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [table_row(row, compiled_us, library_us, floor_us) for row in rows]
    write_device_table(out, "p33_variants.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
