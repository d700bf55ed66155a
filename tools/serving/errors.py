"""A request an HTTP server refuses: status, machine-readable code and one clear sentence."""

from __future__ import annotations

import math
from typing import Any

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


class RequestError(Exception):
    """A refused request: HTTP status, machine-readable code, one clear sentence (plus extra fields)."""

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

    @classmethod
    def from_http(cls, status: int, message: str) -> RequestError:
        """The web framework's own refusal (no such route, wrong method) in this shape."""
        return cls(status, _HTTP_CODES.get(status, "http_error"), message)

    @classmethod
    def internal(cls, exc: Exception) -> RequestError:
        """A bug in the server, said as a 500 rather than a dropped connection."""
        return cls(500, "internal_error", f"server error: {type(exc).__name__}: {exc}")
