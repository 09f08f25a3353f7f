"""The `frameport` command's process: `import frameport` loads none of the heavy libraries,
so the command can choose Arrow's and malloc's allocators before pyarrow loads."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

import frameport as fp


def run_python(code: str, **environment: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    return subprocess.run(
        [sys.executable, "-c", code], env={**env, **environment},
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def test_importing_frameport_loads_no_heavy_library_until_a_name_is_used() -> None:
    code = (
        "import sys, frameport as fp\n"
        "heavy = ('pyarrow', 'pandas', 'httpx', 'numpy')\n"
        "print(*[name in sys.modules for name in heavy])\n"
        "fp.Client\n"
        "print(*[name in sys.modules for name in heavy])"
    )
    before, after = run_python(code).splitlines()
    assert before == "False False False False"
    assert after == "True True True True"


# Runs the command as ``python -m frameport --version`` does, and prints the pool pyarrow
# takes once the command is done (pyarrow reads ARROW_DEFAULT_MEMORY_POOL when it loads).
COMMAND_THEN_POOL = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print(__import__('pyarrow').default_memory_pool().backend_name))\n"
    "sys.argv = ['frameport', '--version']\n"
    "runpy.run_module('frameport', run_name='__main__', alter_sys=True)"
)


def test_the_command_takes_arrows_system_allocator() -> None:
    assert run_python(COMMAND_THEN_POOL).splitlines()[-1] == "system"


def test_the_command_keeps_an_allocator_the_caller_chose() -> None:
    others = [name for name in pa.supported_memory_backends() if name != "system"]
    if not others:
        pytest.skip("this pyarrow has no allocator but the system's")
    chosen = others[0]
    pool = run_python(COMMAND_THEN_POOL, ARROW_DEFAULT_MEMORY_POOL=chosen).splitlines()[-1]
    assert pool == chosen


def test_python_dash_m_frameport_is_the_command() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "frameport", "--version"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert version == f"frameport {fp.__version__}"
