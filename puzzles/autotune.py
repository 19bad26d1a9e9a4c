"""Grade an `@triton.autotune` kernel under every one of its configs.

An autotuner picks one config per shape by timing them all, so a kernel that is right under
only some configs is wrong on some machine or some shape. `test()` hands an autotuned kernel
here: each config's meta-parameters (its `B0`, ...) join the puzzle's sizes, and the kernel
under the autotuner is graded with them (on a GPU, launched with the config's `num_warps` and
`num_stages`). One verdict covers every config; a failure names the config it failed under.

The learner's configs alone are not enough: a kernel right only under its single config (a literal
`tl.arange(0, 64)` behind `B0=64`) would pass. So the kernel is also graded under configs of the
grader's own, within what the puzzle's rules allow (`Puzzle.extra["autotune"]`, e.g.
`{"B0": (32, ..., 1024), "num_warps": (1, 2, 4, 8)}`), with values the learner's configs do not use;
the verdict says whose config failed. They depend only on the learner's configs (not on the seed), so
a re-run is answered from the compile check's cache, and they are not compile-checked again: the
learner's configs already are, and values are what they are there to test.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import triton

from puzzles.puzzle import Puzzle, Sizes
from puzzles.result import TestResult


class ConfigLaunch:
    """The autotuner's kernel, launched as one config would launch it."""

    def __init__(self, jit: Any, config: triton.Config, outer: Any = None) -> None:
        self.fn = jit  # where unwrap_kernel looks for the kernel's Python function
        self.config = config
        self.outer = outer  # the decorated kernel, whose @triton.heuristics still apply

    def __getitem__(self, grid: Any) -> Any:
        launch = self.fn[grid]
        options = {"num_warps": self.config.num_warps, "num_stages": self.config.num_stages}
        return lambda *args, **kwargs: launch(*args, **kwargs, **options)


def describe(config: triton.Config) -> str:
    """`B0=64, num_warps=2`: a config as a learner wrote it."""
    meta = ", ".join(f"{k}={v}" for k, v in config.kwargs.items())
    return f"{meta}, num_warps={config.num_warps}" if meta else f"num_warps={config.num_warps}"


def autotuner_of(kernel: Any) -> triton.runtime.Autotuner | None:
    """The @triton.autotune wrapper of a kernel, also under a @triton.heuristics above it."""
    for _ in range(8):
        if isinstance(kernel, triton.runtime.Autotuner):
            return kernel
        if isinstance(kernel, ConfigLaunch) or not hasattr(kernel, "fn"):
            return None
        kernel = kernel.fn
    return None


def is_autotuned(kernel: Any) -> bool:
    return autotuner_of(kernel) is not None


def tuning_rules(puzzle: Puzzle | None) -> dict[str, tuple[int, ...]]:
    """What the puzzle lets the grader pick for its own configs: meta-parameter (or num_warps,
    num_stages) -> the values allowed. Empty where the puzzle states no rule."""
    rules = puzzle.extra.get("autotune") if puzzle is not None else None
    return dict(rules) if isinstance(rules, dict) else {}


def describe_rules(rules: dict[str, tuple[int, ...]]) -> str:
    """`B0 in 32, 64, ..., 1024; num_warps in 1, 2, 4, 8`."""
    return "; ".join(f"{name} in {', '.join(map(str, values))}" for name, values in rules.items())


def grader_configs(learner: list[triton.Config], rules: dict[str, tuple[int, ...]]) -> list[triton.Config]:
    """Two configs of the grader's own within the rules: the smallest allowed value of each rule and the
    largest, each among those none of the learner's configs uses (a block smaller than the learner's and one
    larger, where there are such); the rest of a config (other meta-parameters, num_stages) is the learner's
    first config's."""
    if not rules or not learner:
        return []
    base = learner[0]
    configs = []
    for half in (0, 1):
        meta, launch = dict(base.kwargs), {"num_warps": base.num_warps, "num_stages": base.num_stages}
        for name, allowed in rules.items():
            used = {c.num_warps if name == "num_warps" else c.num_stages if name == "num_stages" else c.kwargs.get(name)
                    for c in learner}
            fresh = sorted(v for v in allowed if v not in used) or sorted(allowed)
            (launch if name in launch else meta)[name] = fresh[0] if half == 0 else fresh[-1]
        configs.append(triton.Config(meta, **launch))
    return configs


