"""A refused request and the one JSON shape every turngym HTTP server answers it with.

Every failure is ``{"error": {"code": ..., "message": ...}}`` (plus fields a server adds, such as the
``key`` a refused kwarg names) with a fitting HTTP status. One code per condition, the same on every
server:

============  ======================  ==========================================================
status        code                    condition
============  ======================  ==========================================================
400           ``bad_request``         the body is not JSON, not an object, has an unknown field or a
                                      bad value
401           ``unauthorized``        missing or wrong ``Authorization: Bearer <token>``
404           ``not_found``           no such route
405           ``method_not_allowed``  the route exists, the method does not
408           ``body_timeout``        the body did not arrive whole within the server's deadline
413           ``body_too_large``      the body is over the server's maximum (header or stream)
429           ``overloaded``          too many requests running and waiting; ``Retry-After`` says when
499           ``client_disconnected`` the client went away before its answer (only logged)
500           ``internal_error``      a bug in the server
============  ======================  ==========================================================

Servers add codes for their own conditions (the env server's ``sessions_full``, ``refused_kwarg``; the
sandbox server's ``limit_exceeded``, ``bad_file_name``); each is listed in that server's docs.
"""

from __future__ import annotations

import math
from typing import Any

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


class RequestError(Exception):
    """A refused request: HTTP status, machine-readable code, one clear sentence (plus extra fields).

    Args:
        status: the HTTP status.
        code: the machine-readable code (see the module docstring).
        message: one sentence saying what went wrong and what to do.
        retry_after: seconds after which the client may try again (sent as ``Retry-After``).
        **extra: more fields for the error object, e.g. the ``key`` a refusal names.

    Example:
        >>> exc = RequestError(429, "overloaded", "server busy; retry after 2s", retry_after=1.2)
        >>> exc.headers
        {'Retry-After': '2'}
        >>> error_body(exc.code, exc.message, **exc.extra)
        {'error': {'code': 'overloaded', 'message': 'server busy; retry after 2s'}}
    """

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None, **extra: Any):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after, self.extra = (
            status,
            code,
            message,
            retry_after,
            extra,
        )

    @property
    def headers(self) -> dict[str, str]:
        """`Retry-After` (whole seconds, rounded up) when the client may try again later."""
        return {} if self.retry_after is None else {"Retry-After": str(math.ceil(self.retry_after))}

    @property
    def body(self) -> dict[str, Any]:
        """This refusal in the one JSON shape (`error_body`)."""
        return error_body(self.code, self.message, **self.extra)

    @classmethod
    def from_http(cls, status: int, message: str) -> RequestError:
        """The web framework's own refusal (no such route, wrong method) in this shape."""
        return cls(status, _HTTP_CODES.get(status, "http_error"), message)

    @classmethod
    def internal(cls, exc: Exception) -> RequestError:
        """A bug in the server, said as a 500 rather than a dropped connection."""
        return cls(500, "internal_error", f"server error: {type(exc).__name__}: {exc}")


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The one JSON shape of every failure.

    Args:
        code: the machine-readable code.
        message: one sentence for a person.
        **extra: more fields of the error object.

    Returns:
        ``{"error": {"code": code, "message": message, **extra}}``.

    Example:
        >>> error_body("body_too_large", "request body is over 16 MB")
        {'error': {'code': 'body_too_large', 'message': 'request body is over 16 MB'}}
    """
    return {"error": {"code": code, "message": message, **extra}}
