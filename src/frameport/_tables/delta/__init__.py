"""A Delta Lake table kept equal to a table query's rows (``TableQuery.sync``): a full
snapshot first, then the rows updated since the last run merged by ``$id``, and the rows gone
found by probed ranges (`changes`); with ``follow``, kept current by a commit per interval
of the view's changes (`_follow`). The ``delta`` extra is imported by this package, which
``TableQuery.sync`` imports when it runs."""

from ._follow import DEFAULT_INTERVAL, DEFAULT_RECONCILE, follow_delta
from ._refresh import SyncReport, sync_delta

__all__ = ["DEFAULT_INTERVAL", "DEFAULT_RECONCILE", "SyncReport", "follow_delta", "sync_delta"]
