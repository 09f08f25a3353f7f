PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the demo needs only the package and its local service; the development tools
# (linters, JupyterLab, Playwright, MkDocs) are installed by the first target that needs them.
DEMO_STAMP := $(VENV)/.installed-local
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: demo test lint docs docs-images browser-deps bench serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# --no-compile: Python compiles the modules the demo imports as it imports them, instead of
# pip compiling every module of pandas, pyarrow and numpy up front (half the install's time).
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install --quiet --no-compile -e '.[local]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml $(DEMO_STAMP)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PIP) install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/frameport demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks docs/hooks
	$(BIN)/ruff format --check src tests benchmarks docs/hooks
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

# Debian's chromium for the browser test (tests/browser/); a no-op once installed.
browser-deps: $(STAMP)
	bash scripts/install-browser-deps.sh

# The documentation site, built strictly (a warning, a broken link or reference fails) into site/.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The widget pictures of the notebook-widgets guide, taken again by the browser test.
docs-images: browser-deps
	FRAMEPORT_DOCS_SCREENSHOTS=1 $(BIN)/pytest tests/browser

# The tests run on every core (pytest-xdist): each worker starts its own local service.
test: lint docs browser-deps
	$(BIN)/pytest -n auto

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

serve: $(DEMO_STAMP)
	$(BIN)/frameport serve

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache site
