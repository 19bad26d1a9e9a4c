"""Grading an `@triton.autotune` kernel under every one of its configs: a loop of `test()`'s own
per-size grading step, one verdict over all of them.

An autotuner picks one config per shape by timing them all, so a kernel that is right under
only some configs is wrong on some machine or some shape. Each config's meta-parameters (its `B0`,
...) join the puzzle's sizes, and the kernel under the autotuner is graded with them (on a GPU,
launched with the config's `num_warps` and `num_stages`). One verdict covers every config; a
failure names the config it failed under.

The learner's configs alone are not enough: a kernel right only under its single config (a literal
`tl.arange(0, 64)` behind `B0=64`) would pass. So the kernel is also graded under configs of the
grader's own, within what the puzzle's rules allow (`Puzzle.autotune`, e.g.
`{"B0": (32, ..., 1024), "num_warps": (1, 2, 4, 8)}`), with values the learner's configs do not use;
the verdict says whose config failed. They depend only on the learner's configs (not on the seed), so
a re-run is answered from the compile check's cache, and they are not compile-checked again: the
learner's configs already are, and values are what they are there to test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import triton

from puzzles.grading.autotune_configs import describe, describe_rules, grader_configs, tuning_rules
from puzzles.grading.job import GradingJob
from puzzles.grading.result import TestResult
from puzzles.grading.verdict import build_result
from puzzles.running.compile_check import merge_pending_notes
from puzzles.running.errors import KernelError
from puzzles.running.kernel import ConfigLaunch, on_gpu


class StartedConfig(Protocol):
    """test()'s grading of one config, begun (its runs working in the background)."""

    def finish(self) -> TestResult: ...

    def cancel(self) -> None: ...


# test()'s grading step for one config: (the config's launch, the sizes with its meta-parameters,
# test()'s options to override) -> that config's grading, begun.
StartConfig = Callable[..., StartedConfig]


def grade_every_config(job: GradingJob, start_config: StartConfig, started: float) -> TestResult:
    """One verdict over every config of an autotuned kernel, the learner's and then the grader's own.

    Every config's runs start at once and are read in order: their interpreted runs (on a GPU, the
    access checks) work side by side on the machine's cores. The grader's configs start too, and their
    rows are shown whatever the learner's configs gave (only a kernel that cannot be called at all ends
    them unread)."""
    kernel, puzzle = job.kernel, job.puzzle
    if job.size_problem is not None:
        return build_result(job, error=KernelError("sizes", job.size_problem), seconds=time.perf_counter() - started)
    base = list(job.run_sizes)  # every size of the puzzle, and the grading cell's where it differs
    tuner = job.handle.chain.autotuner
    configs = list(tuner.configs)

    def start(config: triton.Config, *more: triton.Config, **overrides: Any) -> StartedConfig:
        # The config's meta-parameters replace the sizes' (B0 comes from the config, not the puzzle).
        # num_warps rides along in the sizes so that every verdict names the whole config. Several
        # configs in one run share the first one's launch options (only where those mean nothing).
        tuned = [{**s, **c.kwargs, "num_warps": c.num_warps} for c in (config, *more) for s in base]
        return start_config(ConfigLaunch(tuner.fn, config, kernel), tuned, **overrides)

    rules = tuning_rules(puzzle)
    mine = [start(config) for config in configs]
    theirs_started = _start_grader_configs(grader_configs(configs, rules), start)
    results: list[tuple[triton.Config, TestResult]] = []
    for config, begun in zip(configs, mine, strict=True):
        results.append((config, begun.finish()))
        if results[-1][1].error is not None:
            break  # a signature error is the same under every config
    for begun in mine[len(results):]:
        begun.cancel()
    theirs: list[tuple[triton.Config, TestResult]] = []
    if results[-1][1].error is None:  # a failing verdict shows the grader's configs too: the statement says so
        theirs = _finish_grader_configs(theirs_started, len(base))
    else:
        for _, begun in theirs_started:
            begun.cancel()
    first = results[0][1]
    everything = results + theirs
    notes: list[str] = []
    for i, (config, r) in enumerate(results, 1):
        notes.append(f"config {i} of {len(configs)} ({describe(config)}): {_config_verdict(r)}")
    failed = [(config, r) for config, r in theirs if not r.passed]
    if failed and all(r.passed for _, r in results):
        for config, r in failed:  # the failing sizes say whose config failed (the notes below say it otherwise)
            whose = f"under the grader's own config ({describe(config)}), not one of yours"
            for outcome in r.outcomes:
                if not outcome.passed:
                    outcome.note = "; ".join(filter(None, [outcome.note, whose]))
        config, r = failed[0]
        notes.insert(0, f"right under each of your configs, but wrong under a config of the grader's own "
                     f"({describe(config)}; it picks configs within the puzzle's rules: "
                     f"{describe_rules(rules)}): the autotuner may be given other configs, so the kernel must "
                     "be right under any of them (a number where a block size belongs?)")
    for i, (config, r) in enumerate(theirs, 1):
        notes.append(f"grader's config {i} of {len(theirs)} ({describe(config)}): {_config_verdict(r)}")
    efficiency = _fastest_efficiency(results)  # one report: the others' notes are left out
    others = {r.efficiency.text() for _, r in results if r.efficiency is not None and r.efficiency is not efficiency}
    notes += merge_pending_notes(sorted({n for _, r in everything for n in r.notes} - others))
    return build_result(job, [o for _, r in everything for o in r.outcomes],
                        error=next((r.error for _, r in everything if r.error is not None), None), notes=notes,
                        perf=_fastest_perf(results), efficiency=efficiency,
                        seconds=time.perf_counter() - started, device=first.device, compiled=first.compiled)


