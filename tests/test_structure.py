"""The code's layering, checked statically: no import cycle, no private (underscore) name imported
from another module, no Python file over 600 lines, in puzzles/ and solutions/.

Every import counts: relative ones, and those inside functions (a lazy import is still a
dependency). Known violations would be listed in KNOWN_* below,
exactly, as a ratchet (none is left). A new violation fails, and so does a listed one that no longer
occurs (delete its line: the list only shrinks).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("puzzles", "solutions")
MAX_LINES = 600

# Modules still in an import cycle, and (importing file, private name, module it comes from): none
# left (issue 23). A violation may leave these lists; none may join them.
KNOWN_CYCLE_MODULES: set[str] = set()
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()

KNOWN_LONG_FILES: set[str] = set()


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> its file, for every Python file of the packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def owning_module(name: str, modules: dict[str, Path]) -> str | None:
    """The project module that `name` (a module, or a name inside one) belongs to, if any."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, modules: dict[str, Path],
               root: Path) -> tuple[set[str], list[tuple[str, str, str]]]:
    """The project modules `module` imports, and its imports of underscore names from other modules
    as (file, name, from module)."""
    edges: set[str] = set()
    private: list[tuple[str, str, str]] = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            edges |= {o for a in node.names if (o := owning_module(a.name, modules)) and o != module}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                target = submodule if submodule in modules else owning_module(source, modules)
                if target is None or target == module:
                    continue
                edges.add(target)
                if alias.name.startswith("_") and not alias.name.startswith("__") and target != submodule:
                    private.append((path.relative_to(root).as_posix(), alias.name, target))
    return edges, private


