"""Giving freed memory back to the operating system.

A read allocates and frees many buffers of a page's size (bodies, decoding temporaries).
glibc's malloc keeps such freed memory in its heaps for reuse, so after a read the process
still holds it, and converting the result to pandas then adds to it. `release_free_memory`
asks glibc to return its free pages (``malloc_trim``); elsewhere it does nothing.

>>> release_free_memory()
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


def release_free_memory() -> None:
    """Return the C heap's free pages to the operating system, where the C library can."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:  # the symbols the process already has loaded: libc's among them
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl), or Windows
        return None
    return trim
