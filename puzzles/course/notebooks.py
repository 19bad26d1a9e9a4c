"""Build the numbered notebooks from the catalog, and check the committed ones have not drifted.

    python -m puzzles notebooks          # rewrite notebooks/*.ipynb from the catalog
    python -m puzzles notebooks --check  # exit 1 if a committed notebook differs

A puzzle notebook is: an "Open in Colab" link and the title, a set-up cell (its code folded away), the
statement and its diagram, the spec, the starter kernel (tagged `starter`), hints hidden in <details>, and
the grading cell (tagged `grade`). Notebooks are written without outputs.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import json
import textwrap
from pathlib import Path

from puzzles.course import catalog
from puzzles.course.primer import PRIMER_NAME, primer_cells
from puzzles.course.puzzle import Puzzle
from puzzles.course.solution_source import ROOT, kernel_signature, starter_source

NOTEBOOK_DIR = ROOT / "notebooks"
ASSET_DIR = ROOT / "assets"
# The key under which a generated notebook records the digest of its generated content.
META_KEY = "triton_puzzles"
# The course's public home when neither pyproject.toml nor the installed metadata says otherwise.
DEFAULT_URL = "https://github.com/triton-puzzles/triton-puzzles-course"


def course_url() -> str:
    """The course's public home: `[project.urls] Repository` in pyproject.toml (one setting for the
    Colab badge and the Colab install), or the installed package's metadata outside a checkout."""
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():
        url = _repository_from_pyproject(pyproject.read_text())
        if url:
            return url
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        for entry in metadata("triton-puzzles-course").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "repository":
                return url.strip()
    except PackageNotFoundError:
        pass
    return DEFAULT_URL


def _repository_from_pyproject(text: str) -> str | None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: read the one line this needs
        section = None
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("["):
                section = line.strip("[] ")
            elif section == "project.urls" and "=" in line:
                key, _, value = line.partition("=")
                if key.strip().strip('"') == "Repository":
                    return value.strip().strip('"\'')
        return None
    return tomllib.loads(text).get("project", {}).get("urls", {}).get("Repository")


def github_repo(url: str) -> str:
    """`owner/name` of a GitHub URL (the Colab badge opens notebooks by that path)."""
    return url.removesuffix("/").removesuffix(".git").split("github.com/", 1)[-1]


COURSE_URL = course_url()
GITHUB_REPO = github_repo(COURSE_URL)
COLAB_URL = "https://colab.research.google.com/github/{repo}/blob/main/notebooks/{name}"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

# The set-up cell's first line: Colab shows it as the cell's title, its code folded away (a "form").
SETUP_TITLE = "#@title Set-up: run this cell first (it finds the course, or installs it on Colab)"
# Its next line (the first of copies made before the title): the grader recognises the cell by it and does not run
# its imports (os, sys, subprocess: what installs the course, which a graded file may not import; load_rules.py).
SETUP_HEADER = "# Set-up: use the installed course"


def is_setup_cell(source: str) -> bool:
    """The course's set-up cell, with its title line (Colab's form) or without (copies made before it)."""
    lines = source.lstrip().splitlines()
    if lines and lines[0].startswith("#@title"):
        lines = lines[1:]
    return bool(lines) and lines[0].startswith(SETUP_HEADER)


SETUP_SOURCE = f"""\
{SETUP_TITLE}
{SETUP_HEADER} (`make lab` installs it), else a checkout in a folder above this
# notebook, else (Colab) install it. TRITON_PUZZLES_PIP replaces what is installed (a fork, a wheel).
import importlib
import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path

if importlib.util.find_spec("puzzles") is None:
    _course = next((d for d in [Path.cwd(), *Path.cwd().parents]
                    if (d / "pyproject.toml").is_file() and (d / "puzzles" / "__init__.py").is_file()), None)
    if _course is not None:
        sys.path.insert(0, str(_course))
    elif "google.colab" in sys.modules or "TRITON_PUZZLES_PIP" in os.environ:
        _what = shlex.split(os.environ.get("TRITON_PUZZLES_PIP", "git+{COURSE_URL}"))
        _pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *_what], capture_output=True, text=True)
        if _pip.returncode != 0:  # say what failed and what to do, not a bare CalledProcessError
            raise RuntimeError(
                f"could not install the course: `pip install {{' '.join(_what)}}` failed "
                f"(exit {{_pip.returncode}}):\\n{{_pip.stderr.strip()[-1500:]}}\\n"
                "Check that this runtime reaches the internet (on Colab: Runtime > Disconnect and delete "
                "runtime, then run this cell again), or install from a file: upload the course's wheel and set "
                "os.environ['TRITON_PUZZLES_PIP'] = '/content/<the wheel>' above this line.") from None
        importlib.invalidate_caches()
    else:
        raise ModuleNotFoundError("the course is not installed: run `make lab` in the course's folder, "
                                  "or `pip install git+{COURSE_URL}`")
"""

