# Every target sets up its own virtual environment on a fresh machine (Python 3.11 + make).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,jax,nutpie]"
	touch $(STAMP)

## demo: the main job on the bundled (simulated) example: leaderboard + HTML report
demo: $(STAMP)
	$(BIN)/bayesrank rank --method bayes
	$(BIN)/bayesrank report --output report.html

## test: the whole test suite
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --durations=15

## bench: speed and memory benchmarks (ratios against peers measured in the same run)
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check bayesrank models tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache report.html