def scan(root: Path = ROOT) -> tuple[set[str], set[tuple[str, str, str]], set[str]]:
    """(modules in an import cycle, private imports, files over MAX_LINES)."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {}
    private: set[tuple[str, str, str]] = set()
    for module, path in modules.items():
        edges, found = imports_of(module, path, modules, root)
        if path.name == "__init__.py":  # a package importing its own submodules is no cycle
            edges = {e for e in edges if e.rpartition(".")[0] != module}
        graph[module] = edges
        private |= set(found)
    in_cycle: set[str] = set()
    for group in strongly_connected(graph):
        if len(group) > 1:
            in_cycle |= group
    long_files = {p.relative_to(root).as_posix() for p in modules.values()
                  if len(p.read_text().splitlines()) > MAX_LINES}
    return in_cycle, private, long_files


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def test_the_checker_sees_cycles_private_imports_and_relative_imports(tmp_path):
    package = tmp_path / "puzzles"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from puzzles.a import thing\n")
    (package / "a.py").write_text("def f():\n    from .b import _hidden\n    return _hidden\nthing = 1\n")
    (package / "b.py").write_text("from puzzles import a\n_hidden = 2\n")
    (package / "sub" / "__init__.py").write_text("from .c import C\n")
    (package / "sub" / "c.py").write_text("C = 3\n" + "x = 0\n" * MAX_LINES)
    (tmp_path / "solutions").mkdir()
    in_cycle, private, long_files = scan(tmp_path)
    assert in_cycle == {"puzzles.a", "puzzles.b"}  # through an import inside a function, relative
    assert private == {("puzzles/a.py", "_hidden", "puzzles.b")}
    assert long_files == {"puzzles/sub/c.py"}


def test_no_new_import_cycle():
    in_cycle, _, _ = scan()
    assert in_cycle - KNOWN_CYCLE_MODULES == set(), "modules newly in an import cycle"
    assert KNOWN_CYCLE_MODULES - in_cycle == set(), "no longer in a cycle: remove them from KNOWN_CYCLE_MODULES"


def test_no_new_private_import():
    _, private, _ = scan()
    assert private - KNOWN_PRIVATE_IMPORTS == set(), "private names imported from another module: make them public"
    assert KNOWN_PRIVATE_IMPORTS - private == set(), "gone: remove them from KNOWN_PRIVATE_IMPORTS"


def test_no_python_file_over_the_line_limit():
    _, _, long_files = scan()
    assert long_files - KNOWN_LONG_FILES == set(), f"over {MAX_LINES} lines: split by job"
    assert KNOWN_LONG_FILES - long_files == set(), "short enough now: remove them from KNOWN_LONG_FILES"


# The tests, benchmarks and scripts keep the same limit: a test file is cut along its subject, as the package is.
def test_no_test_benchmark_or_script_over_the_line_limit():
    long_files = {str(path.relative_to(ROOT)) for folder in ("tests", "benchmarks", "scripts")
                  for path in sorted((ROOT / folder).rglob("*.py")) if len(path.read_text().splitlines()) > MAX_LINES}
    assert long_files == set(), f"over {MAX_LINES} lines: split by subject"


# The skip marks are defined once (tests/conftest.py: `gpu`, `interpreter("why")`), not rebuilt in each file.
def test_gpu_skips_use_the_suites_marks():
    rebuilt = [f"{path.name}:{n}" for path in sorted((ROOT / "tests").rglob("*.py")) if path.name != "test_structure.py"
               for n, line in enumerate(path.read_text().splitlines(), 1)
               if "skipif(" in line and "on_gpu()" in line]
    assert rebuilt == [], f"use @pytest.mark.gpu or @pytest.mark.interpreter(why): {rebuilt}"


# Besides __init__ and __main__, the package's top level keeps at most this many modules: the rest
# live in subpackages named for their concern (course, running, grading, learner, classroom, cli, viz,
# diagrams, submissions).
MAX_TOP_LEVEL_MODULES = 10


def test_the_package_is_divided_by_concern():
    top = sorted(p.name for p in (ROOT / "puzzles").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    for package in ("course", "running", "grading", "learner", "classroom", "cli", "viz", "diagrams", "submissions"):
        assert (ROOT / "puzzles" / package / "__init__.py").exists(), package


def test_the_course_uses_the_new_module_paths_only():
    """puzzles/moved.py keeps old paths importable for notebooks copied before the move; the course's own
    code, tests, notebooks and pages name the new ones."""
    from puzzles.moved import MOVED, OLD_PACKAGES

    old = sorted({f"puzzles.{name}" for name in MOVED} | {f"puzzles/{name}" for name in OLD_PACKAGES}, key=len,
                 reverse=True)
    pattern = re.compile(r"(?<![\w./])(" + "|".join(re.escape(o) for o in old) + r")(?![\w/])")
    offenders = []
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT).as_posix()
        if (path.suffix not in (".py", ".md", ".ipynb") or relative.startswith((".", "my-notebooks"))
                or relative in ("puzzles/moved.py", "tests/test_structure.py") or "/." in relative):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line) and "moved" not in line:
                offenders.append(f"{relative}:{number}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders[:20])


def test_old_module_paths_still_import_as_the_same_modules():
    """A notebook copied into my-notebooks/ before the move imports what it imported then."""
    import importlib

    import puzzles
    from puzzles.moved import MOVED

    assert puzzles.__name__ == "puzzles"
    for old, new in MOVED.items():
        assert importlib.import_module(f"puzzles.{old}") is importlib.import_module(f"puzzles.{new}"), old
    from puzzles.autotune import sweep  # the names the committed notebooks imported before
    from puzzles.catalog.p02_constant_add_block import add2_spec
    from puzzles.catalog.p20_autotune import PUZZLE
    from puzzles.grade import progress
    from puzzles.tensor_lists import compare_with_loop, tables

    assert PUZZLE.number == 20 and callable(sweep) and callable(progress) and callable(compare_with_loop)
    assert callable(tables) and callable(add2_spec)
    assert importlib.import_module("puzzles.catalog.p20_autotune").__spec__.name == \
        "puzzles.course.catalog.p20_autotune"


def test_every_path_a_shipped_notebook_imported_still_imports():
    """`git log -p -- notebooks/` lists them: the deep paths the notebooks imported until they imported
    public names, and the old ones above (puzzles/moved.py); each still gives the same object."""
    import puzzles
    from puzzles.cli.grade import progress
    from puzzles.course.catalog.p02_constant_add_block import add2_spec
    from puzzles.course.philox import rand
    from puzzles.grading.tensor_lists import compare_with_loop
    from puzzles.learner.autotune import sweep
    from puzzles.learner.inductor_code import compare_with_compiled, compiled_code, kernels_in

    assert (progress, rand, compare_with_loop, sweep) == (puzzles.progress, puzzles.rand, puzzles.compare_with_loop,
                                                          puzzles.sweep)
    assert (compare_with_compiled, compiled_code, kernels_in) == (puzzles.compare_with_compiled,
                                                                  puzzles.compiled_code, puzzles.kernels_in)
    assert add2_spec is puzzles.get(2).spec


# The layers of puzzles/, lowest first (ARCHITECTURE.md's table says what each holds). A module may import
# from its own layer and those below it, never from one above: lazy imports (inside a function) count, and
# only imports under `if TYPE_CHECKING:` may name a higher layer's types (they never run). A module is in
# the layer of the longest room that holds it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("puzzles.running",),  # running a kernel where it cannot hurt; a learner's debug helpers and sandbox
    ("puzzles.course",),  # what the course says: the Puzzle record, specs, the catalog, the notebooks
    ("puzzles.viz", "puzzles.diagrams"),  # pictures: a run's memory picture, a puzzle's diagram
    ("puzzles.grading",),  # test() and its steps, the TestResult (shown with viz/'s picture)
    ("puzzles.submissions",),  # a learner's files loaded under the load rules, and graded
    ("puzzles.learner",),  # what a notebook calls besides test(): progress, sweep, compiled, workspace
    ("puzzles.classroom",),  # grading a class: each submission in an isolated worker, the gradebook
    ("puzzles.cli",),  # the learner's commands (arguments, printing)
    ("puzzles", "puzzles.__main__", "puzzles.moved"),  # the package's face: the learner's API, the dispatch
)
# (importing module, imported module) that still run back up, as a ratchet: none left (issue 49).
KNOWN_UPWARD_IMPORTS: set[tuple[str, str]] = set()


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest room that holds `module` (None: in no room)."""
    best: tuple[int, int] | None = None
    for index, rooms in enumerate(LAYERS):
        for room in rooms:
            exact_only = room == "puzzles"  # the package's own __init__, not everything below it
            if module == room or (not exact_only and module.startswith(room + ".")):
                if best is None or len(room) > best[0]:
                    best = (len(room), index)
    return None if best is None else best[1]


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of the import statements under `if TYPE_CHECKING:` (annotations only, never run)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and ast.unparse(test).endswith("TYPE_CHECKING"):
            found |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
    return found