IMPORTS_SOURCE = """\
import torch
import triton
import triton.language as tl

from puzzles import Float32, Int32, Tensor, test  # `import puzzles` picks the interpreter when there is no GPU
"""


CSS_PIXELS_PER_INCH = 96


class MissingDiagram(FileNotFoundError):
    """A puzzle's diagram is not drawn yet: the notebook that embeds it cannot be written."""


def diagram_markdown(p: Puzzle) -> str:
    """The puzzle's diagram inlined as a PNG data: URI, so the notebook renders on its own (Colab,
    nbviewer, VS Code, GitHub: GitHub does not show cell attachments) with no assets/ beside it.
    PNG, not SVG: Colab's markdown shows no SVG data URI. The PNG is drawn for high-density screens
    and records its dpi: the width attribute shows it at its natural size, read from the file."""
    from PIL import Image  # matplotlib's own PNG writer is Pillow

    path = ASSET_DIR / f"{p.id}.png"
    if not path.exists():
        raise MissingDiagram(f"assets/{path.name} is missing: `python -m puzzles diagrams` draws it (a new puzzle's "
                             "diagram comes first, then its notebook: `make diagrams notebooks`)")
    data = path.read_bytes()
    with Image.open(io.BytesIO(data)) as image:
        width = round(image.size[0] * CSS_PIXELS_PER_INCH / image.info["dpi"][0])
    png = base64.b64encode(data).decode("ascii")
    return (f'<img src="data:image/png;base64,{png}" width="{width}" '
            f'alt="diagram of puzzle {p.number}: {p.title}">')


def notebook_name(p: Puzzle) -> str:
    return f"{p.id}.ipynb"


def _cell(kind: str, source: str, cell_id: str, tags: tuple[str, ...] = ()) -> dict:
    cell: dict = {"cell_type": kind, "id": cell_id, "metadata": {"tags": list(tags)} if tags else {},
                  "source": _lines(source.strip("\n") + "\n" if kind == "code" else source.strip("\n"))}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def setup_cell(cell_id: str) -> dict:
    """The set-up cell, its code folded away so that a notebook opens on its title and statement, not on
    install logic: JupyterLab and Notebook 7 fold a cell whose metadata says `jupyter.source_hidden` (a click
    on the bar shows it), Colab one whose metadata says `cellView: form` (its `#@title` line stays in view)."""
    cell = _cell("code", SETUP_SOURCE, cell_id)
    cell["metadata"] = {"cellView": "form", "jupyter": {"source_hidden": True}}
    return cell


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and lines[-1].endswith("\n") and text.endswith("\n"):
        lines[-1] = lines[-1].rstrip("\n")
    return lines


def _notebook(cells: list[dict]) -> dict:
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "colab": {"provenance": []},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# The table of every reference against torch.compile (benchmarks/compile_baseline.py), cited by the notebooks.
COMPILE_BASELINE_RESULTS = "benchmarks/results/nvidia-h100-80gb-hbm3/compile_baseline.md"


