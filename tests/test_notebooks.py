"""Every notebook is clean, matches the catalog, and runs top to bottom: as shipped (the grading
cell says "not yet" without raising) and with the reference kernels in place of the starters
(every grading cell passes)."""

from __future__ import annotations

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from nbclient import NotebookClient

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


def _execute(name: str, with_references: bool) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    if with_references:
        p = BY_NAME[name]
        for cell in nb.cells:
            if "starter" in cell.metadata.get("tags", []):
                cell.source = reference_source(p)
    client = NotebookClient(nb, timeout=180, startup_timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
    return nb


def _run(job: tuple[str, bool]) -> nbformat.NotebookNode | Exception:
    try:
        return _execute(*job)
    except Exception as err:  # noqa: BLE001 - report per notebook
        return err


class _Executions(dict):
    """(notebook, with references) -> the executed notebook or its error; a missing one runs on demand."""

    def __missing__(self, job: tuple[str, bool]) -> nbformat.NotebookNode | Exception:
        self[job] = _run(job)
        return self[job]


@pytest.fixture(scope="module")
def executed(request) -> dict[tuple[str, bool], nbformat.NotebookNode | Exception]:
    """Run the selected notebooks once, two at a time (each in its own kernel). Under pytest-xdist every
    worker collects every test but runs only some: there each notebook runs when its test asks for it."""
    results = _Executions()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return results
    wanted = {item.callspec.params.get("name") for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec")}
    jobs = [(name, False) for name in NAMES if name in wanted] + \
        [(name, True) for name in NAMES if name in BY_NAME and name in wanted]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results.update(zip(jobs, pool.map(_run, jobs), strict=True))
    return results


def _grading_html(nb: nbformat.NotebookNode) -> str:
    cells = [c for c in nb.cells if "grade" in c.metadata.get("tags", [])]
    return "".join(o.get("data", {}).get("text/html", "") for c in cells for o in c.outputs)


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.output_type == "error"]


@pytest.mark.notebooks
@pytest.mark.parametrize("name", NAMES)
def test_runs_as_shipped(executed, name):
    nb = executed[(name, False)]
    assert not isinstance(nb, Exception), nb
    assert _errors(nb) == []
    if name in BY_NAME:
        assert "Not yet" in _grading_html(nb)


@pytest.mark.notebooks
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_runs_with_the_references(executed, name):
    nb = executed[(name, True)]
    assert not isinstance(nb, Exception), nb
    assert _errors(nb) == []
    html = _grading_html(nb)
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
    assert _errors(nb) == []
    assert "Not yet" in _grading_html(nb)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "The comparison stopped" in text
    assert "crashed" in text or "the kernel faulted on the GPU" in text  # a CPU's child, or the GPU worker
    assert "still alive 42" in text
