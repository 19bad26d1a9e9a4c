"""Operation rules (puzzle 15 forbids `tl.dot`): what the kernel really calls, not what its text says.

A rule read from the kernel's own source misses a call from a `@triton.jit` helper and any alias
(`from triton.language import dot as mm`, `mm = tl.dot`, `import triton.language as T; T.dot`).
So every call in the kernel and in each jitted function it reaches is resolved to the object it
names, through that function's own globals and closure (and its simple local aliases), and compared
by identity with `triton.language`'s function. The compile check looks at the Triton IR as well
(puzzles/running/compile_check.py), which catches what no name resolution can.
"""

from __future__ import annotations

import ast
import inspect
import linecache
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from puzzles.running.errors import KernelError
from puzzles.running.kernel import KernelHandle, own_jit_function

_UNRESOLVED = object()


@dataclass
class ForbiddenCall:
    """One call of a ruled-out function: in which jitted function, at which file line, under which name."""

    name: str  # the triton.language function, e.g. "dot"
    function: str  # the jitted function that calls it
    written: str  # how the call is written: "tl.dot", "mm", "T.dot"
    line: int
    filename: str
    path: tuple[str, ...]  # the functions from the kernel down to `function`


def forbidden_calls(kernel: Any, names: tuple[str, ...]) -> list[ForbiddenCall]:
    """Every call to one of `names` (functions of triton.language) that the kernel (or its `KernelHandle`)
    can reach."""
    import triton.language as tl

    handle = KernelHandle.of(kernel)
    banned = {id(getattr(tl, n)): n for n in names if hasattr(tl, n)}
    found: list[ForbiddenCall] = []
    root = handle.fn
    if root is None or not banned:
        return found
    seen: set[Any] = set()
    queue: list[tuple[Callable[..., Any], tuple[str, ...]]] = [(root, (root.__name__,))]
    while queue:
        fn, path = queue.pop(0)
        if fn.__code__ in seen:
            continue
        seen.add(fn.__code__)
        for node, target, line in _calls(fn, handle):
            if id(target) in banned:
                found.append(ForbiddenCall(banned[id(target)], fn.__name__, ast.unparse(node.func), line,
                                           fn.__code__.co_filename, path))
                continue
            inner = own_jit_function(target)
            if inner is not None:
                queue.append((inner, (*path, inner.__name__)))
    return found


# Python that tells Triton's interpreter from its compiler: reflection on objects, and what only one
# of them has (a block's `handle` holds numpy data in the interpreter, an IR value in the compiler).
PROBING_BUILTINS = frozenset({"hasattr", "getattr", "setattr", "delattr", "isinstance", "issubclass", "type",
                              "vars", "dir", "id", "globals", "locals", "eval", "exec", "compile", "open",
                              "__import__", "callable", "repr", "str", "format", "ascii", "hash", "super"})
# Attributes that open an object up: dunders, a block's handle, frames, code, generators, tracebacks.
INSIDES = ("__", "gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_")
# What a kernel reads from modules (Gluon's language too); anything else is the host process's state.
ALLOWED_MODULES = ("triton.language", "triton.experimental.gluon.language", "math")


def _own_functions(handle: KernelHandle) -> Iterator[tuple[Callable[..., Any], tuple[str, ...]]]:
    """The kernel's function and every @triton.jit helper of the learner's it calls, with the path of
    functions from the kernel down to each."""
    root = handle.fn
    if root is None:
        return
    seen: set[Any] = set()
    queue: list[tuple[Callable[..., Any], tuple[str, ...]]] = [(root, (root.__name__,))]
    while queue:
        fn, path = queue.pop(0)
        if fn.__code__ in seen or (fn.__module__ or "").startswith("puzzles."):  # the course's own helpers
            continue
        seen.add(fn.__code__)
        yield fn, path
        for _, target, _ in _calls(fn, handle):
            inner = own_jit_function(target)
            if inner is not None:
                queue.append((inner, (*path, inner.__name__)))


# How a kernel names a 16-bit float type: tl.float16, tl.bfloat16, tl.half, "fp16", "bf16" (in code, not comments).
_SIXTEEN_BIT_NAMES = frozenset({"float16", "bfloat16", "half", "fp16", "bf16"})


def mentions_16_bit(handle: KernelHandle) -> bool:
    """Whether the kernel or a @triton.jit helper of the learner's it reaches names a 16-bit float type in its
    code (a conversion, an accumulator, a pointer cast; not a comment or a docstring): then a float16 or
    bfloat16 rounding can be what is wrong."""
    for fn, _ in _own_functions(handle):
        source = handle.source(fn)
        if source is None or source.tree is None:
            continue
        for node in ast.walk(source.tree):
            named = (node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name)
                     else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None)
            if named in _SIXTEEN_BIT_NAMES:
                return True
    return False


def _module_name(value: Any) -> str | None:
    return value.__name__ if inspect.ismodule(value) else None


