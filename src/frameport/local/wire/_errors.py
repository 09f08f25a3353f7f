"""Errors the local service answers with: the body `{message, code, type, version}`."""

from __future__ import annotations

from collections.abc import Mapping

SERVER_VERSION = "1.9.6"

#: Error type → HTTP status (service interface, "Error types").
ERROR_CODES: Mapping[str, int] = {
    "general_unknown": 500,
    "general_server_error": 500,
    "general_access_forbidden": 401,
    "general_unauthorized_scope": 401,
    "general_rate_limit_exceeded": 429,
    "general_argument_invalid": 400,
    "general_bad_request": 400,
    "general_query_invalid": 400,
    "general_cursor_not_found": 400,
    "general_route_not_found": 404,
    "general_service_disabled": 403,
    "general_api_disabled": 403,
    "general_resource_locked": 409,
    "general_not_implemented": 405,
    "general_protocol_unsupported": 426,
    "general_invalid_email": 400,
    "user_unauthorized": 401,
    "user_invalid_credentials": 401,
    "user_jwt_invalid": 401,
    "user_jwt_and_cookie_set": 403,
    "user_jwt_creation_denied": 403,
    "user_api_key_and_session_set": 403,
    "user_session_already_exists": 401,
    "user_session_not_found": 404,
    "user_not_found": 404,
    "user_already_exists": 409,
    "user_email_already_exists": 409,
    "user_blocked": 403,
    "user_password_reset_required": 412,
    "user_more_factors_required": 401,
    "user_count_exceeded": 400,
    "password_recently_used": 400,
    "password_personal_data": 400,
    "project_not_found": 404,
    "project_key_expired": 401,
    "project_id_missing": 403,
    "api_key_expired": 401,
    "team_not_found": 404,
    "team_already_exists": 409,
    "membership_not_found": 404,
    "database_not_found": 404,
    "database_already_exists": 409,
    "database_timeout": 408,
    "database_query_order_null": 400,
    "table_not_found": 404,
    "collection_not_found": 404,
    "table_already_exists": 409,
    "collection_already_exists": 409,
    "table_limit_exceeded": 400,
    "collection_limit_exceeded": 400,
    "row_not_found": 404,
    "document_not_found": 404,
    "row_already_exists": 409,
    "document_already_exists": 409,
    "row_invalid_structure": 400,
    "document_invalid_structure": 400,
    "row_missing_data": 400,
    "document_missing_data": 400,
    "row_missing_payload": 400,
    "document_missing_payload": 400,
    "row_unique_constraint_violation": 409,
    "document_unique_constraint_violation": 409,
    "row_update_conflict": 409,
    "document_update_conflict": 409,
    "row_delete_restricted": 403,
    "document_delete_restricted": 403,
    "column_not_found": 404,
    "attribute_not_found": 404,
    "column_already_exists": 409,
    "attribute_already_exists": 409,
    "column_not_available": 400,
    "attribute_not_available": 400,
    "column_default_unsupported": 400,
    "attribute_default_unsupported": 400,
    "column_format_unsupported": 400,
    "attribute_format_unsupported": 400,
    "column_value_invalid": 400,
    "attribute_value_invalid": 400,
    "column_limit_exceeded": 400,
    "attribute_limit_exceeded": 400,
    "column_type_invalid": 400,
    "attribute_type_invalid": 400,
    "relationship_value_invalid": 400,
    "index_not_found": 404,
    "column_index_not_found": 404,
    "index_already_exists": 409,
    "column_index_already_exists": 409,
    "transaction_not_found": 404,
    "transaction_not_ready": 400,
    "transaction_expired": 410,
    "transaction_limit_exceeded": 400,
    "transaction_conflict": 409,
    "storage_bucket_not_found": 404,
    "storage_bucket_already_exists": 409,
    "storage_file_not_found": 404,
    "storage_file_already_exists": 409,
    "storage_file_empty": 400,
    "storage_file_type_unsupported": 400,
    "storage_invalid_file_size": 400,
    "storage_invalid_file": 403,
    "storage_invalid_content_range": 400,
    "storage_invalid_range": 416,
    "storage_invalid_service_id": 400,
    "storage_image_resolution_exceeded": 400,
    "storage_bucket_transformations_disabled": 403,
    "storage_file_not_public": 403,
    "function_not_found": 404,
    "function_already_exists": 409,
    "function_entrypoint_missing": 404,
    "deployment_not_found": 404,
    "deployment_invalid_file_size": 400,
}


#: Statuses the service answers with unchanged; any other becomes 500 "Server Error"
#: (service interface, "Errors").
PASS_THROUGH_STATUSES = frozenset(
    {400, 401, 402, 403, 404, 405, 408, 409, 410, 412, 416, 422, 429, 451, 501, 503}
)
SERVER_ERROR_MESSAGE = "Server Error"
#: Headers every error response carries (service interface, "Errors").
ERROR_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-cache, no-store, must-revalidate",
    "Expires": "0",
    "Pragma": "no-cache",
}


def error_body(type: str, message: str, code: int) -> dict[str, object]:
    """The JSON error body (production form: no file, line or trace)."""
    return {"message": message, "code": code, "type": type, "version": SERVER_VERSION}


class ServiceError(Exception):
    """An error the service answers with; `type` selects the HTTP status from ERROR_CODES.

    A status outside PASS_THROUGH_STATUSES is sent as 500 with the message `Server Error`,
    keeping the type (service interface, "Errors"); `detail` keeps the original message for the log.

    >>> ServiceError("row_not_found", "Row with the requested ID 'x' could not be found.").code
    404
    >>> error = ServiceError("general_protocol_unsupported", "Use HTTPS.")
    >>> error.code, error.message, error.type
    (500, 'Server Error', 'general_protocol_unsupported')
    """

    def __init__(
        self,
        type: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        status = ERROR_CODES.get(type, 500)
        passed = status in PASS_THROUGH_STATUSES
        self.type = type
        self.detail = message
        self.code = status if passed else 500
        self.message = message if passed else SERVER_ERROR_MESSAGE
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        """The JSON error body."""
        return error_body(self.type, self.message, self.code)


def invalid_param(name: str, description: str) -> ServiceError:
    """400 `general_argument_invalid` for a parameter that fails its validator."""
    return ServiceError("general_argument_invalid", f"Invalid `{name}` param: {description}")


def missing_param(name: str) -> ServiceError:
    """400 `general_argument_invalid` for a required parameter that was not sent."""
    return ServiceError("general_argument_invalid", f'Param "{name}" is not optional.')
