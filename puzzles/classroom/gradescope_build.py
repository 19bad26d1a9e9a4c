"""`python -m puzzles gradescope --out autograder.zip`: the zip to upload as a Gradescope autograder.

    setup.sh           Gradescope runs it once, when it builds the image: the pinned CPU set into a .venv
                       beside it, as `make setup` does (scripts/setup.py with requirements.txt)
    run_autograder     run for each submission: python -m puzzles.classroom.gradescope (gradescope.py)
    gradescope.json    the instructor's choices: puzzles, points, timeout, memory, seed, speed,
                       visibility, and the course's version and commit
    puzzles/, requirements.txt, pyproject.toml, scripts/setup.py
                       the course, pinned to the version that built the zip, without solutions/: no
                       reference kernel is in the container; puzzles/course/starters.json holds what
                       grading reads of them (each kernel's starter and signature)

Nothing here grades: the grading is the roster mode's (roster.py, isolation.py, worker.py).
"""

from __future__ import annotations

import argparse
import json
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

from puzzles.classroom.gradebook import SPEED_SHARE
from puzzles.classroom.gradescope import CONFIG_NAME, VISIBILITIES, AutograderConfig, course_label
from puzzles.classroom.roster import CLASS_TIMEOUT, all_puzzles
from puzzles.course import catalog
from puzzles.course.solution_source import ROOT, STARTERS_FILE, starters_record

PACKAGES = ("puzzles",)  # never solutions/: the submission runs in the same container
COURSE_FILES = ("requirements.txt", "pyproject.toml", "scripts/setup.py")

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04 or later:
# the course needs Python 3.10+). It installs the course's pinned CPU set into .venv beside it, as
# `make setup` does: scripts/setup.py installs torch from PyTorch's CPU index (no NVIDIA GPU here),
# then requirements.txt. `bash setup.sh --plan` prints what it would install.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    if ! "$PYTHON" -m venv .venv; then  # an image without the venv module: install it, then again
        rm -rf .venv
        apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv python3-pip
        "$PYTHON" -m venv .venv
    fi
fi
.venv/bin/python scripts/setup.py "$@"
if [ "${1:-}" != "--plan" ]; then
    .venv/bin/python -c "import puzzles.classroom.gradescope, torch, triton; print('the course is installed')"
fi
"""

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
    # The grader could not even start, or stopped before writing: say so, never leave no file.
    words="NOT GRADED: the grader failed (exit status $status; not your code). Nothing was graded,"
    words="$words so the 0 shown is not a grade: tell your instructor."
    cat > "$ROOT/results/results.json" <<EOF
{"score": 0.0, "execution_time": 0, "output": "$words", "output_format": "text", "visibility": "{visibility}",
 "stdout_visibility": "{stdout_visibility}",
 "tests": [{"name": "Submission not graded", "score": 0.0, "max_score": 0.0, "status": "failed",
            "output": "$words", "visibility": "{visibility}"}],
 "extra_data": {"graded": false, "reason": "the grader failed with exit status $status"}}
EOF
fi
exit 0
"""


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


def build(out: Path, config: AutograderConfig) -> Path:
    """Write the autograder zip to `out`; return it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    run_script = RUN_AUTOGRADER.replace("{visibility}", config.visibility) \
                               .replace("{stdout_visibility}", config.stdout_visibility)
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
    if args.visibility not in VISIBILITIES or args.stdout_visibility not in VISIBILITIES:
        print(f"error: a visibility is one of {', '.join(VISIBILITIES)}", file=sys.stderr)
        return 2
    config = AutograderConfig(puzzles=numbers, points=points, timeout=args.timeout or CLASS_TIMEOUT,
                              memory_gib=6.0 if args.memory is None else args.memory, seed=args.seed,
                              speed=bool(args.speed), visibility=args.visibility,
                              stdout_visibility=args.stdout_visibility, course=course_version())
    out = build(args.out, config)
    print(f"wrote {out}: {len(numbers)} puzzles, {config.total:g} points in all (set the assignment's total to "
          f"{config.total:g}), results {config.visibility}; {course_label(config.course)}")
    if config.speed:
        most = sum(config.points[p.number] * SPEED_SHARE for p in all_puzzles(numbers) if p.speed_goal is not None)
        print(f"--speed: up to {most:g} speed points more, graded only where the autograder's machine has a CUDA "
              "GPU; elsewhere the results say so and count correctness only")
    if config.course.get("dirty"):
        print("warning: the checkout has uncommitted changes to the course; the zip holds them", file=sys.stderr)
    return 0
