"""`make versions`: run every test file that judges kernels under each supported Triton.

For each version in `puzzles.running.compat.TESTED` it makes (once) an environment under .venvs/ that holds
only that triton and a numpy it works with; torch and the rest come from the environment running
this script, through a .pth file, so no torch is downloaded. The environment's own packages come
first on sys.path, so its triton and numpy shadow the base ones. Then it runs the version tests,
every test file that judges kernels (`TESTS`: the interpreter hooks, every reference, starter and wrong
kernel, the hand-written kernels, the judging holes, the learner's messages, the tracks, the compile check)
there, and prints one Markdown table row per version (docs/grader.md records it); last, it says when
the package index has a newer triton than the newest tested one.

    python scripts/triton_versions.py [--only 3.6.0] [--base SITE_PACKAGES]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from puzzles.running.compat import TESTED  # noqa: E402 - after the path is set

ENVS = ROOT / ".venvs"
# Every test file that judges kernels: the interpreter hooks first (a hook missing fails there, by name), then the
# references, starters and wrong kernels, the hand-written kernels, the judging holes, the learner's messages,
# the quantization, training and modern-Triton tracks, every puzzle's kernel collection, and the compile check.
TESTS = ["tests/running/test_versions.py", "tests/running/test_interpreter_hooks.py", "tests/grading/test_harness.py",
         "tests/grading/test_harness_runs.py", "tests/course/test_catalog.py",
         "tests/grading/test_handwritten_kernels.py", "tests/grading/test_judging_holes.py",
         "tests/grading/test_judging_holes_matmuls.py", "tests/grading/test_learner_messages.py",
         "tests/grading/test_learner_walkthrough.py", "tests/course/test_quant_track.py",
         "tests/course/test_quant_track_slips.py", "tests/course/test_dropout_layernorm.py",
         "tests/course/test_cross_entropy.py", "tests/course/test_attention_backward.py",
         "tests/course/test_practice_track.py", "tests/course/test_descriptor_track.py",
         "tests/course/test_persistent_track.py", "tests/course/test_pipelined_track.py",
         "tests/course/test_fp8_track.py", "tests/course/test_mxfp4_track.py",
         "tests/grading/test_kernel_collections.py", "tests/running/test_compile_check.py"]
PTH = "_course_base.pth"


def _site_packages(env: Path) -> Path:
    found = sorted(env.glob("lib/python3*/site-packages"))
    if not found:
        raise SystemExit(f"no site-packages under {env}")
    return found[0]


def make_env(version: str, numpy: str, base: Path) -> Path:
    """The environment for this triton, made or updated; pip never sees the base packages."""
    env = ENVS / f"triton-{version}"
    if not (env / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    site = _site_packages(env)
    (site / PTH).unlink(missing_ok=True)  # pip must not see (nor try to replace) the base's triton
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"triton=={version}", f"numpy=={numpy}"], check=True)
    (site / PTH).write_text(f"{base}\n")
    return env


def run_tests(env: Path) -> tuple[str, float]:
    """pytest's summary line and the seconds it took."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT), TRITON_INTERPRET="1")
    start = time.perf_counter()
    proc = subprocess.run([str(env / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
                          cwd=ROOT, env=environ, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    summary = lines[-1].strip("= ") if lines else f"pytest exited {proc.returncode}"
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-2000:])
    return summary, seconds


def newest_on_index() -> str | None:
    """The newest triton the package index offers (`pip index versions`), or None when it does not answer."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "triton",
                               "--disable-pip-version-check"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"^triton \(([^)]+)\)", proc.stdout, re.MULTILINE)
    return match.group(1) if match else None


def untested_newer(newest: str | None) -> str | None:
    """A line asking to test a newer triton than TESTED's newest, else None."""
    if newest is None:
        return None
    key = lambda v: tuple(int(x) for x in re.findall(r"\d+", v)[:3])  # noqa: E731
    if key(newest) <= max(key(v) for v in TESTED):
        return None
    return (f"triton {newest} is on the package index but not tested: add it to TESTED in puzzles/running/compat.py "
            "(and raise BELOW), run `make versions`, record the row in docs/grader.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="just this triton version (repeatable)")
    parser.add_argument("--base", type=Path, default=Path(sysconfig.get_paths()["purelib"]),
                        help="site-packages that provides torch and the rest (default: this Python's)")
    args = parser.parse_args(argv)
    rows, failed = [], 0
    for version, numpy in TESTED.items():
        if args.only and version not in args.only:
            continue
        print(f"== triton {version} (numpy {numpy})", flush=True)
        env = make_env(version, numpy, args.base)
        summary, seconds = run_tests(env)
        ok = "failed" not in summary and "error" not in summary and "passed" in summary
        failed += not ok
        verdict = f"{'pass' if ok else 'FAIL'}: {summary.split(' in ')[0]}"
        rows.append(f"| {version} | {numpy} | {verdict} | {seconds:.0f} s |")
        print(rows[-1], flush=True)
    print("\n| triton | numpy | result | time |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\ncommand: make versions  (tests: {' '.join(TESTS)})")
    newer = untested_newer(newest_on_index())  # the course tracks the newest Triton as it ships
    if newer:
        print(f"\nNOTE: {newer}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
