# binlake: `make demo` runs the main job, `make test` checks everything.
# Both build the virtualenv from nothing (.venv in the repo root).

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The hot path compiled by mypyc (setup.py; the list is in shared/native.py)
# and the Rust fast lane (shared/fastlane), rebuilt in place when one of their
# sources changes. BINLAKE_COMPILE=0 removes both and runs pure Python.
COMPILE := $(if $(filter 0,$(BINLAKE_COMPILE)),0,1)
NATIVE := $(VENV)/.compiled-$(COMPILE)
COMPILED_SOURCES := $(shell $(PYTHON) -c "import sys; sys.path.insert(0, '.'); from shared.native import compiled_sources; print(' '.join(compiled_sources()))" 2>/dev/null)

.PHONY: install native demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	BINLAKE_COMPILE=0 $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

RUST_SOURCES := shared/fastlane/Cargo.toml shared/fastlane/Cargo.lock $(wildcard shared/fastlane/src/*.rs)

$(NATIVE): $(STAMP) setup.py shared/native.py $(COMPILED_SOURCES) $(RUST_SOURCES)
	rm -f $(VENV)/.compiled-* *__mypyc.cpython-*.so shared/*__mypyc.cpython-*.so $(addsuffix .cpython-*.so,$(basename $(COMPILED_SOURCES)))
	rm -f shared/fastlane/_native.cpython-*.so
	if [ $(COMPILE) = 1 ]; then $(BIN)/python setup.py --quiet build_ext --inplace; fi
	touch $(NATIVE)

install: $(NATIVE)

native: $(NATIVE)

demo: $(NATIVE)
	$(BIN)/python -m shared.cli.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck $(NATIVE)
	$(BIN)/pytest

bench: $(NATIVE)
	$(BIN)/python -m tests.bench.run

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
	find . -name '*.cpython-*.so' -not -path './.venv/*' -delete
