"""Step 5 of grading: the speed of a correct kernel (on a GPU), and the verdict shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from puzzles.course.puzzle import Puzzle, Sizes, default_grid
from puzzles.course.spec import spec_input_names
from puzzles.grading.cases import Case
from puzzles.grading.job import GradingJob
from puzzles.grading.result import TestResult
from puzzles.grading.runs import ArenaNames, ArenaTensor, on_gpu


def present(job: GradingJob, result: TestResult, picture: bool = True) -> TestResult:
    """Show the job's verdict (unless `job.quiet`) and its memory picture (if `job.viz` asks and the grading got
    as far as running: `picture`), and return it."""
    if not job.quiet:
        _show(result)
    if job.viz and picture:
        from puzzles import viz as _viz

        _viz.show(result, puzzle=job.puzzle)
    return result


def measure_speed(job: GradingJob, args_for: Callable, first_sizes: Sizes) -> tuple[Any, str | None]:
    """The speed of a correct kernel: (a PerfReport or None, a note for the verdict or None).
    `first_sizes`: the sizes timed where the puzzle names no performance size."""
    kernel, spec, p, seed = job.handle, job.spec, job.puzzle, job.seed
    if not on_gpu():
        return None, "speed is measured on a CUDA GPU; here the kernel ran in Triton's interpreter"
    from puzzles.running import gpu_worker

    sizes = perf_sizes(p, first_sizes)
    # The kernel's pointer arguments: each tensor list's tables, or the spec's inputs.
    names = job.input_names
    grid = tuple((p.grid if p else default_grid)(sizes))
    args, kwargs = args_for(Case(sizes, seed, grid, ArenaNames([*names, "z"]), names, None))
    flops = p.flops(sizes) if p and p.flops else 0
    zero = p is not None and p.output_init == "zeros"
    # Timed in the GPU worker, like every launch of the learner's kernel (puzzles/running/gpu_worker.py).
    reply = gpu_worker.call("puzzles.grading.presenting:measure_speed_here", kernel, p.number if p else None,
                            None if p else spec, dict(sizes), seed, grid, args, kwargs, flops, zero, timeout=300.0)
    if reply.status == "ok":
        return reply.value, None
    why = reply.error.describe() if reply.error else reply.status
    return None, f"speed not measured: {why}"


def perf_sizes(p: Puzzle | None, first_sizes: Sizes) -> Sizes:
    """The sizes timed: the puzzle's performance size, else the first size graded. An autotuned kernel's
    config (its block sizes and num_warps, among the first size's) replaces the performance size's blocks:
    the grid must be the config's."""
    if p is None or not p.perf_size:
        return dict(first_sizes)
    tuned = {k: v for k, v in first_sizes.items() if p.autotune and (k in p.autotune or k == "num_warps")}
    return {**p.perf_size, **tuned}


def measure_speed_here(kernel: Any, number: int | None, spec: Callable[..., Any] | None, sizes: Sizes, seed: int,
                       grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any], flops: int,
                       zero: bool) -> Any:
    """In the GPU worker: time the kernel, the spec (and the puzzle's baseline) at one size on
    fresh inputs; a PerfReport."""
    from puzzles.course import catalog
    from puzzles.grading import perf as _perf

    p = catalog.get(number) if number is not None else None
    spec = p.spec if p is not None else spec
    inputs, tensors = speed_tensors(p, spec, sizes, seed)
    launch = bound_launch(kernel, grid, args, kwargs, tensors, zero)
    if p is None:
        return _perf.measure(launch, spec, inputs, sizes, flops)
    return _perf.measure(launch, spec, inputs, sizes, flops, p.baseline,
                         p.scalar_work(sizes) if p.scalar_work else None, p.speed_goal, compile_key=p.number,
                         library=p.library)


def speed_tensors(p: Puzzle | None, spec: Callable[..., Any], sizes: Sizes, seed: int,
                  device: str = "cuda") -> tuple[list[Any], dict[str, Any]]:
    """The inputs a kernel is timed on (the spec's, as the spec sees them: torch's time), and the kernel's
    tensors by name (`z` its output): what `test(..., perf=True)` and benchmarks/compile_baseline.py time."""
    from puzzles.grading.inputs import draw_inputs

    inputs, out = draw_inputs(spec, sizes, seed, device=device)
    if p is not None and p.draw_inputs is not None:  # inputs a random draw cannot make (class indices, a saved
        # logsumexp): the puzzle draws them, at index -1 (the speed size; no grading size's bug shaping)
        import torch

        shaped = p.draw_inputs(sizes, -1, torch.Generator().manual_seed(seed))
        for name, tensor in zip(spec_input_names(spec), inputs, strict=True):
            if name in shaped:
                tensor.copy_(shaped[name])
    if p is not None and p.strided_inputs:  # the strided views the kernel is asked to read (puzzle 19)
        inputs = strided_inputs(p, spec, inputs, sizes)
    if p is not None and p.tensor_lists is not None:  # the kernel gets each tensor on its own, and tables
        from puzzles.grading.tensor_lists import build

        return inputs, build(spec, p.tensor_lists, sizes, seed, 1.0, device=device)[0].tensors
    return inputs, {**dict(zip(spec_input_names(spec), inputs, strict=True)), "z": out}


def bound_launch(kernel: Any, grid: Any, args: list[Any], kwargs: dict[str, Any], tensors: dict[str, Any],
                 zero: bool) -> Callable[[], None]:
    """One launch of the kernel on `tensors`: the arguments bound by name (`ArenaTensor`) become those
    tensors; an output that accumulates (`zero`) starts from zero on every launch."""
    out = tensors["z"]
    args = [tensors[a.name] if isinstance(a, ArenaTensor) else a for a in args]
    kwargs = {k: tensors[v.name] if isinstance(v, ArenaTensor) else v for k, v in kwargs.items()}

    def launch() -> None:
        if zero:
            out.zero_()
        kernel[grid](*args, **kwargs)

    return launch


def strided_inputs(p: Puzzle, spec: Callable[..., Any], inputs: list[Any], sizes: Sizes) -> list[Any]:
    """Each strided input as a view with the puzzle's strides into a storage just large enough (the kernel
    gets its first element's address, as when it was graded); the other inputs as they are."""
    import torch

    from puzzles.grading.layouts import storage_numel, strided_view, strides_of

    out = []
    for name, tensor in zip(spec_input_names(spec), inputs, strict=True):
        if name in p.strided_inputs:
            strides = strides_of(p.strided_inputs[name], sizes)
            storage = torch.empty(storage_numel(tuple(tensor.shape), strides), dtype=tensor.dtype, device=tensor.device)
            view = strided_view(storage, tuple(tensor.shape), strides)
            view.copy_(tensor)
            tensor = view
        out.append(tensor)
    return out


def device_name() -> str:
    if on_gpu():
        from puzzles.running import gpu_worker

        return f"{gpu_worker.device_name()} (compiled)"
    return "CPU (Triton interpreter)"


def _show(result: TestResult) -> None:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and hasattr(shell, "kernel"):
        from IPython.display import display

        display(result)
    else:
        print(result)
