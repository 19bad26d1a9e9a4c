"""The course's requirements files read without pip: `-r` includes followed, `python_version` markers
evaluated for a given Python (a pin with no wheel for 3.10 has a second line for it).

The doctor compares the installed packages with the pins for the running Python; the suite
(tests/cli/test_requirements.py) resolves the pins for every Python the course supports, including those
this machine does not have, which is why markers are evaluated here rather than by pip (pip evaluates
them for the Python it runs under, whatever `--python-version` says).
"""

from __future__ import annotations

import operator
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}
_CLAUSE = re.compile(r"""^\s*python_(?:full_)?version\s*(<=|>=|==|!=|<|>)\s*["']([\d.]+)["']\s*$""")


@dataclass(frozen=True)
class Requirement:
    """One requirement line: `name==version` (version "" when not pinned), or another line kept whole
    (`-e .`); `marker` is the text after `;`."""

    line: str
    name: str
    version: str
    marker: str


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def marker_holds(marker: str, python: tuple[int, ...]) -> bool:
    """Whether `python_version OP "X.Y"` clauses joined by `and` hold for `python` (major, minor[, micro]).
    Any other marker is refused: the course's files use only these."""
    if not marker.strip():
        return True
    for clause in re.split(r"\band\b", marker):
        match = _CLAUSE.match(clause)
        if match is None:
            raise ValueError(f"unsupported marker {marker!r}: the course's requirements use python_version only")
        op, wanted = match.groups()
        width = len(_version(wanted))
        if not _COMPARE[op](tuple(python[:width]), _version(wanted)):
            return False
    return True


def read(path: Path, python: tuple[int, ...] | None = None) -> list[Requirement]:
    """The requirements of `path` and the files it includes (`-r`), in order, that apply to `python`
    (default: this one)."""
    python = tuple(sys.version_info[:3]) if python is None else python
    found: list[Requirement] = []
    for raw in path.read_text().splitlines():
        text = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not text:
            continue
        if text.startswith(("-r ", "--requirement ")):
            found += read(path.parent / text.split(None, 1)[1].strip(), python)
            continue
        spec, _, marker = text.partition(";")
        if not marker_holds(marker, python):
            continue
        match = re.match(r"([A-Za-z0-9_.\-]+)\s*(?:==\s*([^\s;]+))?", spec.strip())
        if spec.startswith("-") or match is None:
            found.append(Requirement(spec.strip(), "", "", marker.strip()))
        else:
            found.append(Requirement(spec.strip(), match.group(1).lower(), match.group(2) or "", marker.strip()))
    return found


def pins(path: Path, python: tuple[int, ...] | None = None) -> dict[str, str]:
    """Package -> the version pinned with == for `python` (default: this one)."""
    return {r.name: r.version for r in read(path, python) if r.name and r.version}
