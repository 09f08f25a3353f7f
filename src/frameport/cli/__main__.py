"""``python -m frameport.cli``: the same as the ``frameport`` command."""

from . import main

raise SystemExit(main())