def spec_source(p: Puzzle) -> str:
    """The spec code of a catalog module: everything but its docstring, the Puzzle record and
    the course's own imports, so the notebook shows exactly the code the grader runs."""
    module = Path(__import__(p.spec.__module__, fromlist=["_"]).__file__)
    text = module.read_text()
    tree = ast.parse(text)
    lines = text.splitlines()
    keep: list[tuple[ast.stmt, str]] = []
    # A name the spec itself calls (puzzle 24's `rand`, Triton's generator in PyTorch) keeps its import from
    # the course; the course's other imports serve the Puzzle record only.
    spec_node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == p.spec.__name__)
    spec_names = {n.id for n in ast.walk(spec_node) if isinstance(n, ast.Name)}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
            continue  # module docstring
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("puzzles") and not any(
                (alias.asname or alias.name) in spec_names for alias in node.names):
            continue
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PUZZLE" for t in node.targets):
            continue
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the text of the notebook's extra cells (BENCHMARK_CODE ...), shown in cells of their own
        start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        code = "\n".join(lines[start - 1 : node.end_lineno])
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("puzzles."):
            code = code.replace(f"from {node.module} import", "from puzzles import", 1)  # its public name
        keep.append((node, code))
    imports = [k for _, k in keep if k.startswith(("import ", "from "))]
    body = [(n, k) for n, k in keep if not k.startswith(("import ", "from "))]
    definition = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    text = ""
    for i, (node, code) in enumerate(body):
        # Two blank lines around a function or class (PEP 8); constants one after another stay together.
        if i:
            text += "\n\n\n" if isinstance(node, definition) or isinstance(body[i - 1][0], definition) else "\n"
        text += code
    return "\n".join(imports) + ("\n\n\n" if imports else "") + text + "\n"


def grading_call(p: Puzzle) -> str:
    sizes = {k: v for k, v in p.canonical.items() if not k.startswith("B")}
    blocks = {k: v for k, v in p.canonical.items() if k.startswith("B")}
    if p.autotune:  # the configs give the blocks; a B here would be one no config uses
        return f"test({p.kernel_name}, {p.spec_name}, nelem={sizes})\n"
    return f"test({p.kernel_name}, {p.spec_name}, nelem={sizes}, B={blocks})\n"


def puzzle_notebook(p: Puzzle) -> dict:
    name = notebook_name(p)
    colab = COLAB_URL.format(repo=GITHUB_REPO, name=name)
    hints = "\n\n".join(
        f"<details><summary>Hint {i}</summary>\n\n{textwrap.dedent(h).strip()}\n\n</details>"
        for i, h in enumerate(p.hints, 1))
    unused = f" `{'`, `'.join(p.unused_sizes)}` is passed but not used." if p.unused_sizes else ""
    sizes_text = "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) for s in p.sizes)
    cells = [
        _cell("markdown", f"[![Open In Colab]({COLAB_BADGE})]({colab})\n\n"
              f"# Puzzle {p.number}: {p.title}", f"p{p.number}-title"),
        setup_cell(f"p{p.number}-setup"),
        _cell("code", IMPORTS_SOURCE, f"p{p.number}-imports"),
        _cell("markdown", textwrap.dedent(p.statement).strip(), f"p{p.number}-statement"),
        # In a cell of its own, so the statement's source stays readable.
        _cell("markdown", diagram_markdown(p), f"p{p.number}-diagram"),
        _cell("markdown", "## The spec\n\nWhat the kernel must compute, in plain PyTorch. The annotations give each "
              "tensor's dtype and shape; the grader draws random inputs from them.", f"p{p.number}-spec-title"),
        _cell("code", spec_source(p), f"p{p.number}-spec"),
        *(_cell(kind, source, f"p{p.number}-lead-{i}") for i, (kind, source) in enumerate(p.lead_cells, 1)),
        _cell("markdown", f"## Your kernel\n\nSignature: `{kernel_signature(p)}`.{unused}\n\n"
              f"The grader runs it at these sizes (the first is the one below): {sizes_text}. "
              "Replace the `Finish me` line and `pass` with your code.", f"p{p.number}-kernel-title"),
        _cell("code", starter_source(p), f"p{p.number}-kernel", ("starter",)),
        _cell("markdown", "### Hints\n\nOpen one at a time.\n\n" + hints, f"p{p.number}-hints"),
        _cell("markdown", "## Check\n\nThe verdict says, for each size, whether the output is right, which elements "
              "are wrong or never written, and any access outside a tensor (with the program id and your line). "
              "Add `viz=True` to see which elements each program loads and stores: a picture under the verdict. "
              "For an interactive 3-D view of the same accesses, install triton-viz (optional, Triton 3.7 or "
              "older) and run `puzzles.viz.launch_triton_viz(kernel, *args, grid=...)`; on Colab it opens through "
              "Colab's port proxy.", f"p{p.number}-check-title"),
        _cell("code", grading_call(p), f"p{p.number}-grade", ("grade",)),
    ]
    if p.perf_size is not None:
        cells.append(_cell("markdown", speed_text(p), f"p{p.number}-speed"))
    if p.fast_reference is not None:
        cells.append(_cell("markdown", fast_reference_text(p), f"p{p.number}-fast"))
    cells += [_cell(kind, source, f"p{p.number}-more-{i}") for i, (kind, source) in enumerate(p.notebook_cells, 1)]
    return _notebook(cells)


