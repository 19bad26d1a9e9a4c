"""What a compile error means for the learner: the compiler's message at the learner's line, and
what to write instead for the constructs only the interpreter accepts.

Runs in the compiler process (puzzles/running/compile_check/worker.py loads it by path): standard library only.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

from puzzles.running.compiler_failures import WARP_SPECIALIZE_ADVICE, warp_specialized_loop_line

# A note, not a failure: the same kernel passes on a GPU where the puzzle's tolerance allows TF32 (the
# matmul puzzles); the grader keeps it only where the tolerance is tighter (checking.Check).
TF32_NOTE = ("on a GPU with tensor cores (sm_80 and later) a tl.dot of float32 blocks in this kernel runs in TF32 "
             "(10 bits of mantissa, about 3 decimal digits), where the interpreter computes float32: this "
             "puzzle's tolerance is tighter than that, so it may fail there; tl.dot(a, b, input_precision=\"ieee\") "
             "keeps float32 (or sum with tl.sum(a[:, :, None] * b[None, :, :], axis=1))")

# A note, not a failure: the matmul puzzles' tolerances allow TF32 (10 bits of mantissa, as float16 has), so a
# dot summed in float16 can pass them where the spec sums in float32.
F16_ACCUMULATOR_NOTE = ("a tl.dot in this kernel sums its products in float16 (out_dtype=tl.float16): every addition "
                        "rounds to 11 bits and the error grows with the length of the sum, where the spec sums in "
                        "float32; accumulate in float32 (tl.dot's default out_dtype) and convert once, when storing")


def forbidden_in_ir(found: list[tuple[str, str, int]], built: dict[str, Any]) -> dict:  # pragma: no cover
    """The first forbidden op as an error at the learner's line (in the function that holds it)."""
    name, filename, line = found[0]
    entries = [e for e in built["by_src"].values() if e["filename"] == filename] or [built["root_entry"]]
    entry = next((e for e in entries if e["first_line"] <= line < e["first_line"] + len(e["source"].splitlines())),
                 built["root_entry"])
    root = built["root_entry"]["name"]
    where = entry["name"] if entry is built["root_entry"] else f"{entry['name']} (called from {root})"
    return {"message": f"asks you not to use tl.{name} (its statement says why), and {where} does: the compiled "
                       f"kernel has a tt.{name}", "function": entry["name"], "offset": line - entry["def_line"],
            "rule": True}


def compilation_error(exc: Any, built: dict[str, Any]) -> dict:  # pragma: no cover - runs in the worker
    """The compiler's own message and the file line it points at: the deepest point of the error
    that is in the learner's code (a helper of theirs, or the kernel), not in Triton's library."""
    import re

    from triton.compiler.errors import CompilationError

    chain, cause = [], exc
    while isinstance(cause, CompilationError) and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__
    mine = [c for c in chain if c.src in built["by_src"]] or [exc]
    at = mine[-1]
    entry = built["by_src"].get(at.src, built["root_entry"])
    lineno = getattr(at.node, "lineno", None)
    line = entry["def_line"] + lineno - 1 if lineno is not None else None
    message = next((c.error_message for c in reversed(chain) if c.error_message), None)
    if not message and cause is not None:
        message = f"{type(cause).__name__}: {cause}"
    message = (message or type(exc).__name__).strip()
    # Name errors and the like arrive as repr() strings: show the inner text plainly.
    found = re.fullmatch(r"(\w+)\((['\"])(.*)\2\)", message, re.S)
    if found:
        message = f"{found.group(1)}: {found.group(3)}"
    message = " ".join(message.split())
    if message.startswith("NameError: Cannot access global variable"):
        message = message.split(" function.", 1)[0] + " function"  # the rest is about an escape hatch
    hint = hint_for(message, at.node, entry["source"], entry["globals"])
    if hint and _bare(message):
        message = hint  # Triton's own assertion says nothing a learner can act on
    elif hint:
        message = f"{message} ({hint})"
    elif _bare(message):  # not a construct we know: say at least that much (the line says where)
        message = ("Triton's compiler stopped on this line without a message (an internal assertion): the line "
                   "uses something the interpreter accepts but the compiler does not support")
    if entry is not built["root_entry"]:
        message += f" [in {entry['name']}, called from {built['root_entry']['name']}]"
    offset = line - entry["def_line"] if line is not None else None
    return {"message": message, "function": entry["name"], "offset": offset, "construct": bool(hint)}


