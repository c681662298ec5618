"""Exceptions raised by the rollgate client.

Every gateway error response carries ``{"error": {"message", "type", "param", "code"}}`` with the HTTP status
fixed by ``code``. :func:`error_from_response` turns such a response into one :class:`APIError` subclass per
status, so callers catch ``NotFoundError`` or ``ConflictError`` and read ``.code`` for the exact reason; they
never need to parse the message.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

__all__ = [
    "RollgateError",
    "TransportError",
    "RequestTimeoutError",
    "ProtocolError",
    "BatchDecodeError",
    "AgentEnvironmentError",
    "APIError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "GoneError",
    "PayloadTooLargeError",
    "ValidationError",
    "RateLimitError",
    "ServerError",
    "UpstreamError",
    "ServiceUnavailableError",
    "GatewayTimeoutError",
    "error_from_response",
]


class RollgateError(Exception):
    """Base class of everything this package raises."""


class TransportError(RollgateError):
    """The gateway could not be reached, or the connection broke before a full response arrived."""


class RequestTimeoutError(TransportError):
    """No (complete) response within the client-side timeout."""


class ProtocolError(RollgateError):
    """The gateway answered something the protocol does not allow (e.g. a 200 without a batch id)."""


class BatchDecodeError(ProtocolError):
    """A binary batch (``RGB1`` layout) is malformed or truncated."""


class AgentEnvironmentError(RollgateError):
    """A variable the runner sets for an agent (``ROLLGATE_*``, ``OPENAI_*``) is missing or invalid."""


class APIError(RollgateError):
    """The gateway answered with an HTTP error status.

    Attributes:
        status: HTTP status code.
        message: the error message.
        type: OpenAI error type (``invalid_request_error``, ``authentication_error``, ...).
        code: rollgate's stable error code (``not_found``, ``conflict``, ``validation_error``, ...), or None.
        param: the request field at fault (validation errors), or None.
        request_id: the gateway's ``x-request-id`` for log correlation, or None.
        retry_after_s: the ``retry-after`` hint in seconds, or None.
        body: the parsed JSON body (or the raw text when it was not JSON).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        request_id: str | None = None,
        retry_after_s: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"HTTP {status}{f' {code}' if code else ''}: {message}")
        self.message = message
        self.status = status
        self.type = type
        self.code = code
        self.param = param
        self.request_id = request_id
        self.retry_after_s = retry_after_s
        self.body = body


class BadRequestError(APIError):
    """400: the request is malformed (invalid JSON, bad paging, forbidden nulls)."""


class AuthenticationError(APIError):
    """401: missing, wrong or expired API key (the store API and ``/v1/rl/*`` need a runner or admin key)."""


class PermissionDeniedError(APIError):
    """403: the key is valid but lacks the scope (e.g. an agent token on another rollout, a runner key on weights)."""


class NotFoundError(APIError):
    """404: unknown route, rollout, attempt or batch id."""


class ConflictError(APIError):
    """409: the request conflicts with the current state (stale weight version, sync in progress,
    no ``rl`` algorithm attached)."""


class GoneError(APIError):
    """410: the object was evicted from the store."""


class PayloadTooLargeError(APIError):
    """413: the request body exceeds the gateway's limit."""


class ValidationError(BadRequestError):
    """422: a field failed schema validation; ``param`` names it."""


class RateLimitError(APIError):
    """429: the gateway is paused for a weight swap (retried automatically where safe)."""


class ServerError(APIError):
    """5xx: the gateway or a backend failed."""


class UpstreamError(ServerError):
    """502: a backend failed (e.g. the weight-load hook during ``POST /v1/rl/weights``)."""


class ServiceUnavailableError(ServerError):
    """503: no backend or the store is unavailable right now."""


class GatewayTimeoutError(ServerError):
    """504: a backend did not answer in time."""


_BY_STATUS: Mapping[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
    502: UpstreamError,
    503: ServiceUnavailableError,
    504: GatewayTimeoutError,
}


def _class_for(status: int) -> type[APIError]:
    known = _BY_STATUS.get(status)
    if known is not None:
        return known
    if status >= 500:
        return ServerError
    if status >= 400:
        return BadRequestError
    return APIError


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None  # an HTTP date: rollgate never sends one, and guessing clocks is worse than ignoring it
    return value if value >= 0 else None


def error_from_response(status: int, body: bytes, headers: Mapping[str, str]) -> APIError:
    """Builds the :class:`APIError` subclass for an error response.

    ``headers`` must have lower-case names. Understands rollgate's OpenAI-shaped body, SGLang/vLLM's flat
    ``{"object": "error", "message", ...}`` and FastAPI's ``{"detail": ...}``; anything else keeps the raw
    text as the message.
    """
    text = body.decode("utf-8", errors="replace")
    parsed: Any = None
    try:
        parsed = json.loads(text) if text.strip() else None
    except ValueError:
        parsed = None
    message = text.strip() or f"HTTP {status}"
    kind = code = param = None
    if isinstance(parsed, dict):
        inner = parsed.get("error")
        source: Mapping[str, Any] | None = inner if isinstance(inner, dict) else None
        if source is None and "message" in parsed:
            source = parsed
        if source is not None:
            message = _optional_str(source.get("message")) or message
            kind = _optional_str(source.get("type"))
            code = _optional_str(source.get("code"))
            param = _optional_str(source.get("param"))
        elif "detail" in parsed:
            detail = parsed["detail"]
            message = detail if isinstance(detail, str) else json.dumps(detail)
            code = _optional_str(parsed.get("error_type"))
    cls = _class_for(status)
    return cls(
        message,
        status=status,
        type=kind,
        code=code,
        param=param,
        request_id=headers.get("x-request-id"),
        retry_after_s=_retry_after(headers),
        body=parsed if parsed is not None else text,
    )
