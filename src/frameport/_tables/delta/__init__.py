"""A Delta Lake table kept equal to a table query's rows (``TableQuery.sync``): a full
snapshot first, then the rows updated since the last run merged by ``$id``, and the rows gone
found by probed ranges (`changes`). The ``delta`` extra is imported by this package, which
``TableQuery.sync`` imports when it runs."""

from ._refresh import SyncReport, sync_delta

__all__ = ["SyncReport", "sync_delta"]
