"""Every notebook is clean, matches the catalog, and runs top to bottom: as shipped (the grading
cell says "not yet" without raising) and with the reference kernels in place of the starters
(every grading cell passes). Both runs of a notebook share one execution: the solved run's cells
follow the shipped ones in the same kernel."""

from __future__ import annotations

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from nbclient import NotebookClient
from warm_forks import kernels_forked_from_a_warm_parent

from puzzles.course import catalog, notebooks
from puzzles.course.solution_source import reference_source

NOTEBOOK_DIR = notebooks.NOTEBOOK_DIR
NAMES = sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb"))
BY_NAME = {f"{p.id}.ipynb": p for p in catalog.all_puzzles()}


def test_notebooks_match_the_catalog():
    assert notebooks.drift() == [], ("run `python -m puzzles notebooks` and commit the result (it refuses to "
                                     "overwrite a notebook edited by hand: learners work in my-notebooks/)")


def test_a_hand_edit_is_detected(tmp_path):
    for name, nb in notebooks.all_notebooks().items():
        (tmp_path / name).write_text(notebooks.dumps(nb))
    edited = tmp_path / "01_constant_add.ipynb"
    edited.write_text(edited.read_text().replace("Finish me", "Finish this"))
    assert notebooks.drift(tmp_path) == ["01_constant_add.ipynb"]