def _probe(node: ast.AST, scope: dict[str, Any]) -> str | None:
    """Why `node` lets the kernel tell the interpreter from the compiler (None when it does not)."""
    if isinstance(node, ast.Attribute) and (node.attr == "handle" or node.attr.startswith(INSIDES)):
        return f"reads `.{node.attr}`, a Python object's insides"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PROBING_BUILTINS \
            and node.func.id not in scope:
        return f"calls Python's `{node.func.id}`"
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        target = _resolve(node.func, scope)
        if (inspect.isfunction(target) or inspect.ismethod(target)) and \
                not (target.__module__ or "").startswith(("triton.", "puzzles.", "math")):
            return f"calls `{ast.unparse(node.func)}`, a plain Python function (put @triton.jit on it)"
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        owner = _module_name(_resolve(node.value, scope))
        if owner is not None and not owner.startswith(ALLOWED_MODULES):
            value = _resolve(node, scope)
            inner = _module_name(value)
            # A @triton.jit helper or a tl.constexpr of the learner's own module is compiled like one of the
            # kernel's globals (`helpers.combine(x)`, `helpers.BLOCK`): the compiler reads both through a module.
            if own_jit_function(value) is not None or _is_constexpr(value):
                return None
            if inner is None or not inner.startswith(ALLOWED_MODULES):  # `triton.language` through `triton` is fine
                if callable(value) and inner is None:
                    return f"uses `{owner}.{node.attr}`, Python outside triton.language"
                return f"reads `{owner}.{node.attr}`, state of the Python process"
    if isinstance(node, ast.Compare):
        return _compares_objects(node, scope)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "imports a module"
    return None


def _compares_objects(node: ast.Compare, scope: dict[str, Any]) -> str | None:
    """`tl.load is not tl.core.load`: the interpreter swaps triton.language's functions while it runs,
    so comparing functions, classes or modules (by identity, equality or membership) tells it apart."""
    operands = [node.left, *node.comparators]
    if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and \
            not any(isinstance(o, ast.Constant) and o.value is None for o in operands):  # `p is None` is fine
        return "compares objects by identity (`is`)"
    for operand in operands:
        for part in operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]:
            value = _resolve(part, scope) if isinstance(part, (ast.Name, ast.Attribute)) else _UNRESOLVED
            if value is not _UNRESOLVED and (inspect.ismodule(value) or inspect.isclass(value)
                                             or inspect.isroutine(value) or hasattr(value, "fn")):
                return f"compares `{ast.unparse(part)}`, a Python function, class or module"
    return None


def interpreter_probe_error(kernel: Any) -> KernelError | None:
    """The first place where the kernel (or a helper of its own) inspects Python objects or the
    process: under Triton's interpreter a kernel runs as Python and can tell it is not compiled, so
    what the interpreter ran says nothing of what a GPU would run."""
    handle = KernelHandle.of(kernel)
    for fn, path in _own_functions(handle):
        parsed = _parsed(fn, handle)
        if parsed is None:
            continue
        nodes, scope, first = parsed
        for node in nodes:
            why = _probe(node, scope)
            if why is None:
                continue
            line = first + node.lineno - 1
            where = fn.__name__ if len(path) == 1 else f"{fn.__name__} (called from {' -> '.join(path[:-1])})"
            filename = fn.__code__.co_filename
            text = ast.unparse(node)
            shown = "" if f"`{text}`" in why else f" (`{text}`)"
            return KernelError(
                "compile", f"runs in the interpreter but a GPU would not run the same code: {where} {why}"
                f"{shown}. Under the interpreter a kernel is Python and can tell it is not "
                "compiled, so the interpreter's results say nothing of a GPU's: write the kernel with "
                "triton.language only (tl.where for a choice of values, an `if` on sizes or constexprs)",
                line, linecache.getline(filename, line), filename)
    return None


def mentions_bfloat16(kernel: Any) -> bool:
    """Whether the kernel or a @triton.jit helper of its own names bfloat16 (`tl.bfloat16`, `"bf16"`): a kernel
    that computes in it, as far as its source tells."""
    handle = kernel if isinstance(kernel, KernelHandle) else KernelHandle.of(kernel)
    for fn, _ in _own_functions(handle):
        source = handle.source(fn)
        if source is not None and ("bfloat16" in source.text or "bf16" in source.text):
            return True
    return False


def forbidden_call_error(kernel: Any, names: tuple[str, ...], puzzle_number: int) -> KernelError | None:
    """The first ruled-out call the kernel makes, as an error at the learner's line."""
    calls = forbidden_calls(kernel, names)
    if not calls:
        return None
    first = calls[0]
    via = f" as `{first.written}`" if first.written != f"tl.{first.name}" else ""
    where = first.function if len(first.path) == 1 else f"{first.function} (called from {' -> '.join(first.path[:-1])})"
    return KernelError("rule", f"Puzzle {puzzle_number} asks you not to use tl.{first.name} (its statement says why), "
                       f"and {where} calls it{via}", first.line, linecache.getline(first.filename, first.line),
                       first.filename)


