"""benchmarks/gptq/experiments/step_timeline.py: the labels and marginal times it derives from a trace (CPU)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def timeline():
    sys.path.insert(0, str(ROOT / "benchmarks" / "gptq"))
    try:
        path = ROOT / "benchmarks" / "gptq" / "experiments" / "step_timeline.py"
        spec = importlib.util.spec_from_file_location("step_timeline", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "benchmarks" / "gptq"))


# One replay of a two-layer step, as the profiler names its kernels.
STEP = (["void at::native::indexSelectLargeIndex", "_add_rms_norm_kernel"]
        + ["gptq_small_m_kernel", "_rope_attend_kernel", "gptq_small_m_kernel", "_add_rms_norm_kernel",
           "gptq_small_m_kernel", "_silu_mul_kernel", "gptq_small_m_kernel", "_add_rms_norm_kernel"] * 2
        + ["nvjet_sm90_hsh_256x8_64x6_2x1_v_bz_TNT", "_greedy_pick_kernel",
           "void at::native::vectorized_elementwise_kernel"])


def test_matmuls_are_named_by_the_kernel_before_them(timeline):
    labels = timeline.label_step(STEP)
    assert labels[:10] == ["other: void at::native::indexSelectLargeIndex", "norm_1", "qkv", "attend", "o", "norm_2",
                           "gate_up", "silu", "down", "norm_1"]
    assert labels[10:18] == ["qkv", "attend", "o", "norm_2", "gate_up", "silu", "down", "norm_1"]
    assert labels[18:20] == ["head", "greedy_pick"]


def test_marginal_times_add_up_to_the_step_and_overlaps_show_as_negative_gaps(timeline):
    labels = timeline.label_step(STEP)
    steps = []
    for replay in range(2):
        t, kernels = 1000.0 * replay, []
        for label in labels:
            start = t - (1.0 if label in ("qkv", "o", "gate_up", "down") else 0.0)  # resident 1 us early (PDL)
            t += {"qkv": 10.0, "o": 5.0, "gate_up": 17.0, "down": 10.0, "head": 95.0}.get(label, 2.0)
            kernels.append((label, start, t))
        steps.append(kernels)
    shapes = {"qkv": 25_000_000, "o": 8_000_000, "gate_up": 45_000_000, "down": 22_000_000, "head": 262_000_000}
    summary = timeline.summarize(steps, 3.0e12, shapes)
    rows = summary["kernels"]
    assert rows["qkv"]["launches"] == 2 and rows["qkv"]["marginal_us"] == 20.0
    assert rows["qkv"]["median_gap_us"] == -1.0 and rows["attend"]["median_gap_us"] == 0.0
    assert rows["norm_1"]["launches"] == 3 and rows["norm_1"]["marginal_us"] == 6.0  # two layers and the final norm
    first = 2.0  # the embedding: the step's first kernel, whose time no marginal counts
    assert sum(row["marginal_us"] for row in rows.values()) + first == pytest.approx(summary["step_us"])
    assert rows["head"]["bw_of_copy"] == pytest.approx(262e6 / 95e-6 / 3.0e12, abs=1e-3)
