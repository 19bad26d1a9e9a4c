"""Fast references: a second model answer beside a teaching reference that stays simple, for the puzzles
whose reference is slower than torch.compile(spec) at the perf size (Puzzle.fast_reference). Each has the
reference's signature and grid, so test() grades it as it grades any answer, at every size; the
notebook says what it changes; the recorded table (benchmarks/compile_baseline.py) covers the catalog."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from puzzles import test
from puzzles.course import catalog
from puzzles.course.notebooks import COMPILE_BASELINE_RESULTS, puzzle_notebook
from puzzles.grading import perf
from puzzles.running.kernel import unwrap_kernel

ROOT = Path(__file__).resolve().parents[2]
FAST = [p for p in catalog.all_puzzles() if p.fast_reference is not None]


def test_the_puzzles_slower_than_torch_compile_have_fast_references():
    assert {p.number for p in FAST} >= {8, 9, 10, 12, 18}


@pytest.mark.parametrize("p", FAST, ids=lambda p: p.id)
def test_fast_reference_passes_at_every_size(p):
    result = test(p.fast_reference_kernel(), p.spec, quiet=True)
    assert result.passed, str(result)
    graded = [{k: v for k, v in o.sizes.items() if k != "num_warps"} for o in result.outcomes]
    assert graded == [dict(s) for s in p.sizes]


@pytest.mark.parametrize("p", FAST, ids=lambda p: p.id)
def test_fast_reference_is_a_drop_in_answer(p):
    fast, reference = unwrap_kernel(p.fast_reference_kernel()), unwrap_kernel(p.reference())
    assert fast.__name__ == reference.__name__ == p.kernel_name
    assert list(inspect.signature(fast).parameters) == list(inspect.signature(reference).parameters)
    assert (ROOT / (p.fast_solution_module.replace(".", "/") + ".py")).is_file()


def test_a_longer_row_takes_the_fast_softmax_two_pass_path():
    # Rows longer than 8 chunks leave registers for two passes over x: sizes the catalog's do not reach.
    p = catalog.get(8)
    sizes = [{"N0": 3, "N1": 32, "T": 300, "B0": 1, "B1": 16}, {"N0": 5, "N1": 32, "T": 170, "B0": 2, "B1": 16}]
    result = test(p.fast_reference_kernel(), p.spec, sizes=sizes, quiet=True)
    assert result.passed, str(result)


@pytest.mark.parametrize("p", FAST, ids=lambda p: p.id)
def test_the_notebook_says_what_the_fast_reference_changes(p):
    cells = {c["id"]: "".join(c["source"]) for c in puzzle_notebook(p)["cells"]}
    text = cells[f"p{p.number}-fast"]
    assert p.fast_reference.changes in text and p.fast_solution_module.replace(".", "/") in text
    assert COMPILE_BASELINE_RESULTS.rsplit("/", 1)[0] in text and "compile_baseline.py" in text


# Every recorded table (benchmarks/compile_baseline.py writes one per device: today the H100's; the H200's once the
# lead records it): each is checked, the newer columns only where the table has them.
TABLES = sorted((ROOT / "benchmarks" / "results").glob("*/compile_baseline.json"))


@pytest.mark.parametrize("table", TABLES or [None], ids=lambda t: t.parent.name if t else "none")
def test_the_recorded_table_covers_every_puzzle_with_a_speed_size(table):
    """Every device's recorded table (the H100's and the H200's, whichever are there; not only the newest):
    every puzzle with a perf size, each puzzle's best reference (its fast one where timed) at least as fast as
    torch.compile; and, in a table with the library column (compile_baseline.py since issue 52; the H100's of
    today has none), at least as fast as the bar its speed goal is judged against: the fastest of eager torch,
    torch.compile and the library op where the goal counts it (SpeedGoal.library_note leaves it out)."""
    if table is None:
        pytest.skip("no table recorded yet: python benchmarks/compile_baseline.py on an H100 or H200 writes it")
    recorded = json.loads(table.read_text())
    rows = {r["number"]: r for r in recorded["rows"]}
    assert recorded["command"].startswith("python benchmarks/compile_baseline.py")
    assert set(recorded.get("catalog", rows)) <= set(rows)  # every puzzle it was recorded for (older: its rows)
    for number, row in rows.items():  # every reference, or its fast one, at least as fast as torch.compile
        p = catalog.get(number)
        goal = p.speed_goal
        if goal is not None and not goal.vs_compile:  # its goal says why torch.compile is no goal there
            assert goal.compile_note in row["notes"], row
            continue
        best = min(t for t in (row["reference_us"], row["fast_reference_us"]) if t is not None)
        # At a launch-bound size no Triton kernel goes under the launch floor measured for an empty one; a bar below
        # it is a leaner launcher's (torch.compile's), not a faster kernel.
        floor = recorded["limits"].get("launch_us") if row.get("bound") == "launch" else None
        compiled = None if row["compiled_us"] is None else max(row["compiled_us"], floor or 0.0)
        assert compiled is None or perf.within_noise(best / 1000, compiled / 1000), row
        if "library_us" not in row:  # recorded before the library column
            continue
        assert bool(row["library"]) == (p.library is not None), row  # the catalog's library ops were timed
        if p.library is not None and goal is not None and goal.library_note:
            assert goal.library_note in row["notes"], row
        counted = [row["eager_us"], row["compiled_us"]]
        if p.library is not None and not (goal is not None and goal.library_note):
            if row["library_us"] is None:  # the op did not run there: the note says why
                assert f"{p.library.label} could not be timed" in row["notes"], row
            assert row["library_error"] is None or row["library_error"] < 1e-2, row  # it gives the puzzle's output
            counted.append(row["library_us"])
        bar = max(min(t for t in counted if t is not None), floor or 0.0)
        factor = goal.vs_compile if goal is not None else 1.0
        assert perf.within_noise(best / 1000, bar / factor / 1000), (number, best, bar, row["notes"])


def test_every_puzzle_with_a_speed_size_is_in_a_recorded_table():
    """A puzzle or a fast reference added after a device's table was recorded is measured in a newer one (on the GPU
    that the lead could reach: the table says which device), never left out of every table."""
    recorded = [r for t in TABLES for r in json.loads(t.read_text())["rows"]]
    assert {p.number for p in catalog.all_puzzles() if p.perf_size} - {r["number"] for r in recorded} == set()
    # A fast reference written after a device's table (puzzle 15's, after the H100's) is timed in a newer one.
    timed = {r["number"] for r in recorded if r["fast_reference_us"] is not None}
    assert {p.number for p in FAST} - timed == set()


# The benchmark's own launch of a kernel (the grader's argument binding, strided and listed inputs, an autotuned
# kernel's grid), run under the interpreter on a CPU: the output matches the spec.
LAUNCH_CHECK = """
import sys
sys.path.insert(0, "benchmarks")
from compile_baseline import kernel_launch, relative_error
from puzzles.course import catalog
from puzzles.course.spec import call_spec
for number, fast in ((2, False), (10, True), (19, False), (18, True)):
    p = catalog.get(number)
    kernel = p.fast_reference_kernel() if fast else p.reference()
    launch, out, inputs = kernel_launch(p, kernel, dict(p.sizes[0]), seed=1, device="cpu")
    launch()
    print(number, relative_error(out, call_spec(p.spec, inputs, p.sizes[0])))
"""


@pytest.mark.interpreter("runs the interpreter")
def test_the_benchmark_launches_kernels_as_the_grader_binds_them():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", LAUNCH_CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    errors = dict(line.split() for line in done.stdout.split("\n") if line.strip())
    assert set(errors) == {"2", "10", "19", "18"} and all(float(e) < 1e-2 for e in errors.values()), done.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("p", FAST, ids=lambda p: p.id)
def test_fast_reference_compiles_and_passes(p):
    result = test(p.fast_reference_kernel(), p.spec, quiet=True)
    assert result.passed, str(result)
    assert "compiled" in result.device
