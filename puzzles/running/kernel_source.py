"""A learner's kernel as data another process can rebuild: its source, and the globals it reads.

The compile check's workers (puzzles/running/compile_check/) and the GPU worker (puzzles/running/gpu_worker.py)
run in other processes than the notebook, where the kernel defined in a notebook cell does not
exist. `describe_kernel` turns the kernel, and every @triton.jit function it reaches, into source
plus the globals each reads (modules by name, constants by value, other @jit functions by
reference, anything else as an opaque stand-in that the compiler rejects as it would the real
object). `rebuild_kernel` defines them again in the other process, at their own file and lines
(through linecache), so a compile error or a traceback names the learner's line.

This module imports only the standard library at the top: the compile workers load it by path,
without importing torch or the `puzzles` package.
"""

from __future__ import annotations

import ast
import inspect
import pickle
import textwrap
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FunctionSource:
    """One function's source, read once: the text as written, the file line it starts at, and the
    syntax tree of its dedented text (None where it does not parse)."""

    fn: Any
    text: str
    first_line: int
    tree: ast.Module | None


def read_source(fn: Any) -> FunctionSource | None:
    """The function's source (None without one: defined in a string, say)."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    text = "".join(lines)
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        tree = None
    return FunctionSource(fn, text, first, tree)


def describe_kernel(fn: Any, source_of: Any = None) -> dict[str, Any] | None:
    """A @triton.jit kernel's Python function (the one under its decorators) and the @triton.jit functions
    it calls, as source plus the globals they read. `source_of(fn)`: a function's source already read
    (`KernelHandle.source`, puzzles/running/kernel.py), so that nothing is parsed twice; without it each
    function is read here."""
    from puzzles.running.lines import def_line  # (standard library only, like this module)

    if fn is None:
        return None
    functions: dict[str, dict[str, Any]] = {}
    read = source_of or read_source

    def add(f: Any) -> str:
        key = f"{f.__code__.co_filename}:{f.__code__.co_firstlineno}:{f.__name__}"
        if key in functions:
            return key
        found = read(f)
        if found is None:
            raise NoSource(f.__name__)
        source, first = found.text, found.first_line
        entry: dict[str, Any] = {
            "name": f.__name__, "filename": f.__code__.co_filename, "first_line": first,
            "def_line": def_line(f), "source": source,
            "future_annotations": bool(f.__code__.co_flags & future_annotations_flag()), "globals": {}}
        functions[key] = entry
        scope = dict(f.__globals__)
        if f.__closure__:
            scope.update(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__), strict=False))
        for name in sorted(names_used(source, found.tree)):
            if name in scope:
                entry["globals"][name] = encode_global(scope[name], add)
        return key

    try:
        root = add(fn)
    except NoSource:
        return None
    return {"root": root, "functions": functions}


class NoSource(Exception):
    pass


def future_annotations_flag() -> int:
    import __future__

    return __future__.annotations.compiler_flag


def names_used(source: str, tree: ast.Module | None = None) -> set[str]:
    if tree is None:
        try:
            tree = ast.parse(textwrap.dedent(source))
        except SyntaxError:
            return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def encode_global(value: Any, add: Any) -> tuple:
    """A global as the worker can rebuild it; anything else becomes an opaque stand-in, which
    Triton's compiler rejects just as it rejects the real object."""
    import types

    from puzzles.running.kernel_chain import jitted_python_function  # (standard library only, like this module)

    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    module = getattr(value, "__module__", None) or ""
    # A @triton.jit function (the course's print_if and breakpoint_if among them: their compiled
    # side) is rebuilt from its source and compiled with the kernel.
    inner = jitted_python_function(value)
    if inner is not None:
        if (inner.__module__ or "").startswith("triton."):
            return ("attr", inner.__module__, inner.__qualname__)
        return ("jit", add(inner))
    if type(value).__name__ == "constexpr" and type(value).__module__.startswith("triton"):
        if plain_value(value.value) is not OPAQUE:
            return ("constexpr", value.value)
        try:  # a constexpr dtype, say
            return ("pickle", pickle.dumps(value))
        except Exception:  # noqa: BLE001
            return ("opaque", type(value.value).__name__)
    plain = plain_value(value)
    if plain is not OPAQUE:
        return ("value", plain)
    qual = getattr(value, "__qualname__", None)
    if module.startswith(("triton", "math", "builtins")) and qual:
        return ("attr", module, qual)
    if type(value).__module__.startswith("triton.language"):  # dtypes and the like
        try:
            return ("pickle", pickle.dumps(value))
        except Exception:  # noqa: BLE001
            pass
    return ("opaque", type(value).__name__)


