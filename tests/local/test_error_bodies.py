"""The error bodies of every error type the local service knows (service interface,
"Errors", "Error types"): a status outside the pass-through list is answered as
500 `Server Error`, keeping the type. (Over HTTP: the 500 in test_storage_uploads and the injected
500 in test_faults.)"""

from __future__ import annotations

import pytest

from frameport.local.wire._errors import ERROR_CODES, ServiceError

PASS_THROUGH = {400, 401, 402, 403, 404, 405, 408, 409, 410, 412, 416, 422, 429, 451, 501, 503}


@pytest.mark.parametrize("type_", sorted(ERROR_CODES))
def test_status_passes_through_or_becomes_server_error(type_: str) -> None:
    body = ServiceError(type_, "what happened").body()
    listed = ERROR_CODES[type_]
    assert body["type"] == type_
    if listed in PASS_THROUGH:
        assert (body["code"], body["message"]) == (listed, "what happened")
    else:
        assert (body["code"], body["message"]) == (500, "Server Error")


def test_protocol_unsupported_is_not_sent_as_426() -> None:
    error = ServiceError("general_protocol_unsupported", "Use HTTPS.")
    assert (error.code, error.message, error.detail) == (500, "Server Error", "Use HTTPS.")
