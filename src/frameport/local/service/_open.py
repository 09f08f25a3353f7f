"""Opening a service's state: make it, then settle what a crash left before any request.

Chunked uploads a crash interrupted are finished or dropped (`uploads._recovery`), commits it
interrupted are marked failed, and row tables get the sequence indexes they lack.
"""

from __future__ import annotations

from ..store._rowstore import add_sequence_indexes
from ..store._transactions import fail_interrupted_commits
from ._state import ServiceConfig, ServiceState
from .uploads._recovery import recover_uploads


def open_state(config: ServiceConfig) -> ServiceState:
    """The state of a service started with `config`, recovered from any crash."""
    state = ServiceState(config)
    recover_uploads(state.store, {"files": state.files_dir, "functions": state.functions_dir})
    with state.store.write() as conn:
        fail_interrupted_commits(conn, state.clock.text())
        add_sequence_indexes(conn)
    return state