def test_the_notebooks_import_the_course_by_its_public_names_only():
    """`from puzzles import X` with X in `puzzles.__all__`, or `import puzzles`: never a module's path, which
    moves with the code (puzzles/moved.py keeps only the paths shipped notebooks used importable)."""
    import ast

    import puzzles

    found = []
    for name, nb in notebooks.all_notebooks().items():
        for index, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "\n".join(line for line in "".join(cell["source"]).splitlines() if not line.startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "puzzles":
                    names = [alias.name for alias in node.names]
                    if node.module != "puzzles" or not set(names) <= set(puzzles.__all__):
                        found.append(f"{name} [cell {index}]: from {node.module} import {', '.join(names)}")
                elif isinstance(node, ast.Import):
                    found += [f"{name} [cell {index}]: import {a.name}" for a in node.names
                              if a.name.startswith("puzzles.")]
    assert found == []


@pytest.mark.parametrize("name", NAMES)
def test_a_notebook_opens_on_its_title_with_the_set_up_code_folded(name):
    # JupyterLab folds a cell whose metadata says jupyter.source_hidden; Colab shows a `cellView: form` cell as
    # its #@title line. The set-up cell runs the same code either way (tests/learner/test_colab.py runs it).
    nb = json.loads((NOTEBOOK_DIR / name).read_text())
    assert "".join(nb["cells"][0]["source"]).lstrip().startswith("[![Open In Colab]")
    assert "\n# " in "".join(nb["cells"][0]["source"])  # the title, in the first cell
    (setup,) = [c for c in nb["cells"] if notebooks.SETUP_TITLE in "".join(c["source"])]
    assert "".join(setup["source"]) == notebooks.SETUP_SOURCE.strip("\n")
    assert setup["source"][0].startswith("#@title ")
    assert setup["metadata"] == {"cellView": "form", "jupyter": {"source_hidden": True}}
    assert nb["cells"].index(setup) <= 1 or name == "00_primer.ipynb"  # right under the title


@pytest.mark.parametrize("name", NAMES)
def test_committed_without_outputs(name):
    nb = json.loads((NOTEBOOK_DIR / name).read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_every_puzzle_has_a_notebook_with_its_diagram_and_grading_cell():
    for p in catalog.all_puzzles():
        nb = nbformat.read(NOTEBOOK_DIR / f"{p.id}.ipynb", as_version=4)
        tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
        assert tags.count("starter") == 1 and tags.count("grade") == 1
        text = "".join(c.source for c in nb.cells)
        # The diagram is embedded (a data: URI of assets/NN.png), so the notebook renders alone in Colab,
        # nbviewer, VS Code or GitHub; PNG because Colab's markdown renders no SVG data URI.
        assert "../assets/" not in text and "colab.research.google.com" in text
        png = base64.b64encode((notebooks.ASSET_DIR / f"{p.id}.png").read_bytes()).decode()
        assert f'<img src="data:image/png;base64,{png}" width="768"' in text
        assert "data:image/svg" not in text
        assert "<details>" in text


# The cells appended after a notebook's own to run it again with the reference kernel, in the same kernel
# process: one execution covers both the notebook as shipped and the notebook solved.
REFERENCE_RUN = "reference-run"


def _execute(name: str) -> nbformat.NotebookNode:
    """The notebook as shipped and then, for a puzzle, its cells from the starter on again with the
    reference in the starter's place (tagged REFERENCE_RUN), in one kernel."""
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    p = BY_NAME.get(name)
    if p is not None:
        first = next(i for i, c in enumerate(nb.cells) if "starter" in c.metadata.get("tags", []))
        again = [nbformat.from_dict(c) for c in nb.cells[first:] if c.cell_type == "code"]
        again[0].source = reference_source(p)
        for cell in again:
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), REFERENCE_RUN]
        nb.cells += again
    client = NotebookClient(nb, timeout=180, startup_timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
    return nb


def _run(name: str) -> nbformat.NotebookNode | Exception:
    try:
        return _execute(name)
    except Exception as err:  # noqa: BLE001 - report per notebook
        return err


class _Executions(dict):
    """notebook -> the executed notebook or its error; a missing one runs on demand."""

    def __missing__(self, name: str) -> nbformat.NotebookNode | Exception:
        self[name] = _run(name)
        return self[name]


@pytest.fixture(scope="module")
def executed(request) -> dict[str, nbformat.NotebookNode | Exception]:
    """Run the selected notebooks once each, two at a time (each in its own kernel, forked from a process that has
    imported torch and Triton: tests/support/warm_forks.py; on a machine of many cores, one per two cores, up to eight:
    the GPU box). Under pytest-xdist every worker collects every test but runs only some: there each notebook runs
    when a test asks, unless whole files go to one worker (`--dist loadfile`, as `make test` runs)."""
    results = _Executions()
    whole_files = request.config.getoption("dist", "no") in ("no", "loadfile")
    if os.environ.get("PYTEST_XDIST_WORKER") and not whole_files:
        return results
    wanted = sorted({item.callspec.params.get("name") for item in request.session.items
                     if item.module is request.module and hasattr(item, "callspec")} & set(NAMES))
    with kernels_forked_from_a_warm_parent(), \
            ThreadPoolExecutor(max_workers=min(8, max(2, (os.cpu_count() or 2) // 2))) as pool:
        results.update(zip(wanted, pool.map(_run, wanted), strict=True))
    return results


def _part(nb: nbformat.NotebookNode, solved: bool) -> list[nbformat.NotebookNode]:
    """The cells of the run as shipped, or of the run with the reference."""
    return [c for c in nb.cells if (REFERENCE_RUN in c.metadata.get("tags", [])) == solved]


def _grading_html(cells: list[nbformat.NotebookNode]) -> str:
    graded = [c for c in cells if "grade" in c.metadata.get("tags", [])]
    return "".join(o.get("data", {}).get("text/html", "") for c in graded for o in c.outputs)


def _errors(cells: list[nbformat.NotebookNode]) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for c in cells if c.cell_type == "code" for o in c.outputs
            if o.output_type == "error"]


@pytest.mark.notebooks
@pytest.mark.parametrize("name", NAMES)
def test_runs_as_shipped(executed, name):
    nb = executed[name]
    assert not isinstance(nb, Exception), nb
    shipped = _part(nb, solved=False)
    assert _errors(shipped) == []
    if name in BY_NAME:
        assert "Not yet" in _grading_html(shipped)


@pytest.mark.notebooks
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_runs_with_the_references(executed, name):
    nb = executed[name]
    assert not isinstance(nb, Exception), nb
    solved = _part(nb, solved=True)
    assert _errors(solved) == []
    html = _grading_html(solved)
    assert "Passed" in html and "Not yet" not in html


WILD_SGD = """
@triton.jit
def sgd_kernel(addresses_ptr, numels_ptr, chunks_ptr, z_ptr, K, lr, momentum, weight_decay, B0: tl.constexpr):
    # A wild pointer: 64 TB past the new parameters' address, where nothing is mapped.
    p_out = (tl.load(addresses_ptr + 3 * K) + (1 << 46)).to(tl.pointer_type(tl.float32))
    tl.store(p_out + tl.arange(0, B0), tl.zeros([B0], dtype=tl.float32))
"""


@pytest.mark.notebooks
def test_a_wild_pointer_in_notebook_21_gives_verdicts_not_a_dead_kernel(tmp_path):
    # Run All with a kernel that stores through a wild pointer: the grading cell reports it and the
    # "one launch against a loop" cell, which launches the same kernel outside test(), says it
    # stopped; the notebook's kernel lives on (nbclient raises DeadKernelError otherwise).
    nb = nbformat.read(NOTEBOOK_DIR / "21_multi_tensor_apply.ipynb", as_version=4)
    for cell in nb.cells:
        if "starter" in cell.metadata.get("tags", []):
            cell.source = WILD_SGD
    nb.cells.append(nbformat.v4.new_code_cell("print('still alive', 6 * 7)"))
    path = tmp_path / "21_wild.ipynb"
    nbformat.write(nb, path)
    client = NotebookClient(nb, timeout=180, startup_timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
    assert _errors(nb.cells) == []
    assert "Not yet" in _grading_html(nb.cells)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "The comparison stopped" in text
    assert "crashed" in text or "the kernel faulted on the GPU" in text  # a CPU's child, or the GPU worker
    assert "still alive 42" in text


def test_a_notebook_whose_diagram_is_not_drawn_yet_says_which_command_draws_it(tmp_path, monkeypatch):
    from puzzles.course import notebooks as books

    monkeypatch.setattr(books, "ASSET_DIR", tmp_path)
    with pytest.raises(books.MissingDiagram, match=r"assets/01_constant_add\.png is missing: `python -m puzzles "
                                                   r"diagrams` draws it"):
        books.diagram_markdown(catalog.get(1))
