"""``python -m frameport.cli``: the ``frameport`` command, in a process left on the allocators
it started with (``python -m frameport`` chooses them first, as the command does)."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
