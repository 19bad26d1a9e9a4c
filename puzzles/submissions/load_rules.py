"""What a graded file may run while it loads: an allowlist, checked on the source before anything runs.

Grading a file executes its definitions (puzzles/submissions/grade.py). Whatever those statements evaluate runs
in the grading process: a default argument, a decorator, an annotation, an assignment's value, a
class body. In a class's grading worker, such code could hand the spec's own output in as the
kernel's or trap the grader (puzzles/classroom/roster.py checks the outputs anyway, as defence in depth);
and an object of a learner's class, met by the grader while it inspects the globals a kernel reads,
runs the class's `__getattr__`, `__eq__` or `__hash__` there without any call at load. So:

- **Imports only of what the notebooks import** (`IMPORTABLE_MODULES`, `FROM_TRITON`, `COURSE_IMPORTS`, the
  course's public names `FROM_PUZZLES`): never the references (`solutions`), the grader's own modules, `builtins`,
  `os`, `sys`, `inspect`...: a file that can name them could read an answer or reach the grader's state.
- **No class definitions**: kernels never need one, and a class is the only way a file could put
  its own code behind attribute access, comparison or hashing.
- **Calls while loading come from an allowlist** (`ALLOWED_CALLS`, `math.*`, `COMPUTING_BUILTINS`),
  resolved through the file's own import bindings (`import triton.language as tl`,
  `from triton import jit`), which no other statement may rebind; and a function of the file
  whose body only returns such an expression (`def get_configs(): return [triton.Config(...)]`).
- **Values a library may call later** (an autotune `pre_hook`, a heuristic, a `key=`) are lambdas
  or such functions, whose bodies obey the same rules (Triton calls them while the kernel runs);
  a name that reaches anything else (`os.system`, a function of the file with statements) is
  refused, and so are attributes of anything but an imported module (`obj.__class__`, `f.fn`),
  the assignment expression `:=`, star imports and names with double underscores.

A refused statement is not run. It is reported with its line and why; a statement (a kernel, a
helper, an assignment) that reads a name only a refused statement would bind is refused with it,
so the puzzle whose kernel needs it fails with that message, and the file's other kernels are
graded as usual.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass

ALLOWED_CALLS = frozenset({
    "triton.jit", "triton.autotune", "triton.heuristics", "triton.Config", "triton.cdiv", "triton.next_power_of_2",
    "triton.language.constexpr", "triton.language.cdiv", "puzzles.cdiv", "puzzles.course.puzzle.cdiv",
})
DECORATOR_FACTORIES = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
ALLOWED_MODULE_CALLS = ("math.",)  # every function of these modules computes on numbers
COMPUTING_BUILTINS = frozenset({
    "int", "float", "bool", "str", "complex", "abs", "min", "max", "sum", "round", "pow", "divmod", "range", "len",
    "tuple", "list", "dict", "set", "frozenset", "sorted", "reversed", "enumerate", "zip", "any", "all", "slice",
    "bin", "hex", "oct", "chr", "ord",
})
# Imported values that are data, never called by the grader or a library: modules and dtypes.
KNOWN_MODULES = frozenset({"triton", "triton.language", "math", "torch", "numpy", "jaxtyping", "typing"})
DTYPES = frozenset({
    "float16", "float32", "float64", "bfloat16", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool", "float8e4nv", "float8e5", "float8e4b15", "float8_e4m3fn", "float8_e5m2",
    "int4", "uint4",
})
WHY_CLASS = ("a class definition is not allowed in a graded file; kernels never need one (its code would run in the "
             "grader while it inspects your globals): write functions, and move the class to a cell the grader "
             "does not read (a cell with test(...) or your experiments)")
# What a graded file may import: what the course's notebooks import (puzzles/course/notebooks.py; a test checks
# every generated cell against this). The references (`solutions`), the grader's own modules, `builtins`, `os`,
# `sys`, `inspect`... are refused: a kernel that can name them can read the answers or reach the grader's state.
IMPORTABLE_MODULES = frozenset({"torch", "triton", "triton.language", "math", "jaxtyping"})
IMPORTABLE_PACKAGES = ("triton.language.",)  # triton.language.extra.libdevice (erf, tanh...)
# `from triton import X`: Triton's public decorators and helpers, never its runtime, compiler or backends.
FROM_TRITON = frozenset({"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language",
                         "constexpr", "JITFunction"})
# `from puzzles import X`: the course's public names, `puzzles.__all__` (a test keeps the two equal). Listed here,
# not read from the package: a name added to the learner's API is importable by a graded file only once added here.
# `mxfp4` is a module (puzzle 33's format, which its spec cell uses): its attributes are torch and its own functions,
# nothing a graded file could not import itself.
FROM_PUZZLES = frozenset({
    "PUZZLES", "Float32", "Int32", "Puzzle", "Tensor", "TestResult", "all_puzzles", "breakpoint_if", "cdiv",
    "check_tensors", "compare_with_compiled", "compare_with_loop", "compiled", "compiled_code", "get", "kernels_in",
    "mxfp4", "on_gpu", "print_if", "progress", "rand", "sandboxed", "sweep", "test",
})
# `from puzzles.xxx import X`: the deep paths that notebooks shipped before 2026-11-28 import (a learner's copy
# still loads); the generated notebooks import public names only.
COURSE_IMPORTS = frozenset({
    "puzzles.cli.grade.progress", "puzzles.course.philox.rand", "puzzles.grading.tensor_lists.compare_with_loop",
    "puzzles.learner.autotune.sweep", "puzzles.learner.inductor_code.compare_with_compiled",
    "puzzles.learner.inductor_code.compiled_code", "puzzles.learner.inductor_code.kernels_in",
})
WHY_IMPORT = ("a graded file may import only triton, triton.language, torch, math, jaxtyping and the course's "
              "public names (`from puzzles import test, Float32, ...`, as the notebooks do): the reference "
              "solutions, the grader's own modules and Python's system modules (builtins, os, sys, inspect, "
              "importlib, ctypes, gc...) are off limits to a graded file")

HOW_TO_FIX = ("a graded file may call only triton.jit/autotune/heuristics/Config/cdiv/next_power_of_2, "
              "tl.constexpr, math functions, builtins that compute (int, min, range, len...) and its own functions "
              "that only return such an expression: move the rest into a cell the grader does not read (one with "
              "test(...) or your experiments)")

# A lambda whose body zeroes or fills a tensor (an autotune pre_hook: `nargs["z_ptr"].zero_()`).
HOOK_ADVICE = ("; to zero an output before each config runs, give triton.autotune reset_to_zero=[\"z_ptr\"] "
               "instead of a pre_hook")


@dataclass
class Refusal:
    """A statement that grading does not run: its line and why, and the names it would have bound."""

    line: int
    why: str
    names: frozenset[str]
    needs_refused: bool = False  # refused only because it reads what a refused statement binds

    def message(self) -> str:
        return f"line {self.line}: {self.why}"


@dataclass
class Binding:
    kind: str  # "import", "function", "class", "value"
    target: str  # an import's qualified name ("triton.language"); else ""
    node: ast.stmt


def allowed_call(name: str) -> bool:
    """`triton.jit`, `math.ceil`: on the allowlist (a module's own public functions, not `math.__loader__.x`)."""
    module, _, function = name.rpartition(".")
    return name in ALLOWED_CALLS or (f"{module}." in ALLOWED_MODULE_CALLS and not function.startswith("_"))


def importable_module(name: str) -> bool:
    if any(part.startswith("_") for part in name.split(".")):
        return False
    return name in IMPORTABLE_MODULES or name.startswith((*IMPORTABLE_PACKAGES, "torch."))


def course_import(module: str, name: str) -> bool:
    """`from puzzles import test`, `from puzzles.course.philox import rand`, a catalog module's spec: what a
    notebook of the course imports (never a reference, never the grader's insides)."""
    if module == "puzzles":
        return name in FROM_PUZZLES
    if f"{module}.{name}" in COURSE_IMPORTS:
        return True
    package, _, slug = module.rpartition(".")
    if package == "puzzles.course.catalog" and slug.startswith("p") and name.endswith("_spec"):
        return True  # a lead cell reuses an earlier puzzle's spec (puzzle 3 shows puzzle 2's)
    return False


def import_problem(node: ast.Import | ast.ImportFrom) -> str | None:
    """Why an import is refused (None: allowed). Checked on the text, before anything is imported."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if not importable_module(alias.name):
                return f"imports `{alias.name}`; {WHY_IMPORT}"
        return None
    module = node.module or ""
    for alias in node.names:
        if alias.name.startswith("_"):
            return f"imports `{alias.name}` from `{module}`, a private name; {WHY_IMPORT}"
        if module == "triton" and alias.name in FROM_TRITON:
            continue
        if module != "triton" and importable_module(module):
            continue
        if module.split(".")[0] == "puzzles" and course_import(module, alias.name):
            continue
        return f"imports `{alias.name}` from `{module}`; {WHY_IMPORT}"
    return None


def outermost(expr: ast.expr) -> ast.Name | None:
    """The name an attribute or subscript chain starts from (`args` in `args["x"].shape`)."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None


def dotted(expr: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return [expr.id, *reversed(parts)]


def bound_names(node: ast.stmt) -> list[tuple[str, Binding]]:
    """The module-level names a selected statement binds, each with how."""
    if isinstance(node, ast.Import):
        # `import a.b` binds `a` (the package); `import a.b as c` binds `c` to `a.b`
        return [(a.asname or a.name.split(".")[0],
                 Binding("import", a.name if a.asname else a.name.split(".")[0], node)) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [(a.asname or a.name, Binding("import", f"{node.module}.{a.name}", node)) for a in node.names
                if a.name != "*"]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [(node.name, Binding("function", "", node))]
    if isinstance(node, ast.ClassDef):
        return [(node.name, Binding("class", "", node))]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [(sub.id, Binding("value", "", node)) for t in targets for sub in ast.walk(t)
                if isinstance(sub, ast.Name)]
    return []


def returns_only(node: ast.FunctionDef) -> ast.expr | None:
    """The expression of a function whose body is only `return <expression>` (a docstring allowed)."""
    body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) and \
        isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str) else node.body
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None and not node.decorator_list:
        return body[0].value
    return None


def held_names(node: ast.AST) -> set[str]:
    """Names read by `node` other than as what a call calls (`f` in `triton.jit(f)`, not in `f()`)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called}


def parameters(args: ast.arguments) -> set[str]:
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every}


class LoadRules:
    """The allowlist applied to the statements grading would run from one file (all its cells)."""

    def __init__(self, statements: list[ast.stmt]) -> None:
        self.bindings: dict[str, list[Binding]] = {}
        for node in statements:
            for name, binding in bound_names(node):
                self.bindings.setdefault(name, []).append(binding)
        # Functions defined once that only return an expression the rules allow (get_configs()): safe to
        # call, now or when a library calls them. A spec (`return x.sum()`) is one only in form: it is
        # not refused, but nothing may call it or pass it while loading.
        self.returning: dict[str, ast.expr] = {}
        for name, found in self.bindings.items():
            if len(found) == 1 and found[0].kind == "function" and isinstance(found[0].node, ast.FunctionDef):
                expression = returns_only(found[0].node)
                if expression is not None:
                    self.returning[name] = expression
        # Values that hold a function of the file (`k = triton.jit(f)`, the one place one may be
        # passed): a library calling them would run its body unchecked, so they are functions too.
        # (`CONFIGS = get_configs()` holds what the function returned, not the function.)
        self.wrapped = {name for name, found in self.bindings.items() for b in found
                        if b.kind == "value" and any(self._is_function(n) for n in held_names(b.node))}
        shrank = True
        while shrank:  # one that calls another that is not safe is not safe either
            shrank = False
            for name, expression in list(self.returning.items()):
                local = parameters(self.bindings[name][0].node.args)
                if self.first(self.expression_problems(expression, local)) is not None:
                    del self.returning[name]
                    shrank = True

    # -- statements ---------------------------------------------------------------------------------

    def refusals(self, statements: list[ast.stmt], labels: dict[int, str] | None = None) -> dict[int, Refusal]:
        """id(statement) -> why it is not run, for each refused statement; then every statement that
        reads a name only refused statements bind (a kernel that reads a refused class, say).
        `labels`: where each statement is (a notebook's cell), named when a cause is elsewhere."""
        labels = labels or {}
        refused: dict[int, Refusal] = {}
        for node in statements:
            why = self.statement_problem(node)
            if why is not None:
                refused[id(node)] = Refusal(node.lineno, why, frozenset(n for n, _ in bound_names(node)))
        grew = True
        while grew:  # a kernel that uses a helper that uses a refused name
            grew = False
            for node in statements:
                if id(node) in refused:
                    continue
                cause = self._refused_dependency(node, refused)
                if cause is not None:
                    name, binder, first = cause
                    own = [n for n, _ in bound_names(node)]
                    where = labels.get(id(binder), "")
                    where = f"{where}: " if where and where != labels.get(id(node)) else ""
                    refused[id(node)] = Refusal(node.lineno, f"{own[0] if own else 'it'} uses {name}, which grading "
                                                f"does not define ({where}{first.message()})", frozenset(own), True)
                    grew = True
        return refused

    def _refused_dependency(self, node: ast.stmt, refused: dict[int, Refusal]
                            ) -> tuple[str, ast.stmt, Refusal] | None:
        if not isinstance(node, (ast.FunctionDef, ast.Assign, ast.AnnAssign)):
            return None
        for name in sorted(free_names(node)):
            binders = self.bindings.get(name, [])
            if binders and all(id(b.node) in refused for b in binders):
                return name, binders[0].node, refused[id(binders[0].node)]
        return None

    def statement_problem(self, node: ast.stmt) -> str | None:
        """Why grading must not run this statement (None: it may)."""
        if isinstance(node, ast.ClassDef):
            return WHY_CLASS
        for name, binding in bound_names(node):
            if name.startswith("__"):
                return f"binds `{name}`, a name with double underscores, which a graded file may not set"
            problem = self._rebinding(name, binding)
            if problem:
                return problem
        if isinstance(node, ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                return f"`from {node.module} import *` is not allowed in a graded file; import the names you use"
            if node.level:
                return "a relative import is not allowed in a graded file"
            return import_problem(node)
        if isinstance(node, ast.Import):
            return import_problem(node)
        if isinstance(node, ast.FunctionDef):
            return self._function_problem(node)
        if isinstance(node, ast.AnnAssign):
            return self.first(self.expression_problems(node.annotation, set(), relaxed=True)) or \
                (self.first(self.expression_problems(node.value, set())) if node.value else None)
        if isinstance(node, ast.Assign):
            return self.first(self.expression_problems(node.value, set()))
        return f"a {type(node).__name__} statement is not allowed in a graded file"

    def _rebinding(self, name: str, binding: Binding) -> str | None:
        """A name an import binds may not be bound by anything but imports anywhere in the file (else
        `tl.constexpr(...)` could call something other than Triton's). Two imports of one name from
        different places (`from puzzles import Tensor`, `from torch import Tensor`) are both run; the
        name is then ambiguous, and nothing may call through it while loading."""
        imports = [b for b in self.bindings.get(name, []) if b.kind == "import"]
        if not imports or binding.kind == "import":
            return None
        first = imports[0]
        return (f"rebinds `{name}`, which line {first.node.lineno} imports ({first.target}); a graded file may not "
                "bind an imported name to anything else")

    def _function_problem(self, node: ast.FunctionDef) -> str | None:
        for decorator in node.decorator_list:  # a decorator is called with the function
            problem = self.first(self.call_problems(decorator, set())
                                 if isinstance(decorator, ast.Call) else self.callee_problems(decorator, set()))
            if problem:
                return problem
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            problem = self.first(self.expression_problems(default, set()))
            if problem:
                return problem
        annotations = [a.annotation for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                       + [a for a in (node.args.vararg, node.args.kwarg) if a] if a.annotation]
        for annotation in annotations + ([node.returns] if node.returns else []):
            problem = self.first(self.expression_problems(annotation, set(), relaxed=True))
            if problem:
                return problem
        return None

    @staticmethod
    def first(problems: Iterator[str]) -> str | None:
        return next(problems, None)

    # -- expressions --------------------------------------------------------------------------------

    def expression_problems(self, expr: ast.expr, local: set[str], relaxed: bool = False) -> Iterator[str]:
        """Why evaluating `expr` could run code outside the allowlist. `local`: names of the
        enclosing lambdas, comprehensions or returning function. `relaxed` (annotations, which
        nothing calls): any name or attribute may be read, calls still obey the allowlist."""
        if isinstance(expr, ast.Call):
            yield from self.call_problems(expr, local, relaxed=relaxed)
        elif isinstance(expr, ast.NamedExpr):
            yield f"the assignment expression `{ast.unparse(expr)}` is not allowed in a graded file"
        elif isinstance(expr, (ast.Await, ast.Yield, ast.YieldFrom)):
            yield f"`{ast.unparse(expr)}` is not allowed in a graded file"
        elif isinstance(expr, ast.Lambda):
            yield from self._lambda_problems(expr, local)
        elif isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            yield from self._comprehension_problems(expr, local, relaxed)
        elif isinstance(expr, (ast.Name, ast.Attribute)):
            yield from self.value_problems(expr, local, relaxed)
        else:
            for child in ast.iter_child_nodes(expr):
                if isinstance(child, ast.expr):
                    yield from self.expression_problems(child, local, relaxed)

    def _lambda_problems(self, expr: ast.Lambda, local: set[str]) -> Iterator[str]:
        # Its defaults are evaluated now; its body when a library calls it (a heuristic, a hook): the same rules.
        for default in expr.args.defaults + [d for d in expr.args.kw_defaults if d is not None]:
            yield from self.expression_problems(default, local)
        for problem in self.expression_problems(expr.body, local | parameters(expr.args)):
            yield problem + (HOOK_ADVICE if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                                and n.func.attr in ("zero_", "fill_") for n in ast.walk(expr.body))
                             else "")

    def _comprehension_problems(self, expr: ast.expr, local: set[str], relaxed: bool) -> Iterator[str]:
        inner = set(local)
        for generator in expr.generators:
            yield from self.expression_problems(generator.iter, inner, relaxed)
            inner |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
            for condition in generator.ifs:
                yield from self.expression_problems(condition, inner, relaxed)
        parts = [expr.key, expr.value] if isinstance(expr, ast.DictComp) else [expr.elt]
        for part in parts:
            yield from self.expression_problems(part, inner, relaxed)

    def call_problems(self, call: ast.Call, local: set[str], relaxed: bool = False) -> Iterator[str]:
        """A call: to an allowed function, with arguments that are safe values (checked strictly, even
        in an annotation: `max(..., key=f)` calls f). The function a decorator factory wraps
        (`triton.jit(f)`, `triton.autotune(...)(f)`) may be any function of the file."""
        if isinstance(call.func, ast.Call):  # triton.autotune(...)(f): the factory's call, then the wrap
            yield from self.call_problems(call.func, local, relaxed)
            wraps = self.qualified(call.func.func, local) in DECORATOR_FACTORIES
        else:
            yield from self.callee_problems(call.func, local)
            wraps = self.qualified(call.func, local) == "triton.jit"
        for index, argument in enumerate(call.args):
            if wraps and index == 0 and isinstance(argument, ast.Name) and self._is_function(argument.id):
                continue
            yield from self.expression_problems(argument.value if isinstance(argument, ast.Starred) else argument,
                                                local)
        for keyword in call.keywords:
            yield from self.expression_problems(keyword.value, local)

    def callee_problems(self, func: ast.expr, local: set[str]) -> Iterator[str]:
        """What is called must be on the allowlist (through the file's own imports) or a
        function of the file that only returns an allowed expression."""
        name = self.qualified(func, local)
        if name is not None and allowed_call(name):
            return
        parts = dotted(func)
        if parts is not None and len(parts) == 1 and parts[0] in self.returning and parts[0] not in local:
            return
        if parts is not None and len(parts) == 1 and parts[0] in COMPUTING_BUILTINS and \
                parts[0] not in self.bindings and parts[0] not in local:
            return
        shown = name or ast.unparse(func)
        targets = sorted({b.target for b in self.bindings.get(parts[0], []) if b.kind == "import"}) if parts else []
        if len(targets) > 1:
            yield (f"calls `{shown}` while loading, and `{parts[0]}` is imported from {len(targets)} places "
                   f"({', '.join(targets)}): import it once; {HOW_TO_FIX}")
        elif parts is not None and len(parts) == 1 and self._is_function(parts[0]):
            yield (f"calls `{shown}()`, a function of this file, while loading: only one whose body is a `return` "
                   f"of what the rules allow may be called; {HOW_TO_FIX}")
        else:
            yield f"calls `{shown}` while loading; {HOW_TO_FIX}"

    def value_problems(self, expr: ast.Name | ast.Attribute, local: set[str], relaxed: bool) -> Iterator[str]:
        """A name or attribute read as a value: something a library may call later must be safe to call."""
        shown = ast.unparse(expr)
        if any(isinstance(n, ast.Attribute) and n.attr.startswith("_") for n in ast.walk(expr)):
            yield f"reads `{shown}`, an object's insides, while loading"
            return
        root = outermost(expr)
        if root is not None and root.id in local:  # args["N0"], args.x in a heuristic: what Triton passes
            yield from (p for c in ast.walk(expr) if isinstance(c, ast.Subscript)
                        for p in self.expression_problems(c.slice, local, relaxed))
            return
        parts = dotted(expr)
        if parts is None:  # an attribute of a call's result or of a subscript: f(x).fn, d["k"].attr
            if not relaxed:
                yield f"reads an attribute of a value (`{shown}`) while loading; {HOW_TO_FIX}"
                return
            for child in ast.iter_child_nodes(expr):
                if isinstance(child, ast.expr):
                    yield from self.expression_problems(child, local, relaxed)
            return
        if any(p.startswith("__") for p in parts):
            yield f"reads `{shown}`, an object's insides, while loading"
            return
        binders = self.bindings.get(parts[0], [])
        if relaxed:
            return
        if not binders:
            if len(parts) == 1 and (parts[0] in COMPUTING_BUILTINS or not hasattr(builtins, parts[0])):
                return  # a builtin that computes, or a name nothing defines (a NameError, not code)
            yield f"uses `{shown}` as a value while loading (a library could call it); {HOW_TO_FIX}"
            return
        name = self.qualified(expr, local)
        if name is not None:  # through an import
            modules_only = all(isinstance(b.node, ast.Import) for b in binders)  # `import x` binds a module
            if (len(parts) == 1 and modules_only) or allowed_call(name) or name in KNOWN_MODULES \
                    or (name.startswith(("triton.language.", "torch.")) and name.rsplit(".", 1)[-1] in DTYPES):
                return
            yield f"uses `{name}` as a value while loading (a library could call it); {HOW_TO_FIX}"
        elif len(parts) > 1:
            yield f"reads an attribute of `{parts[0]}` (`{shown}`) while loading; {HOW_TO_FIX}"
        elif (self._is_function(parts[0]) or parts[0] in self.wrapped) and parts[0] not in self.returning:
            yield (f"uses `{shown}`, a function of this file, as a value while loading (a library could call it "
                   "while grading): only a lambda or a function that only returns what the rules allow may be")
        # a value assigned in the file was checked where it was assigned

    def _is_function(self, name: str) -> bool:
        return any(b.kind == "function" for b in self.bindings.get(name, []))

    def qualified(self, expr: ast.expr, local: set[str]) -> str | None:
        """`tl.constexpr` as "triton.language.constexpr", through the file's own import of its root;
        None when the root is not an import (or is ambiguous)."""
        parts = dotted(expr)
        if parts is None or parts[0] in local:
            return None
        binders = self.bindings.get(parts[0], [])
        if not binders or any(b.kind != "import" or b.target != binders[0].target for b in binders):
            return None
        return ".".join([binders[0].target, *parts[1:]])


def free_names(node: ast.stmt) -> set[str]:
    """Module-level names a statement may read: a function's decorators, defaults and annotations,
    and what its body loads less its own locals; an assignment's value; all a class reads (its body
    runs at module level)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        every = node.args.posonlyargs + node.args.args + node.args.kwonlyargs + \
            [a for a in (node.args.vararg, node.args.kwarg) if a]
        outside = [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d),
                   *(a.annotation for a in every if a.annotation)]
        read = set().union(*(loaded_names(e) for e in outside))
        local = parameters(node.args) | {n.id for s in node.body for n in ast.walk(s)
                                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        declared = {name for s in node.body for n in ast.walk(s) if isinstance(n, ast.Global) for name in n.names}
        inner = set().union(*(loaded_names(s) for s in node.body))
        return read | (inner - (local - declared))
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return set().union(*(loaded_names(e) for e in (node.value, getattr(node, "annotation", None)) if e))
    return loaded_names(node)


def loaded_names(node: ast.AST) -> set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}
