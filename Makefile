# Everything a learner, an instructor and CI need; each target sets up on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup lab workspace test grade lint notebooks diagrams bench doctor clean

setup: $(STAMP)

# scripts/setup.py installs torch's CPU build on a machine without an NVIDIA GPU (`--plan` shows how).
# An unsupported Python is told in one line what to install, before any .venv is made with it.
$(STAMP): requirements.txt requirements-grading.txt pyproject.toml scripts/setup.py
	test -x $(PY) || $(PYTHON) scripts/setup.py --check-python
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) scripts/setup.py
	touch $(STAMP)

# Extra JupyterLab arguments: make lab ARGS="--port 8890 --no-browser"
ARGS ?=
lab: workspace  ## open your copy of the course (my-notebooks/) in JupyterLab
	$(VENV)/bin/jupyter lab $$(test "$$(id -u)" = 0 && echo --allow-root) $(ARGS) my-notebooks/00_primer.ipynb

workspace: setup  ## make my-notebooks/, your copy of the notebooks (copies missing ones, never overwrites)
	$(PY) -m puzzles workspace

test: setup  ## (maintainers) the whole suite: engine, puzzles, notebooks, grading command, lint
	$(VENV)/bin/ruff check .
# The suite starts a few hundred Pythons: each reads the course's modules compiled by the first, also where the
# environment says not to write bytecode (PYTHONDONTWRITEBYTECODE; __pycache__/ is ignored by git).
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n 2 --dist loadfile  # both cores; a file's tests stay on one worker

grade: setup  ## your scoreboard over my-notebooks/ (notebooks/ when you have no copy yet)
	$(PY) -m puzzles grade

doctor: setup
	$(PY) -m puzzles doctor

notebooks: setup  ## (maintainers) rebuild notebooks/ from the catalog; refuses to overwrite an edited one
	$(PY) -m puzzles notebooks

diagrams: setup  ## (maintainers) redraw assets/ from the puzzles' shapes, then `make notebooks` embeds them
	$(PY) -m puzzles diagrams
	$(PY) -m puzzles notebooks

bench: setup  ## GPU benchmarks (each prints a message and exits without a GPU)
	$(PY) benchmarks/run_all.py
	$(PY) benchmarks/gptq/bench.py --out benchmarks/gptq/results/latest

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

.PHONY: versions
versions: setup  ## run every test file that judges kernels under each supported triton (envs in .venvs/; about 12 min a version)
	$(PY) scripts/triton_versions.py