OPAQUE = object()


def plain_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple) and all(plain_value(v) is not OPAQUE for v in value):
        return value
    return OPAQUE


class Opaque:
    """Stands for a global the compiler must not accept."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


# Files whose lines `rebuild_kernel` put into linecache: only the rebuilt functions' lines, blank elsewhere.
SYNTHESIZED_FILES: set[str] = set()


def import_module(name: str) -> Any:
    """Import a module the kernel reads (`helpers.combine(x)`) from its file on disk: while it loads,
    linecache holds no lines that `rebuild_kernel` wrote for the same file, which are blank but for the
    functions rebuilt from it (its @triton.jit functions read their source through linecache)."""
    import importlib
    import linecache
    import sys

    if name in sys.modules:
        return sys.modules[name]
    saved = {f: linecache.cache.pop(f) for f in list(SYNTHESIZED_FILES) if f in linecache.cache}
    try:
        return importlib.import_module(name)
    finally:
        linecache.cache.update(saved)


def decode_global(value: tuple, build: Any = None) -> Any:
    """A global encoded by `encode_global`, as an object of this process (`build` rebuilds a
    @jit function from its key)."""
    import triton

    kind = value[0]
    if kind == "module":
        return import_module(value[1])
    if kind == "attr":
        obj = import_module(value[1])
        for part in value[2].split("."):
            obj = getattr(obj, part)
        return obj
    if kind == "jit" and build is not None:
        return build(value[1])
    if kind == "constexpr":
        return triton.language.constexpr(value[1])
    if kind == "value":
        return value[1]
    if kind == "pickle":
        return pickle.loads(value[1])
    return Opaque(value[-1])


def rebuild_kernel(spec: dict) -> dict[str, Any]:
    """Each function of a `describe_kernel` description as a @triton.jit function of this process,
    defined at its own file and lines; returns {"root": the kernel, "by_src": {source: entry},
    "root_entry": the kernel's entry}."""
    import linecache

    import triton

    jitted: dict[str, Any] = {}
    files: dict[str, list[str]] = {}

    def decode(value: tuple) -> Any:
        return decode_global(value, build)

    def build(key: str) -> Any:
        if key in jitted:
            return jitted[key]
        entry = spec["functions"][key]
        # Triton's interpreter looks for triton.language among a function's globals (a helper that
        # names no `tl` has none): give every rebuilt function one.
        scope: dict[str, Any] = {"__name__": f"puzzles_rebuilt_{len(jitted)}", "_triton_language": triton.language}
        jitted[key] = None  # recursion guard
        for name, value in entry["globals"].items():
            scope[name] = decode(value)
        filename, first = entry["filename"], entry["first_line"]
        # Triton reads a function's source through linecache: give it each function at its own
        # lines of its file (several functions of one file or cell share the entry).
        lines = files.setdefault(filename, [])
        own = entry["source"].splitlines(True)
        lines += ["\n"] * max(0, first - 1 + len(own) - len(lines))
        lines[first - 1 : first - 1 + len(own)] = own
        linecache.cache[filename] = (sum(map(len, lines)), None, list(lines), filename)
        SYNTHESIZED_FILES.add(filename)
        tree = ast.parse(textwrap.dedent(entry["source"]))
        func = tree.body[0]
        func.decorator_list = []  # autotune, heuristics, jit: the caller wraps the function itself
        ast.increment_lineno(tree, first - 1)
        flags = future_annotations_flag() if entry["future_annotations"] else 0
        exec(compile(tree, filename, "exec", flags=flags, dont_inherit=True), scope)
        plain = scope[entry["name"]]
        jitted[key] = triton.jit(plain)
        scope[entry["name"]] = jitted[key]
        return jitted[key]

    root = build(spec["root"])
    by_src = {getattr(fn, "src", k): spec["functions"][k] for k, fn in jitted.items() if fn is not None}
    return {"root": root, "by_src": by_src, "root_entry": spec["functions"][spec["root"]]}