def speed_text(p: Puzzle) -> str:
    """The performance challenge: its size and the least work it needs, from the spec's shapes."""
    from puzzles.course.amounts import fewest_bytes, fmt_bytes, fmt_count, fmt_flops, size_text

    size = p.perf_size or {}
    nbytes = sum(fewest_bytes(p.spec, size))
    flops = p.flops(size) if p.flops else 0
    baseline = p.baseline
    scalar = p.scalar_work(size) if p.scalar_work else None
    todo = ([fmt_flops(flops)] if flops else []) + ([f"{fmt_count(scalar.exps)} exponentials and "
                                                     f"{fmt_count(scalar.fmas)} multiply-adds"] if scalar else [])
    work = f"{fmt_bytes(nbytes)} to move" + (f" and {' and '.join(todo)} to do" if todo else "")
    sizes = size_text(size, ", ")
    also = ([f"that of the library op a user would call instead, {p.library.label}"] if p.library else []) + (
        [f"that of {baseline.name}"] if baseline else [])
    return (f"## Speed (on a GPU)\n\nOn a CUDA GPU, `test({p.kernel_name}, {p.spec_name}, perf=True)` also times your "
            f"kernel at {sizes}: at least {work} (each input read once, the output written once). It reports "
            "the median time, the bandwidth and FLOP rate reached, the fraction of this GPU's roofline (its read "
            "and write bandwidths, matmul rate and elementwise arithmetic rates, measured once and cached) or, "
            "where a launch alone takes longer "
            "than the work, that the size is launch-bound, and the time of the PyTorch spec and of "
            "`torch.compile` of the spec beside it (compiled once, its compile not counted)"
            + "".join(f", {'and ' if i == len(also) - 1 else ''}{that}" for i, that in enumerate(also)) + "."
            + goal_text(p))


def goal_text(p: Puzzle) -> str:
    """The puzzle's speed goal, as its notebook states it ("" without one)."""
    goal = p.speed_goal
    if goal is None:
        return ""
    roofline = (" Its roofline counts the least arithmetic too: the exponentials and multiply-adds at this GPU's "
                "measured rates for them." if p.scalar_work else "")
    library = p.library.label if p.library is not None else ""  # the op a user would call: part of the bar
    cpu = (f"\n\n**Without a GPU** the verdict grades a speed goal too, read from what your kernel's run did in the "
           f"interpreter (every lane's address, in warps of 32, and the 32-byte sectors they touch): "
           f"{p.cpu_speed_goal.text()}. It also predicts the time on an H100 at the size above; "
           "`test(..., efficiency=True, gpu=\"A100\")` gives the same report for another GPU, and for any puzzle."
           if p.cpu_speed_goal is not None else "")
    return (f"\n\n**Goal:** {goal.text(library)} at this size; the report says whether your kernel meets it, and what "
            f"usually closes the gap. Here: {goal.levers}.{roofline}{cpu}")


def fast_reference_text(p: Puzzle) -> str:
    """What the puzzle's second, fast reference changes, and where it and its measurements are."""
    path = p.fast_solution_module.replace(".", "/") + ".py"
    return ("## A faster reference\n\nThis puzzle's reference answer is written to teach, and at the speed "
            "challenge's size it is slower than `torch.compile` of the spec on an H100. A second answer, "
            f"`{path}`, has the same signature and grid (`test()` grades it as it grades yours) and is at least as "
            f"fast as `torch.compile`. What it does differently: {p.fast_reference.changes}\n\n"
            f"Measured on an H100: `{COMPILE_BASELINE_RESULTS.rsplit('/', 1)[0]}/` "
            "(`python benchmarks/compile_baseline.py` writes `compile_baseline.md` there).")


