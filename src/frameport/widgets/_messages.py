"""Failures told in plain words, for the status line of a widget."""

from __future__ import annotations

from .._exceptions import APIError, FrameportError, TransportError

_BY_TYPE = {
    "user_invalid_credentials": "Wrong e-mail or password.",
    "user_blocked": "This account is blocked; ask the project's administrators.",
    "user_unauthorized": "You are not allowed to do this; sign in as a user who may.",
    "general_unauthorized_scope": "You are not allowed to do this; sign in as a user who may.",
    "general_rate_limit_exceeded": "Too many attempts in a short time; wait a minute.",
    "storage_file_not_found": "There is no such file in this bucket (or you may not read it).",
    "storage_bucket_not_found": "There is no such bucket (or you may not read it).",
    "storage_file_type_unsupported": "The service cannot make a preview of this file.",
    "storage_bucket_transformations_disabled": "This bucket does not allow previews.",
}


def describe_failure(error: BaseException, *, endpoint: str = "", project: str = "") -> str:
    """What went wrong, said for a person; never a credential, never a URL with parameters.

    `endpoint` and `project` name what the user asked for, where the failure is about them.
    """
    where = f" at {endpoint}" if endpoint else ""
    if isinstance(error, TransportError):
        return (
            f"Cannot reach the service{where}: check the endpoint URL and that the service is "
            "running."
        )
    if isinstance(error, APIError):
        if error.type == "project_not_found":
            return f"There is no project {project!r}{where}."
        if error.type == "general_route_not_found":
            return f"The endpoint{where} does not answer like the service; it ends in /v1."
        return _BY_TYPE.get(error.type, f"The service refused: {error.message}")
    if isinstance(error, FrameportError | ValueError | TypeError):
        return str(error)
    return f"Unexpected failure ({type(error).__name__}): {error}"