def feature_call_error(kernel: Any, name: str, missing: str) -> KernelError | None:
    """Where the installed Triton's interpreter lacks tl.`name` (`missing` says which Triton has it): the kernel's
    first call of it, as a setup error at the learner's line; None where the kernel never calls it."""
    calls = forbidden_calls(kernel, (name,))
    if not calls:
        return None
    first = calls[0]
    return KernelError("setup", f"{first.function} calls {first.written}: {missing}. Or do without it: every "
                       "supported Triton runs the puzzle's own path (its hints)", first.line,
                       linecache.getline(first.filename, first.line), first.filename)


def _calls(fn: Callable[..., Any], handle: KernelHandle) -> Iterator[tuple[ast.Call, Any, int]]:
    """(call, the object it calls or _UNRESOLVED, file line) for each call in fn's body."""
    parsed = _parsed(fn, handle)
    if parsed is None:
        return  # no source to read: the result is still graded (and the compile check reads the IR)
    nodes, scope, first = parsed
    for node in nodes:
        if isinstance(node, ast.Call):
            yield node, _resolve(node.func, scope), first + node.lineno - 1


def _parsed(fn: Callable[..., Any], handle: KernelHandle) -> tuple[list[ast.AST], dict[str, Any], int] | None:
    """Every node of fn's body, the names it can read (its globals, closure and simple local
    aliases) and the file line of its first line; None without source. The source is the handle's,
    read once for every rule that looks at it."""
    source = handle.source(fn)
    if source is None or source.tree is None:
        return None
    tree, first = source.tree, source.first_line
    scope: dict[str, Any] = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=False):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    # A local alias (`mm = tl.dot`, then `mm(a, b)`): a name assigned once, to something resolvable.
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else tree.body
    nodes = [node for stmt in body for node in ast.walk(stmt)]  # not the decorators: they are not the kernel's
    assigned: dict[str, list[ast.expr]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    for name, values in assigned.items():
        value = _resolve(values[0], scope) if len(values) == 1 else _UNRESOLVED
        if value is not _UNRESOLVED and callable(value):
            scope[name] = value
        else:
            scope.pop(name, None)  # a local variable shadows any global of its name
    return nodes, scope, first


def _resolve(expr: ast.expr, scope: dict[str, Any]) -> Any:
    """The object a name or a dotted name stands for in `scope`, or _UNRESOLVED."""
    if isinstance(expr, ast.Name):
        return scope.get(expr.id, _UNRESOLVED)
    if isinstance(expr, ast.Attribute):
        base = _resolve(expr.value, scope)
        if base is _UNRESOLVED:
            return _UNRESOLVED
        try:
            return inspect.getattr_static(base, expr.attr) if not inspect.ismodule(base) else getattr(base, expr.attr)
        except AttributeError:
            return _UNRESOLVED
    return _UNRESOLVED


def _is_constexpr(value: Any) -> bool:
    import triton.language as tl

    return isinstance(value, tl.constexpr)


# Python operators and builtins that Triton's compiler turns into element-wise operations on blocks, while
# its interpreter runs them as Python on whole blocks: the same line is right on a GPU and wrong here.
_ELEMENTWISE_BUILTINS = {"max": "tl.maximum", "min": "tl.minimum"}
_BOOL_OPERATORS = {ast.And: ("and", "&"), ast.Or: ("or", "|")}


def python_on_blocks_notes(kernel: Any) -> list[str]:
    """A note for each line of the kernel (or a helper of its own) that applies Python's `and`/`or` (outside an
    `if` or `while` test) or its `max`/`min` to what may be blocks."""
    notes: list[str] = []
    handle = KernelHandle.of(kernel)
    for fn, _ in _own_functions(handle):
        parsed = _parsed(fn, handle)
        if parsed is None:
            continue
        nodes, scope, first = parsed
        constants = {name for name, kind in getattr(fn, "__annotations__", {}).items() if "constexpr" in str(kind)}
        tested = {id(inner) for node in nodes if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert))
                  for inner in ast.walk(node.test)}

        def constant(expr: ast.expr) -> bool:
            return isinstance(expr, ast.Constant) or (isinstance(expr, ast.Name) and expr.id in constants)

        for node in nodes:
            text = _short_source(node)
            if isinstance(node, ast.BoolOp) and id(node) not in tested and not all(map(constant, node.values)):
                word, symbol = _BOOL_OPERATORS[type(node.op)]
                notes.append(f"line {first + node.lineno - 1}: `{text}` uses Python's `{word}`, which a GPU compiles "
                             "element by element but Triton's interpreter (which ran the kernel here) applies to "
                             f"whole blocks, keeping one of them: combine masks with `{symbol}`, each comparison in "
                             "brackets")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in
                  _ELEMENTWISE_BUILTINS and node.func.id not in scope and len(node.args) >= 2
                  and not all(map(constant, node.args))):
                instead = _ELEMENTWISE_BUILTINS[node.func.id]
                notes.append(f"line {first + node.lineno - 1}: `{text}` calls Python's `{node.func.id}`, which a GPU "
                             f"compiles as {instead}, element by element, but Triton's interpreter (which ran the "
                             f"kernel here) compares whole blocks and returns one of them: write {instead}(a, b)")
    return list(dict.fromkeys(notes))


def _short_source(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 1] + "…"
