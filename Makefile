PY ?= .venv/bin/python
VENV_STAMP := .venv/.installed

.PHONY: run test lint bench install browser postgres clean

$(VENV_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,test]'
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

## test: the whole test suite (what CI runs)
test: $(VENV_STAMP) browser postgres
	$(PY) -m pytest -q -m "not slow" --cov --cov-report=term:skip-covered

## lint: ruff, mypy --strict and the import contracts (lint-imports, pyproject.toml)
lint: $(VENV_STAMP)
	.venv/bin/ruff check src tests bench examples samples
	.venv/bin/ruff format --check src tests bench examples samples
	.venv/bin/mypy
	.venv/bin/lint-imports

## bench: performance benchmarks against measured floors (not part of the tests)
bench: $(VENV_STAMP)
	$(PY) -m bench

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache .coverage
