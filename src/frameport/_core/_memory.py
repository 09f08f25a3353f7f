"""The allocators a bulk job's process chooses, and freed memory given back to the system.

A read or a backup allocates and frees many page-sized buffers from several threads in
turn; glibc's malloc and mimalloc (Arrow's default) keep freed memory for the thread that
freed it, so the process grows with every thread that has held a page. Arrow's system pool
(``ARROW_DEFAULT_MEMORY_POOL``, read once when pyarrow is imported, whatever
`pyarrow.set_memory_pool` says later), two malloc arenas and large blocks mapped on their own
make a full backup peak well below the defaults' peak in the same time
(benchmarks/README.md); a program calling the client can set these three variables for the
same.

>>> release_free_memory()
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable

ARROW_POOL = "system"
"""The Arrow memory pool the command's process uses."""

MALLOC_ARENAS = 2
"""The most malloc arenas the command's process makes."""

MALLOC_MMAP_THRESHOLD = 256 * 1024
"""Blocks of this many bytes and more are mapped on their own."""

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters (malloc.h)
_M_ARENA_MAX = -8


def choose_allocators() -> None:
    """Set the allocators as the module says, where the environment does not; call it before
    pyarrow is imported and before any thread starts. Outside glibc only Arrow's is set."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return
    if "MALLOC_ARENA_MAX" not in os.environ:
        mallopt(_M_ARENA_MAX, MALLOC_ARENAS)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD)


def release_free_memory() -> None:
    """Return the C heap's free pages to the operating system, where the C library can."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


@functools.cache
def _libc_function(name: str) -> Callable[..., int] | None:
    """glibc's function `name`, or None where the C library is another."""
    try:  # the symbols the process already has loaded: libc's among them
        function: Callable[..., int] = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl), or Windows
        return None
    return function
