"""`python -m puzzles gradescope --out autograder.zip`: the zip to upload as a Gradescope autograder.

    setup.sh           Gradescope runs it once, when it builds the image: what grading needs
                       (requirements-grading.txt: torch's CPU build, triton, numpy, jaxtyping) into a .venv
                       beside it, with scripts/setup.py as `make setup` does; Ubuntu 22.04 (Python 3.10) or later
    run_autograder     run for each submission: python -m puzzles.classroom.gradescope (gradescope.py)
    gradescope.json    the instructor's choices: puzzles, points, timeout, memory, seed, speed, visibility,
                       the hidden sizes drawn for this zip, and the course's version and commit
    puzzles/, requirements*.txt, pyproject.toml, scripts/setup.py
                       the course, pinned to the version that built the zip, without solutions/: no
                       reference kernel is in the container; puzzles/course/starters.json holds what
                       grading reads of them (each kernel's starter and signature)

Nothing here grades: the grading is the roster mode's (roster.py, isolation.py, worker.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

from puzzles.classroom import hidden_sizes
from puzzles.classroom.gradebook import SPEED_SHARE
from puzzles.classroom.gradescope import CONFIG_NAME, VISIBILITIES, AutograderConfig, course_label
from puzzles.classroom.roster import CLASS_TIMEOUT, all_puzzles
from puzzles.course import catalog
from puzzles.course.solution_source import ROOT, STARTERS_FILE, starters_record

PACKAGES = ("puzzles",)  # never solutions/: the submission runs in the same container
COURSE_FILES = ("requirements.txt", "requirements-grading.txt", "pyproject.toml", "scripts/setup.py")
GRADING_REQUIREMENTS = "requirements-grading.txt"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: Ubuntu 22.04 (Python 3.10) or
# 24.04 (3.12). It installs what grading imports (requirements-grading.txt: torch's CPU build from PyTorch's
# CPU index, triton, numpy, jaxtyping; no JupyterLab, pytest or ruff) into .venv beside it, with the course's
# installer (scripts/setup.py, as `make setup`). `bash setup.sh --plan` prints what it would install.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null || ! "$PYTHON" -c "import venv, ensurepip" 2>/dev/null; then
    # An image without Python's venv module (Ubuntu ships it as a package of its own).
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv
fi
"$PYTHON" scripts/setup.py --check-python  # one line saying what is supported where this one is not
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python scripts/setup.py --requirements GRADING_REQUIREMENTS "$@"
if [ "${1:-}" != "--plan" ]; then
    .venv/bin/python -c "import puzzles.classroom.gradescope, torch, triton; print('the course is installed')"
fi
""".replace("GRADING_REQUIREMENTS", GRADING_REQUIREMENTS)

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission (copied to /autograder/run_autograder). It grades the files
# in ROOT/submission with the course in ROOT/source and writes ROOT/results/results.json; ROOT is
# /autograder, or $AUTOGRADER_ROOT (the course's tests run the autograder in a temporary folder).
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
cd "$SOURCE" && PYTHONPATH="$SOURCE" "$SOURCE/.venv/bin/python" -m puzzles.classroom.gradescope --root "$ROOT"
status=$?
if [ "$status" -ne 0 ] || [ ! -s "$ROOT/results/results.json" ]; then
    # The grader could not even start, or stopped before writing: say so (always visible), never leave no file.
    words="NOT GRADED: the grader failed (exit status $status; not your code). Nothing was graded,"
    words="$words so the 0 shown is not a grade: tell your instructor."
    cat > "$ROOT/results/results.json" <<EOF
{"score": 0.0, "execution_time": 0, "output": "$words", "output_format": "text", "visibility": "visible",
 "stdout_visibility": "{stdout_visibility}",
 "tests": [{"name": "Submission not graded", "score": 0.0, "max_score": 0.0, "status": "failed",
            "output": "$words", "visibility": "visible"}],
 "extra_data": {"graded": false, "reason": "the grader failed with exit status $status"}}
EOF
fi
exit 0
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `gradescope` command's options."""
    parser.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip (default: autograder.zip)")
    parser.add_argument("--puzzle", type=int, action="append", help="grade this puzzle (repeatable; default: all)")
    parser.add_argument("--points", action="append", metavar="N=P",
                        help="puzzle N is worth P points (repeatable; default: the catalog's points, 1 each)")
    parser.add_argument("--timeout", type=float, help="seconds per size before a kernel is stopped (default 5)")
    parser.add_argument("--memory", type=float, help="memory limit of a submission's grading processes in GiB "
                        "(default 6; 0: none)")
    parser.add_argument("--seed", type=int, help="the inputs' seed for every submission (default: each "
                        "submission's Gradescope id, shown in its results)")
    parser.add_argument("--speed", action="store_true", help="also speed points, as the class command's --speed, "
                        "where the autograder's machine has a CUDA GPU (elsewhere its results say correctness only)")
    parser.add_argument("--visibility", default="visible", help="when students see the tests at the notebooks' "
                        "sizes: visible (default), after_due_date, after_published or hidden")
    parser.add_argument("--stdout-visibility", default="hidden",
                        help="the grader's own log, the same choices (default hidden)")
    hidden = parser.add_argument_group("hidden sizes (sizes the notebooks do not list, one more test per puzzle)")
    hidden.add_argument("--hidden-sizes", type=int, default=2, metavar="N",
                        help="hidden sizes per puzzle (default 2; 0: none), drawn once when the zip is built")
    hidden.add_argument("--hidden-seed", type=int, help="the seed they are drawn from (default: a fresh one, "
                        "recorded in gradescope.json): the same seed draws the same sizes")
    hidden.add_argument("--hidden-share", type=float, default=0.5, metavar="F",
                        help="the share of each puzzle's points for its hidden sizes (default 0.5)")
    hidden.add_argument("--hidden-visibility", default="after_due_date",
                        help="when students see those tests (default after_due_date; the same choices)")


