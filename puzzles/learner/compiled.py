"""`puzzles.compiled(kernel, puzzle=N, target="sm_90")`: what a kernel compiles to for a real GPU, on any
machine, a laptop without a GPU included.

    code = compiled(copy_rows_kernel, puzzle=23)
    code                    # in a notebook: a summary, the listings folded under it
    print(code.summary())   # each global load and store with its width and line, tl.dot, registers, spills
    print(code.ptx)         # .ttir, .ttgir, .ptx, .sass: the whole listings

The kernel is compiled at the puzzle's canonical size (or `nelem`/`B`), with the arguments `test()` passes,
by the compile check's processes (puzzles/running/compile_check/): after a `test()` of the same kernel the
answer comes from its cache. A kernel that does not compile gets the compile check's message, not a
traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from puzzles.course.puzzle import Puzzle, Sizes
from puzzles.grading.compiling import compile_job
from puzzles.grading.job import make_job
from puzzles.grading.signature import check_kernel
from puzzles.running.compiled_code import Compiled, not_compiled, target_number
from puzzles.running.errors import KernelError
from puzzles.running.kernel import ConfigLaunch, KernelHandle


def compiled(kernel: Any, puzzle: Puzzle | int | None = None, target: str | int = "sm_90", *,
             spec: Callable[..., Any] | None = None, nelem: Sizes | None = None, B: Sizes | None = None,
             num_warps: int | None = None, num_stages: int | None = None,
             maxnreg: int | None = None) -> Compiled:
    """What `kernel` compiles to for `target` ("sm_90": H100 class, "sm_80": A100 class, "sm_75": the T4).

    puzzle: the puzzle whose spec and canonical sizes give the kernel its arguments (found from the
        kernel's name when left out); spec: for a kernel of no puzzle, with nelem and B for its sizes.
    nelem, B: other sizes and blocks than the canonical ones, as test() takes them.
    num_warps, num_stages, maxnreg: launch options, as `kernel[grid](..., num_warps=8)` passes them
        (see how the code changes with them).

    Returns a `Compiled`: `.summary()`, `.ttir`, `.ttgir`, `.ptx`, `.sass`, `.registers`, `.spills`,
    `.shared`, `.num_warps`, `.accesses`, `.dots`; `.ok` is False (and `.error` says why) when the kernel
    would not compile."""
    number = target_number(target)
    handle = KernelHandle.of(kernel)  # walked once, its config's launch included
    tuner = handle.chain.autotuner
    meta: Sizes = {}
    if tuner is not None:  # compiled as its first config launches it
        config = tuner.configs[0]
        handle, meta = handle.for_launch(ConfigLaunch(tuner.fn, config, kernel)), dict(config.kwargs)
    job = make_job(handle, spec, puzzle, nelem=nelem, blocks=B)
    name = job.kernel_name
    if job.fn is None:
        return not_compiled(name, number, KernelError("signature", "this is not a @triton.jit kernel"))
    if job.spec is None:
        return not_compiled(name, number, KernelError(
            "spec", f"which puzzle is {name} for? pass it: compiled({name}, puzzle=N) (its arguments come from "
                    "the puzzle's spec and sizes), or for a kernel of your own compiled(kernel, spec=..., nelem=...)"))
    problem = check_kernel(job)
    if problem is not None:
        return not_compiled(name, number, problem)
    if job.size_problem is not None or not job.run_sizes:
        return not_compiled(name, number, KernelError("sizes", job.size_problem or "no sizes to compile at"))
    options = {k: v for k, v in (("num_warps", num_warps), ("num_stages", num_stages), ("maxnreg", maxnreg))
               if v is not None}
    return compile_job(job, {**job.run_sizes[0], **meta}, number, options)
