"""What a kernel's body may name: an allowlist, resolved, checked on the source before the kernel runs.

Under Triton's interpreter a kernel is Python run in the grading process's child, with the file's globals and
Python's builtins. A denylist of names (`open`, `getattr`) misses the same object under another name
(`from builtins import open as OPEN`, `tl.core.builtins`, `().__class__`), so each name and attribute chain of
the kernel (and of every @triton.jit helper of the file it calls) is resolved to what it stands for and kept
only when it is one of:

- the function's parameters and its own variables (never holding a module);
- triton.language and its submodules (libdevice), `math`, and what they hold that is Triton's or math's:
  functions, classes, dtypes, constants;
- the file's constants (numbers, strings, `tl.constexpr`) and @triton.jit functions;
- a few builtins that compute (`range`, `min`, `max`, `int`, `float`, `len`, `print`...) and the course's
  `print_if`/`breakpoint_if`.

Anything else, a private or dunder attribute, a nested function, lambda, class, import, comprehension, an
assignment into an object, and a keyword starting with `_` (Triton's internal `_semantic`) is refused with
its line. Name lookups that find nothing are left to fail at run time (a NameError, not code).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import types
from collections.abc import Callable, Iterator
from typing import Any

from puzzles.running.errors import KernelError
from puzzles.running.kernel import KernelHandle, own_jit_function

KERNEL_BUILTINS = frozenset({"range", "min", "max", "int", "float", "bool", "len", "print", "abs", "tuple", "list",
                             "enumerate", "zip", "breakpoint", "True", "False", "None"})
MODULES = ("triton.language", "triton.experimental.gluon.language", "math")
# Attributes that open an object up: a block's handle, frames, code, generators, tracebacks, and what
# formats a string (`"{0.__globals__}".format(f)` reaches attributes by a name in a string).
INSIDES = ("gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_")
OPENING_ATTRIBUTES = frozenset({"handle", "format", "format_map", "mro", "fn", "src", "cache", "device_caches"})
REFUSED_NODES = {
    ast.Lambda: "a lambda", ast.FunctionDef: "a function defined inside the kernel",
    ast.AsyncFunctionDef: "a coroutine",
    ast.ClassDef: "a class", ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "`global`",
    ast.Nonlocal: "`nonlocal`", ast.Yield: "`yield`", ast.YieldFrom: "`yield from`", ast.Await: "`await`",
    ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.Delete: "`del`", ast.With: "`with`", ast.Try: "`try`",
    ast.NamedExpr: "the assignment expression `:=`",
}
HOW = ("a graded kernel may use only its parameters and variables, tl (triton.language) and math, the file's constants "
       "and @triton.jit functions, and range/min/max/int/float/len/print; nothing else of Python")
_MISSING = object()
CALL_OF_A_VALUE = "calls a value"


def course_helpers() -> tuple[Any, ...]:
    from puzzles.running.debug import breakpoint_if, print_if

    return print_if, breakpoint_if


def _module_allowed(module: types.ModuleType) -> bool:
    return module.__name__.startswith(MODULES)


def allowed_value(value: Any) -> bool:
    """A global of the kernel, or what an attribute chain from an allowed module reaches."""
    import triton.language as tl

    if value is None or isinstance(value, (bool, int, float, str, tl.constexpr, tl.dtype)):
        return True
    if isinstance(value, tuple):
        return all(allowed_value(v) for v in value)
    if inspect.ismodule(value):
        return _module_allowed(value)
    if any(value is helper for helper in course_helpers()):
        return True
    if own_jit_function(value) is not None:
        return True
    # Under the interpreter triton.language's @jit functions are InterpretedFunctions: their module is the function's.
    inner = getattr(value, "fn", None) if hasattr(value, "arg_names") else None
    module = getattr(inner if inner is not None else value, "__module__", None) or ""
    if module == "triton.runtime.interpreter" and callable(value):
        return is_patched_language(value)
    if inspect.isclass(value) or callable(value):
        return module.startswith(("triton.language", "triton.experimental.gluon.language", "math")) or \
            (module in ("builtins", "") and getattr(value, "__self__", None) is not None
             and inspect.ismodule(value.__self__) and value.__self__.__name__ == "math")
    return False


def is_patched_language(value: Any) -> bool:
    """The interpreter's stand-in for a triton.language function, where it is now: Triton 3.5's interpreter patches
    the language on every launch and never undoes it, so after a learner's own launch `tl.arange` is one of these."""
    import triton.language as tl

    return any(value is v for module in (tl, tl.core, tl.math) for v in vars(module).values())


