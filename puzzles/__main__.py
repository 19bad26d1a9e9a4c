"""Command line: `python -m puzzles {grade,gradescope,doctor,notebooks,workspace,diagrams}`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puzzles", description="Triton puzzles: grading and upkeep.")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade the kernels found in notebooks or Python files")
    g.add_argument("paths", nargs="*", help="notebooks, .py files or folders (default: notebooks/)")
    g.add_argument("--puzzle", type=int, action="append", help="only this puzzle number (repeatable)")
    g.add_argument("--json", action="store_true", help="print one JSON record per puzzle")
    g.add_argument("--viz", type=Path, metavar="DIR", help="write access pictures (PNG) under DIR")
    g.add_argument("--timeout", type=float, help="seconds per size before a kernel is stopped "
                   "(default 20; 5 for a class)")
    c = g.add_argument_group("grading a class (a folder of student folders, several folders, or --per-file)")
    c.add_argument("--out", type=Path, metavar="PATH",
                   help="write the gradebook under this folder (with --student: the student's JSON file)")
    c.add_argument("--jobs", type=int, help="students graded at once (default: the number of cores)")
    c.add_argument("--seed", type=int, help="the inputs' seed (default: random, recorded in the gradebook)")
    c.add_argument("--per-file", action="store_true", help="one student per file of the folders named")
    c.add_argument("--student", type=Path, metavar="DIR", help="grade one student (a job of a batch system)")
    c.add_argument("--merge", action="store_true",
                   help="build the gradebook (--out) from per-student JSON files or folders of them")
    c.add_argument("--isolate", action="store_true",
                   help="grade one learner's files in a sandboxed process, as a class is graded")
    c.add_argument("--speed", action="store_true",
                   help="on a GPU: also time each passing kernel against its puzzle's speed goal and add speed "
                        "points to the gradebook (correctness points unchanged); on a CPU it says so and grades "
                        "correctness only")
    c.add_argument("--memory", type=float, help="memory limit per student in GiB, resident in all its grading "
                   "processes (default 6; 0: none); without CUDA also each process's address space")

    s = sub.add_parser("gradescope", help="build a Gradescope autograder (a zip to upload) that grades each "
                       "submission as the class command grades one student")
    try:  # its options come from the course (torch): `doctor` must still run where torch is missing
        from puzzles.classroom.gradescope_build import add_arguments as add_gradescope_arguments
    except ImportError:
        pass  # running `gradescope` then imports it again and says what this Python lacks
    else:
        add_gradescope_arguments(s)

    sub.add_parser("doctor", help="check the installation against the pins and run a tiny kernel")

    n = sub.add_parser("notebooks", help="rebuild notebooks/ from the catalog (or --check for drift)")
    n.add_argument("--check", action="store_true", help="exit 1 if a committed notebook differs from the catalog")
    n.add_argument("--force", action="store_true", help="also overwrite notebooks that were edited by hand")

    w = sub.add_parser("workspace", help="make my-notebooks/, your copy of the notebooks (never overwritten)")
    w.add_argument("--update", action="store_true",
                   help="merge a newer course into your copies, keeping your kernels and grading cells")
    w.add_argument("--dir", type=Path, help="the workspace folder (default: my-notebooks/)")

    d = sub.add_parser("diagrams", help="redraw assets/ from the puzzles' shapes")
    d.add_argument("--force", action="store_true",
                   help="also redraw the PNGs whose SVG did not change (after a change to how PNGs are drawn)")

    args = parser.parse_args(argv)
    if args.command == "grade":
        from puzzles.cli import grade
        from puzzles.learner.progress import scoreboard
        from puzzles.submissions.grade import grade as grade_files

        if args.student or args.merge or args.per_file or is_class_folder(args.paths) or (args.out and args.paths):
            from puzzles.classroom import command as class_command

            return class_command.main(args)
        try:
            paths = grade.expand(args.paths) if args.paths else grade.default_paths()
            selected = grade.select(args.puzzle)
        except (FileNotFoundError, KeyError) as err:
            print(f"error: {err.args[0]}", file=sys.stderr)
            return 2
        timeout = 20.0 if args.timeout is None else args.timeout
        if args.isolate:
            from puzzles.classroom import command as class_command

            grades = class_command.isolated_grades(paths, selected, args, timeout)
        else:
            grades = grade_files(paths, selected, timeout=timeout, viz_dir=args.viz, seed=args.seed)
        if args.json:
            for g_ in grades:
                print(json.dumps(g_.record()))
        else:
            print(scoreboard(grades))
        attempted = [g_ for g_ in grades if g_.status != "not attempted"]
        return 0 if attempted and all(g_.status == "passed" for g_ in attempted) else 1
    if args.command == "gradescope":
        from puzzles.classroom import gradescope_build

        return gradescope_build.main(args)
    if args.command == "doctor":
        from puzzles.cli import doctor

        return doctor.main()
    if args.command == "notebooks":
        from puzzles.course import notebooks

        if args.check:
            try:
                stale = notebooks.drift()
            except notebooks.MissingDiagram as err:
                print(err)
                return 1
            for name in stale:
                path = notebooks.NOTEBOOK_DIR / name
                edited = path.exists() and notebooks.edited(path)
                hand = " (edited by hand: learners work in my-notebooks/)" if edited else ""
                print(f"out of date: notebooks/{name}{hand}")
            if stale:
                print("run `python -m puzzles notebooks` to rebuild them from the catalog")
            return 1 if stale else 0
        try:
            written, refused = notebooks.write(force=args.force)
        except notebooks.MissingDiagram as err:  # written before the diagram was drawn: nothing half-written
            print(err, file=sys.stderr)
            return 1
        for path in written:
            print(f"wrote {path}")
        for path in refused:
            print(f"refused: {path} was edited by hand (it may hold a learner's answers) and was not rewritten",
                  file=sys.stderr)
        if refused:
            print("Learners work in my-notebooks/ (`make lab` makes it; `python -m puzzles workspace` alone makes "
                  "it without opening JupyterLab): copy your work there first. To discard the edits and rebuild: "
                  "`python -m puzzles notebooks --force`.", file=sys.stderr)
        return 1 if refused else 0
    if args.command == "workspace":
        from puzzles.learner import workspace

        return workspace.main(args.dir, merge_newer=args.update)
    if args.command == "diagrams":
        from puzzles import diagrams

        return diagrams.main(["--force"] if args.force else [])
    return 2


def is_class_folder(paths: list[str]) -> bool:
    """Several folders (one per student), or one folder of student folders."""
    folders = [Path(p) for p in paths if Path(p).is_dir()]
    if len(folders) > 1:
        return True
    if len(folders) == 1 and len(paths) == 1:
        from puzzles.classroom.roster import is_roster

        return is_roster(folders[0])
    return False


def run(argv: list[str] | None = None) -> int:
    """`main`, with a missing third-party package reported as this Python lacking it, not a traceback."""
    try:
        return main(argv)
    except ModuleNotFoundError as err:
        if (err.name or "puzzles").split(".")[0] in ("puzzles", "solutions"):
            raise
        from puzzles.running.compat import wrong_environment_message

        print(wrong_environment_message(err), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(run())
