PY ?= .venv/bin/python
VENV_STAMP := .venv/.installed

.PHONY: run test test-pure lint bench bench-peer bench-compare install browser postgres clean

SCANNER_PYX := $(wildcard src/omp_session/store/*/_scanner_c.pyx src/omp_session/store/_scanner_c.pyx)

# (pip builds the compiled scanner when a C compiler works; the last line says which one is in use)
$(VENV_STAMP): pyproject.toml setup.py $(SCANNER_PYX)
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,test]'
	$(PY) -c "from omp_session.store import scanner; print(scanner.NOTE)"
	touch $(VENV_STAMP)

install: $(VENV_STAMP)

## run: the web viewer on your omp sessions, or on samples/ when you have none (PORT=8765)
run: $(VENV_STAMP)
	$(PY) -m omp_session.web.run_default --port $(or $(PORT),8765)

## browser: Debian's Chromium for the browser tests (installed once; needs root or sudo)
browser:
	bash .ci/install-browser

## postgres: Debian's PostgreSQL binaries for the PostgreSQL store's tests (installed once)
postgres:
	bash .ci/install-postgres

## test: the whole test suite (what CI runs), on up to 4 cores (pytest-xdist; JOBS=1 runs it serially)
test: $(VENV_STAMP) browser postgres
	$(PY) -m pytest -q -m "not slow" -n $(or $(JOBS),auto) --maxprocesses=4 --cov --cov-report=term:skip-covered

## test-pure: the tests that depend on the scanner, with the pure-Python one forced
test-pure: $(VENV_STAMP)
	OMP_SESSION_PURE_SCANNER=1 $(PY) -m pytest -q -m "not slow" -n $(or $(JOBS),auto) --maxprocesses=4 tests/perf tests/store

## lint: ruff, mypy --strict and the import contracts (lint-imports, pyproject.toml)
lint: $(VENV_STAMP)
	.venv/bin/ruff check src tests bench examples samples setup.py
	.venv/bin/ruff format --check src tests bench examples samples setup.py
	.venv/bin/mypy
	.venv/bin/lint-imports

## bench: performance benchmarks against measured floors (not part of the tests)
bench: $(VENV_STAMP)
	$(PY) -m bench

## bench-peer: omp 18.2.3 on Bun (installed from the npm registry into bench/peer/) beside us
bench-peer: $(VENV_STAMP)
	$(PY) -m bench.peer $(PEER_ARGS)

## bench-compare: this checkout against an earlier commit (BEFORE=rev), interleaved in one run
bench-compare: $(VENV_STAMP)
	$(PY) -m bench.compare --before $(BEFORE) $(COMPARE_ARGS)

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache .coverage