def kernel_returns_a_value(entry: dict) -> dict | None:
    """The kernel's `return <value>`, as an error at its line: a launched kernel has nowhere to return it."""
    try:
        tree = ast.parse(textwrap.dedent(entry["source"]))
    except SyntaxError:
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Return) and node.value is not None:
            line = entry["first_line"] + node.lineno - 1
            return {"message": "a kernel cannot return a value (a launch has nowhere to put it): write the result "
                               "through a pointer with tl.store; a @triton.jit helper it calls may return values",
                    "function": entry["name"], "offset": line - entry["def_line"], "construct": True}
    return None


def warp_specialize_failed(entry: dict) -> dict | None:
    """A loop with warp_specialize=True whose MLIR pipeline failed (compiler_failures.py), as an error at the
    loop's line; None where the kernel asks for no warp specialization."""
    line = warp_specialized_loop_line(entry["source"], entry["first_line"])
    if line is None:
        return None
    return {"message": WARP_SPECIALIZE_ADVICE, "function": entry["name"], "offset": line - entry["def_line"],
            "construct": True}


def _bare(message: str) -> bool:
    """An error from inside Triton's front end that carries no text (a bare `assert`)."""
    return message.rstrip(": ") in ("AssertionError", "")


def _assigned_names(source: str) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# Python builtins a kernel may reach for that the compiler lacks (it knows range, min, max, print, int, float,
# len...), and what triton.language has instead.
PYTHON_BUILTINS_IN_TRITON = {"abs": "tl.abs(x)", "sum": "tl.sum(x, axis=...)",
                             "round": "tl.floor(x + 0.5) (halves up)"}


def hint_for(message: str, node: Any, source: str = "", scope: dict | None = None) -> str:
    """What to write instead, for the constructs that only the interpreter accepts (and for the front
    end's errors whose own text does not say what is wrong)."""
    if isinstance(node, ast.FunctionDef) or (message.startswith("StopIteration") and node is not None):
        return "a function defined inside the kernel is not supported: define it at module level with @triton.jit"
    if "Lambda" in message:
        return "a lambda is not supported in a kernel: use a @triton.jit function at module level"
    if "arange's arguments must be of type tl.constexpr" in message:
        return "start at a constant and shift: j + tl.arange(0, B1)"
    if message.startswith("NameError: Cannot access global variable"):
        name = message.split("global variable ", 1)[1].split()[0]
        if tuple((scope or {}).get(name, ())) == ("opaque", "function"):
            return (f"{name} is a plain Python function: a kernel calls only @triton.jit functions (and "
                    f"triton.language's); decorate {name} with @triton.jit")
        return (f"declare it `{name} = tl.constexpr(...)` at module level, or pass it as an argument; "
                "the interpreter reads any global, the compiler only constants")
    if "multiple values for argument 'pid_" in message:  # a fifth value lands in print_if's pid_0
        return "compiled, print_if prints at most four values: split them over two print_if calls"
    if "Loop-carried variable" in message:
        return _loop_carried_hint(message)
    if _bare(message) and node is not None and any(isinstance(n, ast.Subscript) for n in ast.walk(node)):
        # tl.tuple.__getitem__ asserts that a non-constant index is a slice, with no message.
        return ("a tuple indexed by a value the compiler does not know: a Triton tuple can only be indexed by a "
                "constant (`t[0]`) or by the variable of a `for i in tl.static_range(n)` loop, which the compiler "
                "unrolls; the variable of a `range` loop, or an index computed in the kernel, is only known when "
                "it runs")
    if message.startswith("unsupported tensor index"):
        return ("a block has no element access by position: pick an element with tl.sum(tl.where(offsets == i, x, "
                "0)), load it alone with tl.load(ptr + i), or add axes with x[:, None] / x[None, :]")
    if isinstance(node, ast.For) and "has no attribute 'func'" in message:
        return ("a loop in a kernel runs over range(...), tl.range(...) or tl.static_range(...): a block cannot "
                "be iterated element by element (work on the whole block, or loop over indices), and a tuple is "
                "walked with `for i in tl.static_range(len(t))` and t[i]")
    if message.startswith("unsupported AST node type: Break") or message.startswith(
            "unsupported AST node type: Continue"):
        return ("Triton kernels have no break or continue: give the loop the bound it needs, or guard the rest "
                "of the body with an if (or a mask)")
    if "Boolean value of Tensor with more than one value is ambiguous" in message:
        return ("an if or while condition must be one value, not a block: to choose per element, use "
                "tl.where(condition, a, b)")
    if message.startswith("NameError:") and message.endswith("is not defined") and \
            message.split()[1] in PYTHON_BUILTINS_IN_TRITON:
        name = message.split()[1]
        return (f"{name} is Python's builtin, which the interpreter runs and the compiler does not know: use "
                f"{PYTHON_BUILTINS_IN_TRITON[name]}")
    if message.startswith("NameError:") and message.endswith("is not defined") and _added_to(
            message.split()[1], node, source):
        name = message.split()[1]
        return (f"{name} is added to before it has a value: create it before the loop, e.g. {name} = "
                "tl.zeros([B0], dtype=tl.float32) for a running sum of B0 values")
    if message.startswith("NameError:") and message.endswith("is not defined") and \
            message.split()[1] in _assigned_names(source):
        name = message.split()[1]
        return (f"if {name} is assigned only inside an if or a loop, assign it before as well: the compiler "
                "needs a value on every path, the interpreter only on the one it runs")
    return ""



