"""What changed in a table since an earlier read: the service's clock (the watermark of the
next read), the rows updated since a watermark (`updated_since`) and the rows gone, found by
counting ranges of ``$sequence`` (`gone_ids`, `gone_sequences`). The Delta sync and the
incremental backups stand on it, and so does `changes()`, a view's changes as they happen
(`_feed`: the realtime socket for speed, these reads for truth; `_view`: the rows it knows
and its change batches), and `live()`, a view's current rows kept current by that feed
(`_live`)."""

from ._clock import minus_seconds, service_now, service_text, updated_since
from ._feed import (
    DEFAULT_HEARTBEAT,
    DEFAULT_LAG,
    DEFAULT_POLL,
    AsyncChanges,
    ChangeFeed,
    Changes,
    ChangesStatus,
    Since,
)
from ._gone_rows import gone_ids, gone_sequences, sorted_sequences
from ._live import AsyncLiveTable, LiveTable, started_live_table

__all__ = [
    "DEFAULT_HEARTBEAT",
    "DEFAULT_LAG",
    "DEFAULT_POLL",
    "AsyncChanges",
    "AsyncLiveTable",
    "ChangeFeed",
    "Changes",
    "ChangesStatus",
    "LiveTable",
    "Since",
    "gone_ids",
    "gone_sequences",
    "minus_seconds",
    "service_now",
    "service_text",
    "sorted_sequences",
    "started_live_table",
    "updated_since",
]
