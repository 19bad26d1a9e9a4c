"""Step 5 of grading: the speed of a correct kernel (on a GPU), and the verdict shown.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from puzzles.harness.cases import _Case
from puzzles.harness.running import on_gpu
from puzzles.inputs import (
    spec_input_names,
)
from puzzles.puzzle import Puzzle, default_grid
from puzzles.result import TestResult


def present(result: TestResult, quiet: bool, viz: bool, puzzle: Puzzle | None) -> TestResult:
    """Show a verdict (unless quiet) and its memory picture (if asked), and return it."""
    if not quiet:
        _show(result)
    if viz:
        from puzzles import viz as _viz

        _viz.show(result, puzzle=puzzle)
    return result


def _measure_speed(kernel: Any, args_for: Callable, spec: Callable[..., Any], p: Puzzle | None, seed: int,
                   result: TestResult) -> None:
    if not on_gpu():
        result.notes.append("speed is measured on a CUDA GPU; here the kernel ran in Triton's interpreter")
        return
    if p is not None and p.strided_inputs:
        result.notes.append("speed is not measured for this puzzle by test(); its notebook times it")
        return
    from puzzles import perf as _perf
    from puzzles.inputs import draw_inputs

    sizes = (p.perf_size if p and p.perf_size else None) or result.outcomes[0].sizes
    inputs, out = draw_inputs(spec, sizes, seed, device="cuda")  # as the spec sees them (torch's time)
    grid = (p.grid if p else default_grid)(sizes)
    if p is not None and p.tensor_lists is not None:  # the kernel gets each tensor on its own, and tables
        from puzzles.tensor_lists import build

        arena, pointers, _, _, _ = build(spec, p.tensor_lists, sizes, seed, 1.0, device="cuda")
        case = _Case(sizes, seed, grid, arena, pointers, out)
        out = arena.tensors["z"]
    else:
        arena = SimpleNamespace(tensors={**dict(zip(spec_input_names(spec), inputs, strict=True)), "z": out})
        case = _Case(sizes, seed, grid, arena, spec_input_names(spec), out)
    args, kwargs = args_for(case)
    flops = p.flops(sizes) if p and p.flops else 0
    zero = p is not None and p.output_init == "zeros"

    def launch() -> None:
        if zero:
            out.zero_()
        kernel[case.grid](*args, **kwargs)

    result.perf = _perf.measure(launch, spec, inputs, sizes, flops, p.extra.get("baseline") if p else None)


def _device_name() -> str:
    if on_gpu():
        return f"{torch.cuda.get_device_name()} (compiled)"
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
