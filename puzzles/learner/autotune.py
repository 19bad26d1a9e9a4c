"""Puzzle 20's notebook: the sweep of an autotuned kernel's configs, and the autotuned kernel against
PyTorch, on a GPU.

How an autotuned kernel is graded (under every config, the learner's and the grader's own) is the
grader's: puzzles/grading/configs.py, with the configs themselves in puzzles/grading/autotune_configs.py.
"""

from __future__ import annotations

from typing import Any

import triton


def sweep(kernel: Any, sizes: list[int] | None = None) -> Any:
    """On a GPU: time `kernel` under each of its configs at N0 = 2**24, then the autotuned kernel
    against puzzle 20's PyTorch spec over `sizes` (`triton.testing.perf_report`), in GB/s; returns
    that table. It runs in the GPU worker, like every launch of a learner's kernel: a bad kernel
    gives a message, not a dead notebook. Without a GPU it says why there is nothing to time."""
    from puzzles.running.kernel import on_gpu
    from puzzles.running.sandbox import run_safely, show

    if not on_gpu():
        print("No GPU: Triton's interpreter runs kernels as NumPy code, so a time measured here says nothing about "
              "a GPU, and num_warps means nothing. The grade above (correct under every config) is what counts "
              "here; on a GPU this cell prints each config's time and the autotuned kernel against PyTorch in GB/s.")
        return None
    return show(run_safely("puzzles.learner.autotune:sweep_here", kernel, sizes or [2**i for i in range(12, 27, 2)],
                           timeout=600.0), "The sweep")


def sweep_here(kernel: Any, sizes: list[int]) -> Any:
    """`sweep`'s work, in the GPU worker."""
    import torch
    from triton.testing import Benchmark, do_bench, perf_report

    from puzzles.course import catalog

    spec = catalog.get(20).spec

    def gbps(ms: float, n: int) -> float:  # x and y read, z written: 12 bytes per element
        return 12 * n / (ms * 1e-3) / 1e9

    for config in kernel.configs:  # each config alone: the sweep the autotuner runs
        x = torch.rand(2**24, device="cuda")
        y, z = torch.rand_like(x), torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), config.kwargs["B0"]),)
        ms = do_bench(lambda grid=grid, config=config: kernel.fn[grid](x, y, z, x.numel(), **config.kwargs,
                                                                       num_warps=config.num_warps))
        print(f"{config}: {ms * 1e3:8.1f} us  {gbps(ms, x.numel()):7.1f} GB/s at N0=2**24")

    @perf_report(Benchmark(x_names=["N0"], x_vals=sizes, line_arg="provider", line_vals=["triton", "torch"],
                           line_names=["Triton (autotuned)", "PyTorch spec"], ylabel="GB/s", plot_name="silu_mul",
                           args={}))
    def bench(N0: int, provider: str) -> float:  # noqa: N803 - the puzzle's size name
        x = torch.rand(N0, device="cuda")
        y, z = torch.rand_like(x), torch.empty_like(x)
        if provider == "triton":
            grid = lambda meta: (triton.cdiv(N0, meta["B0"]),)  # noqa: E731 - the autotuner picks B0
            ms = do_bench(lambda: kernel[grid](x, y, z, N0))
        else:
            ms = do_bench(lambda: spec(x, y))
        return gbps(ms, N0)

    table = bench.run(print_data=True, show_plots=False, return_df=True)
    print("the autotuner picked", kernel.best_config)
    return table[0] if isinstance(table, list) else table