def upward_imports(root: Path = ROOT) -> dict[tuple[str, str], list[int]]:
    """(module, imported module) -> the lines, for every run-time import of puzzles/ from a lower layer into a
    higher one."""
    modules = {m: p for m, p in module_files(root).items() if m.split(".")[0] == "puzzles"}
    found: dict[tuple[str, str], list[int]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        type_only = type_checking_nodes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in type_only:
                continue
            single = ast.Module(body=[node], type_ignores=[])
            for target in imported_modules(module, path, single, modules):
                low, high = layer_of(module), layer_of(target)
                if low is not None and high is not None and high > low:
                    found.setdefault((module, target), []).append(node.lineno)
    return found


def imported_modules(module: str, path: Path, tree: ast.Module, modules: dict[str, Path]) -> set[str]:
    """The project modules one import statement names (`imports_of`'s reading of a statement)."""
    edges: set[str] = set()
    node = tree.body[0]
    if isinstance(node, ast.Import):
        edges |= {o for a in node.names if (o := owning_module(a.name, modules)) and o != module}
    else:
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            target = submodule if submodule in modules else owning_module(source, modules)
            if target is not None and target != module:
                edges.add(target)
    return edges


def test_every_module_of_the_package_is_in_a_layer():
    modules = [m for m in module_files(ROOT) if m.split(".")[0] == "puzzles"]
    assert [m for m in modules if layer_of(m) is None] == [], "add its room to LAYERS"


def test_the_layer_checker_sees_lazy_imports_and_skips_type_only_ones(tmp_path):
    package = tmp_path / "puzzles"
    for room in ("running", "grading"):
        (package / room).mkdir(parents=True)
        (package / room / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "grading" / "verdict.py").write_text("V = 1\n")
    (package / "running" / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from puzzles.grading.verdict import V\n"
        "def f():\n    from ..grading import verdict\n    return verdict\n")
    assert upward_imports(tmp_path) == {("puzzles.running.low", "puzzles.grading.verdict"): [5]}


def test_no_import_runs_back_up_the_layers():
    found = upward_imports()
    new = {f"{module} (line {', '.join(map(str, lines))}) imports {target}" for (module, target), lines in found.items()
           if (module, target) not in KNOWN_UPWARD_IMPORTS}
    assert new == set(), "an import from a lower layer into a higher one: move the code to the layer it belongs in"
    assert KNOWN_UPWARD_IMPORTS - set(found) == set(), "gone: remove them from KNOWN_UPWARD_IMPORTS"


# The suite is laid out like the package: a test file lives in the folder of what it tests (tests/running/,
# tests/grading/, ...), the shared helpers in tests/support/, the kernel collections in tests/kernels/.
def test_the_suite_is_laid_out_like_the_package():
    loose = sorted(p.name for p in (ROOT / "tests").glob("*.py") if p.name not in ("conftest.py", "test_structure.py"))
    assert loose == [], f"put these in the folder of what they test (tests/<package>/): {loose}"
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name not in ("__pycache__", "browser")}
    packages = {p.name for p in (ROOT / "puzzles").iterdir() if (p / "__init__.py").exists()}
    assert folders - packages <= {"support", "kernels", "gptq"}, folders - packages
    names = [p.name for p in (ROOT / "tests").rglob("*.py") if p.name != "__init__.py"]
    assert len(names) == len(set(names)), "a module name twice: every folder is on the path, names must differ"