PROGRESS_NAME = "progress.ipynb"


def progress_notebook() -> dict:
    colab = COLAB_URL.format(repo=GITHUB_REPO, name=PROGRESS_NAME)
    return _notebook([
        _cell("markdown", f"[![Open In Colab]({COLAB_BADGE})]({colab})\n\n# Your progress\n\n"
              "Run the cells below to grade every puzzle notebook in this folder: the kernel you wrote in each "
              "one is run by the same `test()` as its grading cell. Each row links to its puzzle. "
              "`make grade` prints the same scoreboard in a terminal.", "progress-title"),
        setup_cell("progress-setup"),
        _cell("code", "from puzzles import progress\n\nprogress()  # or progress(\"path/to/folder\")",
              "progress-board"),
    ])


def primer_notebook() -> dict:
    """Notebook 00: the primer's content (puzzles/course/primer.py) with the course's Colab link and set-up."""
    link = f"[![Open In Colab]({COLAB_BADGE})]({COLAB_URL.format(repo=GITHUB_REPO, name=PRIMER_NAME)})"
    cells = primer_cells(link, SETUP_SOURCE, IMPORTS_SOURCE)
    return _notebook([setup_cell(f"p0-{i}") if source == SETUP_SOURCE else _cell(kind, source, f"p0-{i}")
                      for i, (kind, source) in enumerate(cells)])


def all_notebooks() -> dict[str, dict]:
    books = {PRIMER_NAME: primer_notebook()}
    for p in catalog.all_puzzles():
        books[notebook_name(p)] = puzzle_notebook(p)
    books[PROGRESS_NAME] = progress_notebook()
    for nb in books.values():
        # Each cell's digest too: `workspace --update` tells a cell the learner edited from one the course changed.
        nb["metadata"][META_KEY] = {"digest": content_digest(nb),
                                    "cells": {c["id"]: cell_digest(c) for c in nb["cells"]}}
    return books


def cell_digest(cell: dict) -> str:
    """A digest of one cell's kind and source."""
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    return hashlib.sha256(json.dumps([cell.get("cell_type"), source]).encode()).hexdigest()[:12]


def content_digest(nb: dict) -> str:
    """A digest of what a learner can edit (each cell's kind, source and attachments): outputs and
    metadata do not count, so running a notebook does not make it look edited."""
    cells = [[c.get("cell_type"), "".join(c.get("source", "")), c.get("attachments")] for c in nb.get("cells", [])]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()[:16]


def edited(path: Path) -> bool:
    """True when a generated notebook's content no longer matches the digest it was written with
    (someone typed into it), or it carries no digest (it may hold work this command cannot see)."""
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        return True
    recorded = nb.get("metadata", {}).get(META_KEY, {}).get("digest")
    return recorded != content_digest(nb)


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def write(directory: Path = NOTEBOOK_DIR, force: bool = False) -> tuple[list[Path], list[Path]]:
    """Rewrite the notebooks that differ from the catalog. A notebook that was edited by hand is
    left alone (it may hold a learner's answers) and returned second, unless `force`."""
    directory.mkdir(parents=True, exist_ok=True)
    written, refused = [], []
    for name, nb in all_notebooks().items():
        path = directory / name
        text = dumps(nb)
        if path.exists() and path.read_text() == text:
            continue
        if path.exists() and not force and edited(path):
            refused.append(path)
            continue
        path.write_text(text)
        written.append(path)
    return written, refused


def drift(directory: Path = NOTEBOOK_DIR) -> list[str]:
    """Names of notebooks that are missing, differ from the catalog, or should not be there."""
    books = all_notebooks()
    problems = [name for name, nb in books.items()
                if not (directory / name).exists() or (directory / name).read_text() != dumps(nb)]
    problems += [p.name for p in sorted(directory.glob("*.ipynb")) if p.name not in books]
    return problems
