PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: the demo needs only the package and its local service; the development tools
# (linters, JupyterLab, Playwright, MkDocs) are installed by the first target that needs them.
DEMO_STAMP := $(VENV)/.installed-local
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: demo test test-floor lint docs docs-images browser-deps java bench serve clean

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

# Debian's Java runtime for the Spark tests (pyspark's local JVM); a no-op when java is found.
java:
	bash scripts/install-java.sh

# The documentation site, built strictly (a warning, a broken link or reference fails) into site/.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The widget pictures of the notebook-widgets guide, taken again by the browser test.
docs-images: browser-deps
	FRAMEPORT_DOCS_SCREENSHOTS=1 $(BIN)/pytest tests/browser

# The tests run on every core (pytest-xdist): each worker starts its own local service.
test: java lint docs browser-deps
	$(BIN)/pytest -n auto

# The lowest versions pyproject.toml allows for frameport's own dependencies and extras (uv's
# lowest-direct resolution; the test tools at their newest), in a venv of their own, running
# the tests that exercise those libraries: pandas, pyarrow, numpy, httpx, polars, dask and
# fsspec, deltalake, dlt, ipywidgets, and the local service's Starlette and uvicorn.
FLOOR := .venv-floor
FLOOR_TESTS := tests/test_tables_read.py tests/test_tables_write.py tests/test_tables_parquet.py \
	tests/test_tables_inferred.py tests/test_schema.py tests/test_pages.py tests/test_arrow_stream.py \
	tests/test_expr_builder.py tests/test_polars_scan.py tests/test_sql.py tests/test_dask.py \
	tests/test_fsspec.py tests/test_sync_delta.py tests/test_dlt_source.py tests/test_widgets_table.py \
	tests/test_client_errors.py tests/test_client_auth.py tests/test_storage_files.py

test-floor: $(STAMP)
	rm -rf $(FLOOR)
	$(BIN)/uv venv --quiet --python $(BIN)/python $(FLOOR)
	$(BIN)/uv pip install --quiet --python $(FLOOR)/bin/python --resolution lowest-direct \
		-e '.[local,widgets,dask,polars,delta,dlt]'
	$(BIN)/uv pip install --quiet --python $(FLOOR)/bin/python "pytest<9.2" pytest-timeout pytest-xdist \
		hypothesis duckdb
	$(FLOOR)/bin/python -m pytest -n auto -p no:cacheprovider $(FLOOR_TESTS)

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

serve: $(DEMO_STAMP)
	$(BIN)/frameport serve

clean:
	rm -rf $(VENV) $(FLOOR) .mypy_cache .pytest_cache .ruff_cache site
