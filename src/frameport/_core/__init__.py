"""The request layer, below everything else; the one place errors are mapped."""

from ._auth import (
    Credentials,
    forget_session,
    impersonation_target,
    load_session,
    save_session,
)
from ._config import (
    DEFAULT_HEADER_PREFIX,
    ENDPOINT_ENV,
    JWT_ENV,
    KEY_ENV,
    PROJECT_ENV,
    credentials_from_env,
    normalized_endpoint,
)
from ._connect import connect, with_saved_session
from ._connection import Connection, Requester
from ._ids import ID, is_valid_id
from ._queries import equal_query, order_query
from ._sync import SyncFacade, async_twin, delegate, forward_property, run_sync
from ._transport import RetryPolicy, queries_param

__all__ = [
    "DEFAULT_HEADER_PREFIX",
    "ENDPOINT_ENV",
    "ID",
    "JWT_ENV",
    "KEY_ENV",
    "PROJECT_ENV",
    "Connection",
    "Credentials",
    "Requester",
    "RetryPolicy",
    "SyncFacade",
    "async_twin",
    "connect",
    "credentials_from_env",
    "delegate",
    "equal_query",
    "forget_session",
    "forward_property",
    "impersonation_target",
    "is_valid_id",
    "load_session",
    "normalized_endpoint",
    "order_query",
    "queries_param",
    "run_sync",
    "save_session",
    "with_saved_session",
]
