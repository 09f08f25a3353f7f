"""``python -m frameport.cli``: the same as the ``frameport`` command."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