class BodyRules:
    """One function's body against the allowlist; `helpers` collects the jitted functions it calls."""

    def __init__(self, fn: Callable[..., Any], tree: ast.FunctionDef) -> None:
        self.fn, self.tree = fn, tree
        self.globals: dict[str, Any] = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=False):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass
        args = tree.args
        self.local = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} | \
            {a.arg for a in (args.vararg, args.kwarg) if a} | \
            {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.helpers: list[Callable[..., Any]] = []

    def resolve(self, expr: ast.expr) -> Any:
        """What a global name or an attribute chain from one stands for (_MISSING: a local, or unknown)."""
        if isinstance(expr, ast.Name):
            if expr.id in self.local:
                return _MISSING
            if expr.id in self.globals:
                return self.globals[expr.id]
            return getattr(builtins, expr.id, _MISSING)
        if isinstance(expr, ast.Attribute):
            base = self.resolve(expr.value)
            if base is _MISSING or not inspect.ismodule(base):
                return _MISSING  # attributes of values (a block's .to, .shape) are checked by name only
            return getattr(base, expr.attr, _MISSING)
        return _MISSING

    def problems(self) -> Iterator[tuple[ast.AST, str]]:
        body = [node for stmt in self.tree.body for node in ast.walk(stmt)]
        parents = {id(child): node for node in body for child in ast.iter_child_nodes(node)}
        found = list(self._problems(body, parents))
        yield from (problem for problem in found if problem[1] is not CALL_OF_A_VALUE)
        for node, why in found:  # `getattr(tl, "dot")(a, b)`: name what it calls first, then the shape
            if why is CALL_OF_A_VALUE:
                yield node, f"calls `{ast.unparse(node.func)}`, which is not a function named in the file"

    def _problems(self, body: list[ast.AST], parents: dict[int, ast.AST]) -> Iterator[tuple[ast.AST, str]]:
        for node in body:
            kind = REFUSED_NODES.get(type(node))
            if kind is not None:
                yield node, f"{kind} is not allowed in a kernel"
            elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith("_"):
                yield node, f"passes `{node.arg}=`, a keyword of Triton's insides"
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                root = node
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(node, ast.Attribute) or not (isinstance(root, ast.Name) and root.id in self.local):
                    yield node, f"assigns into `{ast.unparse(node)}`, an object outside the kernel"
            elif isinstance(node, ast.Attribute):
                yield from self._attribute(node, parents)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                yield from self._name(node, parents)
            elif isinstance(node, ast.Call) and not isinstance(node.func, (ast.Name, ast.Attribute)):
                yield node, CALL_OF_A_VALUE

    def _name(self, node: ast.Name, parents: dict[int, ast.AST]) -> Iterator[tuple[ast.AST, str]]:
        name = node.id
        if name.startswith("__"):
            yield node, f"uses `{name}`, Python's insides"
            return
        if name in self.local:
            return
        if name in self.globals:
            value = self.globals[name]
            if not allowed_value(value):
                yield node, f"uses `{name}` ({_what(value)})"
                return
            if inspect.ismodule(value) and not isinstance(parents.get(id(node)), ast.Attribute):
                yield node, f"uses the module `{name}` as a value"
            inner = own_jit_function(value)
            if inner is not None:
                self.helpers.append(inner)
            return
        if hasattr(builtins, name) and name not in KERNEL_BUILTINS:
            yield node, f"uses Python's `{name}`"

    def _attribute(self, node: ast.Attribute, parents: dict[int, ast.AST]) -> Iterator[tuple[ast.AST, str]]:
        attr = node.attr
        if attr.startswith("_") or attr.startswith(INSIDES) or attr in OPENING_ATTRIBUTES:
            yield node, f"reads `.{attr}`, a Python object's insides"
            return
        base = self.resolve(node.value)
        if base is _MISSING or not inspect.ismodule(base):
            return
        value = getattr(base, attr, _MISSING)
        if value is _MISSING:
            return  # an AttributeError when it runs
        if not allowed_value(value):
            yield node, f"uses `{ast.unparse(node)}` ({_what(value)})"
        elif inspect.ismodule(value) and not isinstance(parents.get(id(node)), ast.Attribute):
            yield node, f"uses the module `{ast.unparse(node)}` as a value"
        else:
            inner = own_jit_function(value)
            if inner is not None:
                self.helpers.append(inner)


def _what(value: Any) -> str:
    if inspect.ismodule(value):
        return f"the module {value.__name__}, outside triton.language and math"
    if inspect.isbuiltin(value) or inspect.isfunction(value) or inspect.isclass(value):
        module = getattr(value, "__module__", None) or "Python"
        return f"{module}'s {getattr(value, '__name__', 'object')}, which is not Triton's"
    return f"an object of the Python process ({type(value).__name__}), not a constant"


def kernel_body_error(kernel: Any) -> KernelError | None:
    """The first name, attribute or construct of the kernel (or of a @triton.jit helper of the file it calls)
    outside the allowlist, as an error at the learner's line; None when everything is allowed."""
    handle = KernelHandle.of(kernel)
    root = handle.fn
    if root is None:
        return None
    queue: list[tuple[Callable[..., Any], tuple[str, ...]]] = [(root, (root.__name__,))]
    seen: set[Any] = set()
    while queue:
        fn, path = queue.pop(0)
        if fn.__code__ in seen or (fn.__module__ or "").startswith("puzzles."):  # the course's own helpers
            continue
        seen.add(fn.__code__)
        source = handle.source(fn)
        if source is None or source.tree is None or not source.tree.body or \
                not isinstance(source.tree.body[0], ast.FunctionDef):
            continue
        rules = BodyRules(fn, source.tree.body[0])
        for node, why in rules.problems():
            line = source.first_line + getattr(node, "lineno", 1) - 1
            where = fn.__name__ if len(path) == 1 else f"{fn.__name__} (called from {' -> '.join(path[:-1])})"
            filename = fn.__code__.co_filename
            return KernelError("rule", f"{where}: {why}; {HOW}", line,
                               linecache.getline(filename, line), filename)
        queue += [(inner, (*path, inner.__name__)) for inner in rules.helpers]
    return None
