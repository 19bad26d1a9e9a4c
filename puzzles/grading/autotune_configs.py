"""The configs of an `@triton.autotune` kernel, as the grader sees them: the configs of the grader's own
within a puzzle's rules, and their descriptions in a verdict.

The grader (puzzles/grading/configs.py) grades an autotuned kernel under each of these, each config
launched by a `puzzles.running.kernel.ConfigLaunch`. Pure functions: nothing here runs a kernel.
"""

from __future__ import annotations

import triton

from puzzles.course.puzzle import Puzzle


def describe(config: triton.Config) -> str:
    """`B0=64, num_warps=2`: a config as a learner wrote it."""
    meta = ", ".join(f"{k}={v}" for k, v in config.kwargs.items())
    return f"{meta}, num_warps={config.num_warps}" if meta else f"num_warps={config.num_warps}"


def tuning_rules(puzzle: Puzzle | None) -> dict[str, tuple[int, ...]]:
    """What the puzzle lets the grader pick for its own configs: meta-parameter (or num_warps,
    num_stages) -> the values allowed. Empty where the puzzle states no rule."""
    rules = puzzle.autotune if puzzle is not None else None
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
