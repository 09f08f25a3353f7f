PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint browser-deps bench serve clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/frameport demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

# Debian's chromium for the browser test (tests/browser/); a no-op once installed.
browser-deps: $(STAMP)
	bash scripts/install-browser-deps.sh

test: lint browser-deps
	$(BIN)/pytest

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

serve: $(STAMP)
	$(BIN)/frameport serve

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