def parse_points(items: list[str] | None, numbers: list[int]) -> dict[int, float]:
    """`N=P` items over the catalog's points (the `points` field of each Puzzle, default 1)."""
    from puzzles.course import catalog

    points = {n: float(catalog.get(n).points) for n in numbers}
    for item in items or []:
        number, sep, value = item.partition("=")
        try:
            n, weight = int(number), float(value)
        except ValueError:
            raise ValueError(f"--points {item}: write it N=P (puzzle number, points)") from None
        if not sep or n not in points or weight < 0:
            raise ValueError(f"--points {item}: puzzle {n} is not graded here, or the points are negative")
        points[n] = weight
    return points


def course_version() -> dict:
    """The course's version, and its git commit when built from a checkout (with a flag for local
    changes to what the zip holds)."""
    found = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    course = {"version": found.group(1) if found else "unknown"}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
        changes = subprocess.run(["git", "status", "--porcelain", *PACKAGES, "solutions", *COURSE_FILES], cwd=ROOT,
                                 capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return course
    if commit.returncode == 0:
        course.update(commit=commit.stdout.strip(), dirty=bool(changes.stdout.strip()))
    return course


def course_files() -> list[Path]:
    """The course's files the autograder needs, relative to the checkout (no caches)."""
    found = [Path(name) for name in COURSE_FILES]
    for package in PACKAGES:
        found += sorted(p.relative_to(ROOT) for p in (ROOT / package).rglob("*")
                        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return found


def _add(archive: zipfile.ZipFile, name: str, text: str | bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # the same bytes for the same course
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ((stat.S_IFREG | (0o755 if executable else 0o644)) << 16)
    archive.writestr(info, text)


def draw_hidden_sizes(numbers: list[int], count: int, seed: int) -> dict[int, list[dict]]:
    """Each puzzle's hidden sizes (hidden_sizes.draw: each checked with the puzzle's reference kernel)."""
    drawn = {}
    for p in all_puzzles(numbers):
        sizes = hidden_sizes.draw(p, seed, count) if count else []
        if sizes:
            drawn[p.number] = sizes
    return drawn


def build(out: Path, config: AutograderConfig) -> Path:
    """Write the autograder zip to `out`; return it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    run_script = RUN_AUTOGRADER.replace("{stdout_visibility}", config.stdout_visibility)
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", SETUP_SH, executable=True)
        _add(archive, "run_autograder", run_script, executable=True)
        _add(archive, CONFIG_NAME, config.to_json())
        for path in course_files():
            _add(archive, path.as_posix(), (ROOT / path).read_bytes())
        _add(archive, STARTERS_FILE.relative_to(ROOT).as_posix(),
             json.dumps(starters_record(catalog.all_puzzles()), indent=1, sort_keys=True))
    return out


def main(args: argparse.Namespace) -> int:
    """The `gradescope` command: 0 when the zip is written, 2 on a usage error."""
    try:
        numbers = [p.number for p in all_puzzles(args.puzzle)]
        points = parse_points(args.points, numbers)
    except (KeyError, ValueError) as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    if not {args.visibility, args.stdout_visibility, args.hidden_visibility} <= set(VISIBILITIES):
        print(f"error: a visibility is one of {', '.join(VISIBILITIES)}", file=sys.stderr)
        return 2
    if not 0 <= args.hidden_share <= 1 or args.hidden_sizes < 0:
        print("error: --hidden-share is a fraction from 0 to 1, --hidden-sizes a count", file=sys.stderr)
        return 2
    seed = args.hidden_seed if args.hidden_seed is not None else random.randrange(1, 10**6)
    drawn = draw_hidden_sizes(numbers, args.hidden_sizes, seed)
    config = AutograderConfig(puzzles=numbers, points=points, timeout=args.timeout or CLASS_TIMEOUT,
                              memory_gib=6.0 if args.memory is None else args.memory, seed=args.seed,
                              speed=bool(args.speed), visibility=args.visibility,
                              stdout_visibility=args.stdout_visibility, course=course_version(),
                              hidden_sizes=drawn, hidden_share=args.hidden_share,
                              hidden_visibility=args.hidden_visibility, hidden_seed=seed if drawn else None)
    out = build(args.out, config)
    print(f"wrote {out}: {len(numbers)} puzzles, {config.total:g} points in all (set the assignment's total to "
          f"{config.total:g}), results {config.visibility}; {course_label(config.course)}")
    if drawn:
        hidden = sum(config.split(n)[1] for n in numbers)
        without = [n for n in numbers if not drawn.get(n)]
        print(f"hidden sizes (seed {seed}): {sum(len(v) for v in drawn.values())} for {len(drawn)} puzzles, "
              f"{hidden:g} of the points, shown {config.hidden_visibility}"
              + (f"; none for puzzle(s) {', '.join(map(str, without))}" if without else ""))
    if config.speed:
        most = sum(config.points[p.number] * SPEED_SHARE for p in all_puzzles(numbers) if p.speed_goal is not None)
        print(f"--speed: up to {most:g} speed points more, graded only where the autograder's machine has a CUDA "
              "GPU; elsewhere the results say so and count correctness only")
    if config.course.get("dirty"):
        print("warning: the checkout has uncommitted changes to the course; the zip holds them", file=sys.stderr)
    return 0