def _loop_carried_hint(message: str) -> str:
    """A variable the loop changes the type of: a number that becomes a block (give it the block's type
    first), a block whose shape changes (what is added to it has another shape: a reduction over the
    wrong axis), or a block whose dtype changes."""
    found = re.search(r"initial type (<\[(.*?)\], (\w+)>|\S+) but is re-assigned to <\[(.*?)\], (\w+)>", message)
    if found is None or found.group(2) is None:
        return "give it its final type before the loop, e.g. tl.zeros([B0], dtype=tl.float32) instead of 0.0"
    shape = lambda text: "[" + ", ".join(d.strip(" '") for d in text.split(",")) + "]"  # noqa: E731
    before, after = shape(found.group(2)), shape(found.group(4))
    if before != after:
        return (f"it changes shape in the loop, from {before} to {after}: what the loop assigns or adds to it has "
                "another shape than the block it starts as (a reduction over the wrong axis? tl.sum(x, axis=1) "
                "turns a B0 × B1 block into B0 values, one per row; axis=0 into B1 values, one per column)")
    start, became = found.group(3), found.group(5)
    if became in ("fp32", "fp64"):  # a float16 or integer accumulator that tl.dot or a float32 term widened
        return (f"it changes dtype in the loop, from {start} to {became}: start it as tl.zeros(..., "
                f"dtype=tl.{_DTYPES.get(became, became)}), and convert the sum once, when storing it")
    return (f"it changes dtype in the loop, from {start} to {became}: convert what the loop assigns to it "
            f"(.to(tl.{_DTYPES.get(start, start)})) so that it keeps the type it starts with")


_DTYPES = {"fp32": "float32", "fp64": "float64", "fp16": "float16", "bf16": "bfloat16"}


def _added_to(name: str, node: Any, source: str) -> bool:
    """True when the line of `node` (counted from the `def` line, below any decorator) adds to `name` in place
    (`acc += ...`)."""
    lines = source.splitlines()
    start = next((i for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
    lineno = getattr(node, "lineno", None)
    if lineno is None or not 0 <= start + lineno - 1 < len(lines):
        return False
    return re.match(rf"\s*{re.escape(name)}\s*[-+*/]=", lines[start + lineno - 1]) is not None