def test_every_config(kernel: Any, spec: Any, puzzle: Puzzle | None, sizes: list[Sizes] | None,
                      nelem: Sizes | None, **options: Any) -> TestResult:
    """One verdict over every config of an autotuned kernel, the learner's and then the grader's own
    (the options are `test()`'s)."""
    from puzzles.harness import test
    from puzzles.harness.presenting import present

    started = time.perf_counter()
    quiet, viz = options.pop("quiet", False), options.pop("viz", False)
    base = list(sizes) if sizes is not None else (
        [dict(s) for s in puzzle.sizes] if puzzle is not None else [dict(nelem or {})])
    if nelem and sizes is None:
        base[0] = {**base[0], **nelem}
    tuner = autotuner_of(kernel)
    configs = list(tuner.configs)

    def run(config: triton.Config, *more: triton.Config, **overrides: Any) -> TestResult:
        # The config's meta-parameters replace the sizes' (B0 comes from the config, not the puzzle).
        # num_warps rides along in the sizes so that every verdict names the whole config. Several
        # configs in one run share the first one's launch options (only where those mean nothing).
        tuned = [{**s, **c.kwargs, "num_warps": c.num_warps} for c in (config, *more) for s in base]
        p = dataclasses.replace(puzzle, sizes=tuple(tuned)) if puzzle is not None else None
        return test(ConfigLaunch(tuner.fn, config, kernel), spec, puzzle=p, sizes=tuned, quiet=True,
                    **{**options, **overrides})

    results: list[tuple[triton.Config, TestResult]] = []
    for config in configs:
        results.append((config, run(config)))
        if results[-1][1].error is not None:
            break  # a signature error is the same under every config
    rules = tuning_rules(puzzle)
    theirs: list[tuple[triton.Config, TestResult]] = []
    if all(r.passed for _, r in results):  # a failure under the learner's own configs already decides
        theirs = _run_grader_configs(grader_configs(configs, rules), run, len(base))
    first = results[0][1]
    everything = results + theirs
    merged = TestResult(first.puzzle, first.kernel, [o for _, r in everything for o in r.outcomes], 0.0, first.seed,
                        device=first.device)
    merged.error = next((r.error for _, r in everything if r.error is not None), None)
    for i, (config, r) in enumerate(results, 1):
        verdict = "passed" if r.passed else f"FAILED {r.reason()}"
        merged.notes.append(f"config {i} of {len(configs)} ({describe(config)}): {verdict}")
    failed = [(config, r) for config, r in theirs if not r.passed]
    if failed:
        config, r = failed[0]
        whose = f"under the grader's own config ({describe(config)}), not one of yours"
        for outcome in r.outcomes:
            if not outcome.passed:
                outcome.note = "; ".join(filter(None, [outcome.note, whose]))
        merged.notes.insert(0, f"right under each of your configs, but wrong under a config of the grader's own "
                            f"({describe(config)}; it picks configs within the puzzle's rules: "
                            f"{describe_rules(rules)}): the autotuner may be given other configs, so the kernel must "
                            "be right under any of them (a number where a block size belongs?)")
    for i, (config, r) in enumerate(theirs, 1):
        verdict = "passed" if r.passed else f"FAILED {r.reason()}"
        merged.notes.append(f"grader's config {i} of {len(theirs)} ({describe(config)}): {verdict}")
    merged.notes += sorted({n for _, r in everything for n in r.notes})
    merged.perf = next((r.perf for _, r in everything if r.perf is not None), None)
    merged.seconds = time.perf_counter() - started
    return present(merged, quiet, viz, puzzle)


def _run_grader_configs(configs: list[triton.Config], run: Any, n_sizes: int) -> list[tuple[triton.Config, TestResult]]:
    """The grader's configs, not compile-checked again (the learner's configs were). Interpreted, num_warps
    and num_stages mean nothing, so all of them go in one run (one child process) and the verdict is split
    per config; on a GPU each is launched with its own options."""
    from puzzles.harness.running import on_gpu

    if on_gpu() or len(configs) < 2:
        return [(config, run(config, compile_check=False)) for config in configs]
    together = run(*configs, compile_check=False)
    pieces = []
    for i, config in enumerate(configs):
        part = TestResult(together.puzzle, together.kernel, together.outcomes[i * n_sizes : (i + 1) * n_sizes],
                          together.seconds / len(configs), together.seed, error=together.error,
                          device=together.device, notes=list(together.notes))
        pieces.append((config, part))
    return pieces


def autotune_missing(kernel: Any, puzzle: Puzzle | None, seed: int, quiet: bool) -> TestResult | None:
    """The verdict on a plain @triton.jit kernel given to a puzzle that grades its autotuning."""
    if puzzle is None or not puzzle.extra.get("autotune") or isinstance(kernel, ConfigLaunch) or is_autotuned(kernel):
        return None
    from puzzles.execution import KernelError, unwrap_kernel
    from puzzles.harness.presenting import _device_name, present

    name = getattr(unwrap_kernel(kernel), "__name__", repr(kernel))
    result = TestResult(f"Puzzle {puzzle.number}: {puzzle.title}", name, [], 0.0, seed, device=_device_name())
    result.error = KernelError("rule", f"Puzzle {puzzle.number} grades an autotuned kernel: keep the "
                               "@triton.autotune(configs=[...], key=[...]) decorator above @triton.jit")
    return present(result, quiet, False, puzzle)


# -- puzzle 20's notebook: the sweep -------------------------------------------------------------------------


def sweep(kernel: Any, sizes: list[int] | None = None) -> Any:
    """On a GPU: time `kernel` under each of its configs at N0 = 2**24, then the autotuned kernel
    against puzzle 20's PyTorch spec over `sizes` (`triton.testing.perf_report`), in GB/s; returns
    that table. It runs in the GPU worker, like every launch of a learner's kernel: a bad kernel
    gives a message, not a dead notebook. Without a GPU it says why there is nothing to time."""
    from puzzles.harness.running import on_gpu
    from puzzles.sandbox import run_safely, show

    if not on_gpu():
        print("No GPU: Triton's interpreter runs kernels as NumPy code, so a time measured here says nothing about "
              "a GPU, and num_warps means nothing. The grade above (correct under every config) is what counts "
              "here; on a GPU this cell prints each config's time and the autotuned kernel against PyTorch in GB/s.")
        return None
    return show(run_safely("puzzles.autotune:sweep_here", kernel, sizes or [2**i for i in range(12, 27, 2)],
                           timeout=600.0), "The sweep")


def sweep_here(kernel: Any, sizes: list[int]) -> Any:
    """`sweep`'s work, in the GPU worker."""
    import torch
    from triton.testing import Benchmark, do_bench, perf_report

    from puzzles import catalog

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
