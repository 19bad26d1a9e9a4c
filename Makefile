# Everything a learner, an instructor and CI need; each target sets up on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup lab test grade lint notebooks diagrams bench doctor clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

lab: setup  ## open the course in JupyterLab
	$(VENV)/bin/jupyter lab notebooks/00_primer.ipynb

test: setup  ## the whole suite: engine, puzzles, notebooks, grading command, lint
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

grade: setup  ## your scoreboard over notebooks/
	$(PY) -m puzzles grade

doctor: setup
	$(PY) -m puzzles doctor

notebooks: setup  ## rebuild notebooks/ from the catalog
	$(PY) -m puzzles notebooks

diagrams: setup  ## redraw assets/ from the puzzles' shapes
	$(PY) -m puzzles diagrams

bench: setup  ## GPU benchmarks (each prints a message and exits without a GPU)
	$(PY) benchmarks/run_all.py
	$(PY) benchmarks/gptq/bench.py --out benchmarks/gptq/results/latest

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

.PHONY: versions
versions: setup  ## grade every reference and the wrong-kernel zoo under each supported triton (envs in .venvs/)
	$(PY) scripts/triton_versions.py
