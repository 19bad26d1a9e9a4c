"""Which lines of a kernel sit in loops the compiler unrolls (`tl.static_range`), and how many times over: their
loads are issued together, not one round after another, so the efficiency model's rounds of dependent loads
(efficiency.py) count a line's loads divided by this. Read from the kernel's source, the trip counts evaluated with
the sizes it runs at; a bound that cannot be evaluated (a value computed in the kernel) counts as 1.

`loop_trips`: how many times a program runs its deepest nest of loops the compiler keeps (`range`, `tl.range`)
at given sizes, where the bounds are sizes: what the model's issue term multiplies a loop body's instructions by."""

from __future__ import annotations

import ast
import operator
from typing import Any

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
             ast.Mod: operator.mod}
FUNCTIONS = {"min": min, "max": max, "cdiv": lambda a, b: -(-a // b)}


def unrolled_repeats(tree: ast.Module | None, first_line: int, sizes: dict[str, Any]) -> dict[int, int]:
    """file line -> how many times unrolled loops around it repeat it (only lines inside one, > 1), from the syntax
    tree of a function's dedented source starting at `first_line` (kernel_source.FunctionSource; None: it did not
    parse)."""
    if tree is None:
        return {}
    repeats: dict[int, int] = {}
    for node in ast.walk(tree):
        trips = static_trips(node, sizes) if isinstance(node, ast.For) else None
        if not trips or trips <= 1:
            continue
        for line in range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1):
            file_line = first_line + line - 1
            repeats[file_line] = repeats.get(file_line, 1) * trips
    return repeats


def loop_trips(tree: ast.Module | None, sizes: dict[str, Any]) -> int | None:
    """The most trips of a nest of kept loops (`for ... in range(...)` or `tl.range(...)`, the product of the
    nest's), evaluated at `sizes`: 1 without such loops; None where a bound is computed in the kernel (a program's
    own share of a split range), a loop is a `while`, or there is no tree."""
    if tree is None:
        return None
    known = dict(sizes)
    for node in ast.walk(tree):  # locals computed from the sizes alone (`full = T // B1 * B1`) are known too
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None)
        if isinstance(target, ast.Name):
            try:
                known[target.id] = value_of(node.value, known)
            except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError):
                known.pop(target.id, None)  # a value of the kernel's own: not a size
    try:
        return most_trips(tree.body, known)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def most_trips(body: list[ast.stmt], sizes: dict[str, Any]) -> int:
    most = 1
    for statement in body:
        if isinstance(statement, ast.While):
            raise ValueError("a while loop's trips are not known from the source")
        inner = [getattr(statement, field) for field in ("body", "orelse", "handlers", "finalbody")
                 if isinstance(getattr(statement, field, None), list)]
        deepest = max((most_trips(part, sizes) for part in inner), default=1)
        if isinstance(statement, ast.For):
            kept = kept_trips(statement, sizes)
            deepest *= kept if kept is not None else 1
        most = max(most, deepest)
    return most


def kept_trips(loop: ast.For, sizes: dict[str, Any]) -> int | None:
    """A `range` or `tl.range` loop's trip count (raises where a bound is not a size), None for a static_range
    loop (unrolled: its body is in the instruction count that many times already)."""
    name = called_name(loop.iter)
    if name == "static_range":
        return None
    if name != "range":
        raise ValueError("a loop over something other than a range")
    return range_trips(loop.iter, sizes)


def static_trips(loop: ast.For, sizes: dict[str, Any]) -> int | None:
    """A `for ... in tl.static_range(...)` loop's trip count, or None (another loop, or bounds not known)."""
    if called_name(loop.iter) != "static_range":
        return None
    try:
        return range_trips(loop.iter, sizes)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def range_trips(call: ast.Call, sizes: dict[str, Any]) -> int:
    """The trips of a `range(...)`-like call's 1 to 3 bounds evaluated at `sizes` (raises where one is not known)."""
    if not 1 <= len(call.args) <= 3:
        raise ValueError("not the bounds of a range")
    return len(range(*(value_of(arg, sizes) for arg in call.args)))


def called_name(node: ast.AST) -> str:
    """The name a call calls, its last part (`tl.static_range(...)` -> "static_range"); "" for anything else."""
    if not isinstance(node, ast.Call):
        return ""
    return getattr(node.func, "attr", getattr(node.func, "id", ""))


def value_of(node: ast.AST, sizes: dict[str, Any]) -> int:
    """An integer expression of literals, sizes, + - * // %, min, max and tl.cdiv."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return int(sizes[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](value_of(node.left, sizes), value_of(node.right, sizes))
    function = called_name(node)
    if function in FUNCTIONS:
        return FUNCTIONS[function](*(value_of(arg, sizes) for arg in node.args))
    raise ValueError(f"not evaluated: {ast.dump(node)[:60]}")
