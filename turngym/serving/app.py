"""The app every turngym server is built as: routes, the token check, JSON answers and JSON errors."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from turngym.serving.errors import RequestError

#: A route's handler: takes the request, returns a Response or a value to send as JSON (status 200).
Handler = Callable[[Any], Awaitable[Any]]


def plain_json(value: Any) -> bytes:
    """`value` as UTF-8 JSON; NaN stays NaN (as Python's json writes it), unknown types become strings."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True, default=str).encode()


def json_response(
    content: Any,
    status: int = 200,
    headers: dict[str, str] | None = None,
    encode: Callable[[Any], bytes] = plain_json,
) -> Any:
    """A Starlette response carrying `content` as JSON.

    Args:
        content: the value to send.
        status: the HTTP status.
        headers: extra headers (e.g. `Retry-After`).
        encode: how `content` becomes bytes.

    Returns:
        The response.
    """
    from starlette.responses import Response

    return Response(encode(content), status_code=status, media_type="application/json", headers=headers)


def check_token(authorization: str, token: str | None) -> None:
    """Refuse (401 `unauthorized`) an `Authorization` header that is not `Bearer <token>`; None: no token set.

    The one token check of every server and of anything relaying to one (a `--workers` worker passing a
    request to another), so a request is authenticated by the first process that reads it.

    Args:
        authorization: the request's `Authorization` header ("" when absent).
        token: the server's token, or None when it takes every caller.

    Example:
        >>> check_token("Bearer s3cret", "s3cret"), check_token("", None)
        (None, None)
        >>> try:
        ...     check_token("Bearer guess", "s3cret")
        ... except RequestError as exc:
        ...     print(exc.status, exc.code)
        401 unauthorized
    """
    if token is None:
        return
    if not hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        raise RequestError(401, "unauthorized", "missing or wrong token (Authorization: Bearer ...)")


def make_app(
    routes: Iterable[tuple[str, str, Handler]],
    *,
    token: str | None = None,
    open_paths: Sequence[str] = ("/health",),
    lifespan: Any = None,
    encode: Callable[[Any], bytes] = plain_json,
    error_body: Callable[[RequestError], Any] | None = None,
    on_error: Callable[[RequestError], None] | None = None,
) -> Any:
    """A Starlette app whose every answer is JSON and every failure is one `RequestError` shape.

    Each handler may raise `RequestError` (sent as its status, code and message, with Retry-After when
    set); an unknown route or method is 404 `not_found` / 405 `method_not_allowed`, and a bug is 500
    `internal_error`, all in the same shape.

    Args:
        routes: `(method, path, handler)` triples; a path may hold Starlette parameters (`{session_id}`).
        token: when set, every route but `open_paths` needs `Authorization: Bearer <token>` (401 without).
        open_paths: paths served without the token (health checks).
        lifespan: Starlette's lifespan context (background tasks, cleanup at shutdown).
        encode: how JSON values become bytes (the env server keeps numpy scalars and NaN).
        error_body: the JSON of a refusal (default `RequestError.body`); a server whose clients expect
            more fields around the `error` object adds them here.
        on_error: called with every refusal a handler raises (to count them).

    Returns:
        The app (serve it with `run_server`).

    Example (Starlette's in-process test client, no socket):
        >>> from starlette.testclient import TestClient
        >>> async def hello(request):
        ...     return {"hello": request.query_params.get("name", "world")}
        >>> client = TestClient(make_app([("GET", "/hello", hello)], token="s3cret"))
        >>> client.get("/hello", headers={"authorization": "Bearer s3cret"}).json()
        {'hello': 'world'}
        >>> client.get("/hello").json()["error"]["code"], client.get("/nowhere").status_code
        ('unauthorized', 404)
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import Response
    from starlette.routing import Route

    render = error_body or (lambda exc: exc.body)

    def refuse(exc: RequestError) -> Any:
        return json_response(render(exc), exc.status, exc.headers, encode)

    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Any) -> Any:
            if token is not None and request.url.path not in open_paths:
                try:
                    check_token(request.headers.get("authorization", ""), token)
                except RequestError as exc:
                    return refuse(exc)
            try:
                result = await handler(request)
            except RequestError as exc:
                if on_error is not None:
                    on_error(exc)
                return refuse(exc)
            if isinstance(result, Response):
                return result
            return json_response(result, encode=encode)

        endpoint.__name__ = getattr(handler, "__name__", "endpoint")
        return endpoint

    async def http_error(request: Any, exc: HTTPException) -> Any:
        return refuse(
            RequestError.from_http(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}")
        )

    async def internal(_request: Any, exc: Exception) -> Any:
        return refuse(RequestError.internal(exc))

    return Starlette(
        routes=[Route(path, guarded(handler), methods=[method]) for method, path, handler in routes],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error, Exception: internal},
    )
