"""The `frameport` command's process: `import frameport` loads none of the heavy libraries,
so the command can choose Arrow's and malloc's allocators before pyarrow loads."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_the_command_takes_arrows_system_allocator() -> None:
    code = (
        "from frameport._core._memory import choose_allocators\n"
        "choose_allocators()\n"
        "import pyarrow\n"
        "print(pyarrow.default_memory_pool().backend_name)"
    )
    assert run_python(code) == "system"
    assert run_python(code, ARROW_DEFAULT_MEMORY_POOL="mimalloc") == "mimalloc"
    assert run_python("import pyarrow; print(pyarrow.default_memory_pool().backend_name)") in (
        "mimalloc",
        "jemalloc",
    )


def test_python_dash_m_frameport_is_the_command() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "frameport", "--version"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert version == f"frameport {fp.__version__}"
