#!/usr/bin/env bash
# Install what the browser test (tests/browser/) needs; safe to run again.
#   - Debian's `chromium` package (/usr/bin/chromium), when it is missing;
#   - Playwright's Python API and JupyterLab (and matplotlib, which quickstart.ipynb plots
#     with), into the project's venv.
# Playwright never downloads a browser here: the test drives /usr/bin/chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV_PYTHON="${VENV_PYTHON:-.venv/bin/python}"

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif [ -n "${CI:-}" ]; then
        SUDO="sudo"
    else
        echo "install-browser-deps: /usr/bin/chromium is missing and this is not root;" \
            "the browser test will be skipped (sudo apt-get install chromium to run it)." >&2
        SUDO="skip"
    fi
    if [ "$SUDO" != "skip" ]; then
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -q
        $SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
    fi
fi

if [ ! -x "$VENV_PYTHON" ]; then
    echo "install-browser-deps: $VENV_PYTHON is missing; create the venv first (make)." >&2
    exit 1
fi
if ! "$VENV_PYTHON" -c "import playwright, jupyterlab, matplotlib" 2>/dev/null; then
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 "$VENV_PYTHON" -m pip install --quiet \
        "playwright>=1.45" "jupyterlab>=4.2" "matplotlib>=3.8"
fi
