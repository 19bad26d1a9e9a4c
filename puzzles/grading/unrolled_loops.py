"""Which lines of a kernel sit in loops the compiler unrolls (`tl.static_range`), and how many times over: their
loads are issued together, not one round after another, so the efficiency model's rounds of dependent loads
(efficiency.py) count a line's loads divided by this. Read from the kernel's source, the trip counts evaluated with
the sizes it runs at; a bound that cannot be evaluated (a value computed in the kernel) counts as 1."""

from __future__ import annotations

import ast
import operator
from typing import Any

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
FUNCTIONS = {"min": min, "max": max}


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


def static_trips(loop: ast.For, sizes: dict[str, Any]) -> int | None:
    """A `for ... in tl.static_range(...)` loop's trip count, or None (another loop, or bounds not known)."""
    call = loop.iter
    if not (isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) == "static_range"):
        return None
    try:
        bounds = [value_of(arg, sizes) for arg in call.args]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return len(range(*bounds)) if 1 <= len(bounds) <= 3 else None


def value_of(node: ast.AST, sizes: dict[str, Any]) -> int:
    """An integer expression of literals, sizes, + - * //, min and max."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return int(sizes[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](value_of(node.left, sizes), value_of(node.right, sizes))
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in FUNCTIONS:
        return FUNCTIONS[node.func.id](*(value_of(arg, sizes) for arg in node.args))
    raise ValueError(f"not evaluated: {ast.dump(node)[:60]}")
