"""Hidden sizes: sizes a puzzle's notebook does not list, for a Gradescope assignment to grade after the
due date (gradescope_build.py draws them once per zip, from a seed the instructor's build fixes).

The catalog lists each puzzle's sizes (`Puzzle.sizes`: the canonical one, then variations its statement
allows); no puzzle states its rules as such. So a hidden size is one listed size (its blocks, strides,
scalars and config values kept) with its problem sizes drawn afresh, keeping every rule the listed sizes
all obey:
- only the names the spec's shapes use are redrawn (blocks, strides, scalars, unused sizes are kept),
  each within the range the listed sizes span;
- a size that is a power of two in every listed size stays one; otherwise it stays a multiple of the
  greatest common divisor of its listed values (puzzle 12's MID of 64, puzzle 18's K of 8);
- two sizes equal in every listed size stay equal (puzzle 1's B0 = N0), a size that divides or does not
  exceed another in every listed size still does (puzzle 18's G divides K, puzzle 10's KH <= H);
- with strided inputs (puzzles 19, 23), no size grows past the listed one it starts from (the strides
  were chosen for it).
A drawn size is then checked: the spec builds its inputs, and the puzzle's reference kernel passes at it
(a rule the listed sizes do not show cannot slip through). A puzzle whose sizes are lists of tensors
(puzzle 21) has none.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from collections.abc import Callable

from puzzles.course.puzzle import Puzzle, Sizes

ATTEMPTS = 200  # candidates drawn per hidden size before giving up on it


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def shape_names(p: Puzzle) -> set[str]:
    """The size names the spec's tensor shapes use ("N1 N0", "K//8 N")."""
    inputs, out = p.parsed_spec.signature()
    return {name for t in [*inputs, out] for dim in t.dims for name in re.findall(r"[A-Za-z_]\w*", dim)}


def _int_keys(p: Puzzle) -> list[str]:
    return [k for k in p.canonical if all(type(s.get(k)) is int for s in p.sizes)]


def redrawn(p: Puzzle) -> list[str]:
    """The sizes a hidden size draws afresh: problem sizes named by the spec's shapes that vary between
    the listed sizes, never a block or a stride."""
    strides = {name for names in p.strided_inputs.values() for name in names}
    names = shape_names(p)
    return [k for k in _int_keys(p) if k in names and not k.startswith("B") and k not in strides
            and len({s[k] for s in p.sizes}) > 1]


def obeys_listed_rules(p: Puzzle, sizes: Sizes) -> bool:
    """Whether `sizes` keeps every equality, order and divisibility that all of the puzzle's listed sizes share."""
    keys = _int_keys(p)
    for a in keys:
        for b in keys:
            if a == b:
                continue
            if all(s[a] == s[b] for s in p.sizes) and sizes[a] != sizes[b]:
                return False
            if all(s[a] <= s[b] for s in p.sizes) and sizes[a] > sizes[b]:
                return False
            if all(s[a] > 0 and s[b] % s[a] == 0 for s in p.sizes) and (sizes[a] <= 0 or sizes[b] % sizes[a]):
                return False
    return True


def candidate(p: Puzzle, rng: random.Random) -> Sizes:
    """One listed size with its problem sizes drawn afresh (before the checks of `obeys_listed_rules`)."""
    template = dict(rng.choice(p.sizes))
    ties = {k: [t for t in _int_keys(p) if t != k and all(s[t] == s[k] for s in p.sizes)] for k in redrawn(p)}
    for key in redrawn(p):
        values = [s[key] for s in p.sizes]
        low, high = min(values), max(values)
        if p.strided_inputs:
            high = min(high, template[key])
        if all(_is_power_of_two(v) for v in values):
            choices = [1 << e for e in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << e <= high]
        else:
            step = math.gcd(*values)
            choices = list(range(-(-low // step) * step, high + 1, step))
        value = rng.choice(choices) if choices else template[key]
        template[key] = value
        for tied in ties[key]:
            template[tied] = value
    return template


def passes_reference(p: Puzzle, sizes: Sizes) -> bool:
    """The puzzle's reference kernel passes at these sizes, its spec builds their inputs (interpreter, CPU)."""
    from puzzles.grading import test

    only = dataclasses.replace(p, sizes=(sizes,))
    try:
        return test(p.reference(), p.spec, puzzle=only, quiet=True, compile_check=False, seed=1).passed
    except Exception:  # noqa: BLE001 - a size the spec cannot even build is simply not one
        return False


def draw(p: Puzzle, seed: int, count: int = 2, check: Callable[[Puzzle, Sizes], bool] = passes_reference,
         ) -> list[Sizes]:
    """Up to `count` hidden sizes for the puzzle, the same for the same seed; fewer where the rules leave
    fewer (none for puzzle 21, whose sizes are lists of tensors)."""
    if p.tensor_lists is not None or not redrawn(p) or count <= 0:
        return []
    rng = random.Random(f"{seed}:{p.number}")
    found: list[Sizes] = []
    for _ in range(ATTEMPTS):
        if len(found) == count:
            break
        sizes = candidate(p, rng)
        if sizes in p.sizes or sizes in found or not obeys_listed_rules(p, sizes):
            continue
        if check(p, sizes):
            found.append(sizes)
    return found


def with_sizes(p: Puzzle, sizes: list[Sizes]) -> Puzzle:
    """The puzzle graded at these sizes instead of its listed ones (the first takes the canonical's place)."""
    return dataclasses.replace(p, sizes=tuple(dict(s) for s in sizes))
