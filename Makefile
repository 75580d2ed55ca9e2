# Every target sets up its own virtual environment on a fresh machine (Python >= 3.12 + make).
# The first interpreter that runs and is >= 3.12: python3.12 .. python3.14, python3, then any
# pyenv-installed 3.12+ (a pyenv shim exists for every installed version but runs only the
# selected ones).
FIND_PYTHON := for c in python3.12 python3.13 python3.14 python3 \
	$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do \
	if $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
	command -v $$c; exit 0; fi; done; exit 1
PYTHON ?= $(shell $(FIND_PYTHON))
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-real test-slow bench bench-scale lint clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "bayesrank needs Python >= 3.12 (python3.12 or newer)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,jax,nutpie,cluster]"
	# the contextual Bradley-Terry's test oracle (tests/test_contextual.py); without its pins of
	# jax==0.8.1 and numpy==2.3.3, which would move every test onto those versions
	$(BIN)/python -m pip install --quiet --no-deps "arena-rank==0.1.1"
	touch $(STAMP)

## demo: the main job on REAL data (the bundled LiveCodeBench set, 15 LLMs x 713 problems x 10
## samples, CC BY-SA 4.0): leaderboard + HTML report. The simulated example stays for `study`.
LCB := $$($(BIN)/python -c "from bayesrank import datasets; print(datasets.livecodebench_path())")
demo: $(STAMP)
	$(BIN)/bayesrank rank $(LCB) --method bayes
	$(BIN)/bayesrank report $(LCB) --output report.html

## test: the whole test suite. A test still running after 15 minutes fails (SIGALRM, so the worker
## lives); a worker that dies ends the run (xdist 3.8's loadgroup, replacing it, deadlocks at the
## end: pytest-xdist#1378, how the CI run of 2026-12-05 stalled at 2,349 of 2,352 tests)
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15 \
		--timeout=900 --timeout-method=signal --max-worker-restart=0

## test-real: every model fitted with defaults to every real set in ../shared (about 30 minutes),
## the Chatbot Arena battles and the ZeroEval suite included, and the fast and plain builds of
## every model compared at the real sets' full size
test-real: $(STAMP)
	BAYESRANK_REAL_FITS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 \
		tests/test_models_real.py tests/test_fast_path.py tests/test_pairwise_real.py \
		tests/test_suite_real.py --timeout=1800 --timeout-method=signal

## test-slow: the tests marked `extended` (BAYESRANK_SLOW=1), beyond make test's 15 minutes:
## simulation-based calibration of every Bayesian model and likelihood (tests/test_sbc.py,
## minutes per model on 2 cores, results in docs/sbc.md), the default draws' chance of a false
## alarm on simulated chains, and the models' recovery and multimodality checks by full fits
test-slow: $(STAMP)
	BAYESRANK_SLOW=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 \
		--dist loadgroup -m extended tests --timeout=1800 --timeout-method=signal \
		--max-worker-restart=0

## bench-scale: time and peak memory against L x M, 10 x 1,000 up to 1,000 x 20,000, one point at a
## time in a subprocess, each stopped above 8 GB resident (docs/scale.md; hours)
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py --grid full

## bench: speed and memory benchmarks (ratios against peers measured in the same run)
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check bayesrank models tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache report.html