def _fastest_perf(results: list[tuple[triton.Config, TestResult]]) -> Any:
    """The speed report of the fastest of the learner's configs: the one an autotuner would pick."""
    reports = [r.perf for _, r in results if r.perf is not None]
    return min(reports, key=lambda report: report.ms) if reports else None


def _fastest_efficiency(results: list[tuple[triton.Config, TestResult]]) -> Any:
    """The efficiency report of the learner's config predicted fastest (the grader's own configs get none)."""
    reports = [r.efficiency for _, r in results if r.efficiency is not None]
    return min(reports, key=lambda report: report.predicted_us) if reports else None


def _config_verdict(r: TestResult) -> str:
    """One config's verdict for its note: its sizes are rows of the verdict's table, whose reasons say what went
    wrong, so the note counts them (the reason itself only where no size ran: a signature error)."""
    if r.passed:
        return "passed"
    failed = [o for o in r.outcomes if not o.passed and o.status != "not run"]
    if r.error is not None or not failed:
        return f"FAILED {r.reason()}"
    where = "its size" if len(r.outcomes) == 1 else f"{len(failed)} of its {len(r.outcomes)} sizes"
    return f"FAILED at {where} (its rows in the table above)"


def _start_grader_configs(configs: list[triton.Config], start: Callable[..., StartedConfig]
                          ) -> list[tuple[list[triton.Config], StartedConfig]]:
    """The grader's configs, not compile-checked again (the learner's configs were) nor read for efficiency (the
    report is on the learner's own). Interpreted, num_warps
    and num_stages mean nothing, so all of them go in one run (one child process); on a GPU each is
    launched with its own options."""
    if on_gpu() or len(configs) < 2:
        return [([config], start(config, compile_check=False, compiled=None, efficiency_gpu=None))
                for config in configs]
    return [(configs, start(*configs, compile_check=False, compiled=None, efficiency_gpu=None))] if configs else []


def _finish_grader_configs(started: list[tuple[list[triton.Config], StartedConfig]], n_sizes: int
                           ) -> list[tuple[triton.Config, TestResult]]:
    """Each grader config's verdict (a run of several configs split per config)."""
    pieces = []
    for configs, begun in started:
        together = begun.finish()
        if len(configs) == 1:
            pieces.append((configs[0], together))
            continue
        for i, config in enumerate(configs):
            part = TestResult(together.puzzle, together.kernel, together.outcomes[i * n_sizes : (i + 1) * n_sizes],
                              together.seconds / len(configs), together.seed, error=together.error,
                              device=together.device, notes=list(together.notes))
            pieces.append((config, part))
    return pieces


def autotune_missing(job: GradingJob) -> KernelError | None:
    """The error for a plain @triton.jit kernel given to a puzzle that grades its autotuning."""
    puzzle, chain = job.puzzle, job.handle.chain
    if puzzle is None or not puzzle.autotune or chain.config_launch is not None or chain.autotuner is not None:
        return None
    return KernelError("rule", f"Puzzle {puzzle.number} grades an autotuned kernel: keep the "
                       "@triton.autotune(configs=[...], key=[...]) decorator above @triton.jit")
