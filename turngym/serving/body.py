"""Request bodies read with a size cap and a deadline, and parsed as one JSON object."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Collection
from typing import Any

from turngym.serving.errors import RequestError

_MB = 1024 * 1024


async def read_body(request: Any, max_bytes: int, timeout_s: float | None) -> bytes:
    """The request body, refused as soon as it is too large or too slow.

    A body is refused with 413 `body_too_large` on its `Content-Length` alone, or while streaming once
    it passes `max_bytes` (a chunked body has no length); with 408 `body_timeout` when it has not
    arrived whole within `timeout_s`, so a client trickling its body (slowloris) holds neither a
    handler nor a buffer for long. A client that hangs up mid-body gets 499 `client_disconnected`.

    Args:
        request: the Starlette request.
        max_bytes: the largest body accepted.
        timeout_s: seconds to receive the whole body (None: no deadline).

    Returns:
        The body's bytes.
    """
    declared = request.headers.get("content-length")
    too_big = f"request body is over this server's maximum of {max_bytes / _MB:g} MB"
    if declared is not None:
        if not declared.strip().isdigit():
            raise RequestError(400, "bad_request", f"bad Content-Length header {declared[:40]!r}")
        if int(declared) > max_bytes:
            raise RequestError(413, "body_too_large", too_big)
    chunks: list[bytes] = []

    async def receive() -> None:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, "body_too_large", too_big)
            chunks.append(chunk)

    from starlette.requests import ClientDisconnect

    try:
        await asyncio.wait_for(receive(), timeout_s)
    except ClientDisconnect:
        raise RequestError(499, "client_disconnected", "client went away while sending its body") from None
    except TimeoutError:
        raise RequestError(
            408, "body_timeout", f"request body not received within {timeout_s:g}s; send it whole"
        ) from None
    return b"".join(chunks)


def parse_json_object(raw: bytes, fields: Collection[str] | None = None) -> dict[str, Any]:
    """`raw` parsed as one JSON object; 400 `bad_request` saying what is wrong otherwise.

    Args:
        raw: the body (empty or blank: ``{}``).
        fields: the keys the object may have; any other is refused by name, not ignored (None: any).

    Returns:
        The object.

    Example:
        >>> parse_json_object(b'{"seed": 3}', fields=("seed", "options"))
        {'seed': 3}
        >>> try:
        ...     parse_json_object(b'{"kwargs": {}}', fields=("seed", "options"))
        ... except RequestError as exc:
        ...     print(exc.status, exc.code, exc.extra)
        400 bad_request {'key': 'kwargs'}
    """
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(400, "bad_request", f"body is not JSON: {exc}") from None
    except RecursionError:
        raise RequestError(400, "bad_request", "body is nested too deeply to parse") from None
    except ValueError:
        # Python refuses int strings over `sys.get_int_max_str_digits()` (4300) digits with a plain
        # ValueError; its own advice (raise the limit) is the server's business, not the client's.
        raise RequestError(
            400,
            "bad_request",
            f"body holds a number too long to read; send numbers of at most {sys.get_int_max_str_digits()} digits",
        ) from None
    if not isinstance(body, dict):
        raise RequestError(400, "bad_request", f"body must be a JSON object, got {type(body).__name__}")
    if fields is not None:
        for key in body:
            if key not in fields:
                raise RequestError(
                    400,
                    "bad_request",
                    f"unknown field {key[:80]!r} in the request body (fields: {', '.join(fields)})",
                    key=key[:80],
                )
    return body
