"""The ``frameport`` command's process (``frameport …``, ``python -m frameport …``): it
chooses its memory allocators before pyarrow loads (see `frameport._core._memory`), then
runs the command. Importing the package loads only its exceptions, and the request layer
loads no pyarrow, so nothing has chosen Arrow's allocator yet."""

from __future__ import annotations

from ._core._memory import choose_allocators


def main() -> int:
    """The ``frameport`` command."""
    choose_allocators()
    from .cli import main as run_command

    return run_command()


if __name__ == "__main__":
    raise SystemExit(main())
