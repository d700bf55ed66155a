"""One worker process of `python -m envs serve --workers N` (see `envs.server.workers` for the front).

A worker serves the env server's app (`envs.server.app.create_app`) on connections the front hands it
(file descriptors over a Unix socket pair), and on a Unix socket of its own for requests other workers
pass on. Session ids leave this worker as `w<index>-<id>`, so the front can route a session's new
connections here; inside, the app sees its own ids. A request on one connection for another worker's
session (a client sharing one connection across sessions) is passed on to that worker's socket.
When the front goes away (its end of the socket pair closes), the worker stops.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import re
import socket
import sys
from typing import Any

_SESSIONS = "/v1/sessions"
_WORKER_ID = re.compile(r"^w(\d{1,4})-(.+)$")
# Response headers set again after a body is rewritten or relayed.
_RECOMPUTED = {b"content-length", b"transfer-encoding", b"connection"}


def worker_of(session_id: str) -> tuple[int, str] | None:
    """(worker index, the worker's own id) of a session id `w<index>-<id>`, or None for other ids.

    Example:
        >>> worker_of("w3-9f0c"), worker_of("9f0c")
        ((3, '9f0c'), None)
    """
    match = _WORKER_ID.match(session_id)
    return (int(match[1]), match[2]) if match else None


class SessionRouting:
    """ASGI middleware: worker-named session ids outside, the app's own inside; other workers' passed on.

    A request passed on is checked here first, as the app would check it: the token, then the body's
    size cap and deadline while it is read. The worker it goes to checks them again, but only once this
    one has read the whole body, so without these checks a client could make a worker buffer any amount,
    or hold it for ever, without a token.

    Args:
        app: the env server's app.
        index: this worker's index.
        sockets: every worker's Unix socket path, by index (requests for a session of worker i go to
            `sockets[i]`).
        token: the server's token (None: no token).
        max_body_bytes: the largest request body passed on (413 beyond).
        body_timeout_s: seconds to receive a body passed on (408 beyond).
    """

    def __init__(
        self,
        app: Any,
        index: int,
        sockets: list[str],
        *,
        token: str | None = None,
        max_body_bytes: int = 16 << 20,
        body_timeout_s: float = 30.0,
    ):
        self.app, self.index, self.sockets = app, index, sockets
        self.token, self.max_body_bytes, self.body_timeout_s = token, max_body_bytes, body_timeout_s
        self._peers: dict[int, Any] = {}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path: str = scope["path"]
        if path == _SESSIONS and scope["method"] == "POST":
            return await self.app(scope, receive, _rewritten(send, self._name_created))
        if path == "/health":
            return await self.app(scope, receive, _rewritten(send, self._name_health))
        if path.startswith(_SESSIONS + "/"):
            session_id, slash, tail = path[len(_SESSIONS) + 1 :].partition("/")
            owner = worker_of(session_id)
            if owner is not None and owner[0] != self.index and 0 <= owner[0] < len(self.sockets):
                return await self._pass_on(owner[0], scope, receive, send)
            if owner is not None and owner[0] == self.index:
                inner = f"{_SESSIONS}/{owner[1]}{slash}{tail}"
                scope = dict(scope, path=inner, raw_path=inner.encode())
                old, new = owner[1].encode(), session_id.encode()
                return await self.app(scope, receive, _rewritten(send, lambda body: body.replace(old, new)))
        return await self.app(scope, receive, send)

    def _name_created(self, body: bytes) -> bytes:
        try:
            data = json.loads(body)
        except ValueError:
            return body
        if isinstance(data, dict) and isinstance(data.get("session_id"), str):
            data["session_id"] = f"w{self.index}-{data['session_id']}"
            from envs.remote.wire import to_json

            return to_json(data)
        return body

    def _name_health(self, body: bytes) -> bytes:
        try:
            data = json.loads(body)
        except ValueError:
            return body
        data.update(worker=self.index, workers=len(self.sockets), pid=os.getpid())
        return json.dumps(data).encode()

    async def _pass_on(self, owner: int, scope: dict, receive: Any, send: Any) -> None:
        """Relay the request to worker `owner` over its Unix socket and its answer back.

        The token is checked before any of the body is read, and the body is read under the app's cap
        and deadline (`read_body`), so a relayed request costs no more than one the app reads itself.
        """
        import httpx
        from starlette.requests import Request

        from envs.remote.wire import to_json
        from turngym.serving import RequestError, check_token, json_response, read_body

        request = Request(scope, receive)
        try:
            check_token(request.headers.get("authorization", ""), self.token)
            content = await read_body(request, self.max_body_bytes, self.body_timeout_s)
        except RequestError as exc:
            if exc.status == 499:  # the client is gone: nobody to answer
                return
            return await json_response(exc.body, exc.status, exc.headers, encode=to_json)(
                scope, receive, send
            )
        client = self._peers.get(owner)
        if client is None:
            transport = httpx.AsyncHTTPTransport(uds=self.sockets[owner])
            client = self._peers[owner] = httpx.AsyncClient(transport=transport, timeout=None)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _RECOMPUTED]
        query = scope.get("query_string") or b""
        url = f"http://worker{scope['path']}" + (f"?{query.decode()}" if query else "")
        try:
            answer = await client.request(scope["method"], url, headers=headers, content=content)
            status, body = answer.status_code, answer.content
            out = [(k, v) for k, v in answer.headers.raw if k.lower() not in _RECOMPUTED]
        except httpx.TransportError as exc:
            status, out = 503, [(b"content-type", b"application/json")]
            from turngym.serving.errors import error_body

            message = f"worker {owner} of this server is not answering ({type(exc).__name__}); its sessions are lost"
            body = json.dumps(error_body("worker_down", message)).encode()
        out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": body})


def _rewritten(send: Any, change: Any) -> Any:
    """`send`, with the response body (buffered whole: the app answers small JSON) passed through `change`."""
    start: dict | None = None
    chunks: list[bytes] = []

    async def wrapped(message: dict) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            return await send(message)
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = change(b"".join(chunks))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return wrapped


def _peer_of(conn: socket.socket) -> str:
    from envs.server.peer import peer_key

    try:
        return peer_key(conn.getpeername())
    except OSError:  # gone already
        return "unknown"


def _counted_out(lost: Any, held: collections.Counter, peer: str) -> Any:
    """`connection_lost`, also giving the peer's place back."""

    def counted(exc: Exception | None) -> None:
        held[peer] -= 1
        if held[peer] <= 0:
            del held[peer]
        lost(exc)

    return counted


def _refuse(conn: socket.socket, per_peer: int) -> None:
    """Answer 429 `too_many_connections` in one write, without reading the request, and close."""
    from turngym.serving.errors import error_body

    message = (
        f"this address has {per_peer} connections open on this server worker, the most one peer may have"
    )
    body = json.dumps(error_body("too_many_connections", message)).encode()
    head = (
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    conn.setblocking(False)
    with contextlib.suppress(OSError):
        conn.send(head.encode() + body)
    conn.close()


def build_app(settings: dict[str, Any]) -> Any:
    """The env server's app with `settings` (as `envs.server.workers.worker_settings` checked them)."""
    from envs.server.app import create_app

    return create_app(
        max_sessions=settings["max_sessions"],
        max_sessions_per_client=settings.get("max_sessions_per_client"),
        max_concurrency=settings["max_concurrency"],
        max_queue=settings["max_queue"],
        idle_timeout_s=settings["idle_timeout_s"],
        token=settings["token"],
        max_body_mb=settings["max_body_mb"],
        body_timeout_s=settings["body_timeout_s"],
        operator_kwargs=settings["operator_kwargs"],
    )


async def _serve(settings: dict[str, Any], control: socket.socket) -> None:
    import uvicorn

    index, sockets = settings["index"], settings["sockets"]
    app = SessionRouting(
        build_app(settings),
        index,
        sockets,
        token=settings["token"],
        max_body_bytes=int(settings["max_body_mb"] * 1024 * 1024),
        body_timeout_s=settings["body_timeout_s"],
    )
    from turngym.serving.head_deadline import head_deadline_protocol
    from turngym.serving.trusted_proxy import uvicorn_proxy_settings

    # Handed connections keep their TCP peer, from which uvicorn would believe X-Forwarded-For on
    # loopback unless told whom to trust.
    config = uvicorn.Config(
        app,
        uds=sockets[index],
        log_level=settings["log_level"],
        access_log=False,
        timeout_graceful_shutdown=5,
        # The front bounds a connection's first head; this bounds every later one on a kept-alive connection.
        http=head_deadline_protocol(settings["body_timeout_s"]),
        **uvicorn_proxy_settings(settings.get("trusted_proxies") or []),
    )
    server = uvicorn.Server(config)
    loop = asyncio.get_running_loop()
    control.setblocking(False)
    per_peer = int(settings.get("max_connections_per_client") or settings["max_sessions"])
    held: collections.Counter[str] = collections.Counter()  # open connections per peer

    def take() -> None:
        # Connections the front accepted: serve each as uvicorn serves the ones it accepts itself.
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(control, 16, 64)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:  # the front is gone: stop
                loop.remove_reader(control.fileno())
                server.should_exit = True
                return
            for fd in fds:
                conn = socket.socket(fileno=fd)
                peer = _peer_of(conn)
                if held[peer] >= per_peer:  # one peer may not hold every descriptor of this worker
                    _refuse(conn, per_peer)
                    continue
                held[peer] += 1
                conn.setblocking(False)
                protocol = config.http_protocol_class(
                    config=config, server_state=server.server_state, app_state=server.lifespan.state
                )
                protocol.connection_lost = _counted_out(protocol.connection_lost, held, peer)
                loop.create_task(loop.connect_accepted_socket(lambda p=protocol: p, conn))

    async def started() -> None:
        while not server.started and not server.should_exit:
            await asyncio.sleep(0.01)
        if server.started:
            loop.add_reader(control.fileno(), take)

    watcher = asyncio.create_task(started())
    try:
        await server.serve()
    finally:
        watcher.cancel()


def main() -> int:
    """Worker entry point: settings as JSON on stdin, the control socket's fd as the only argument."""
    settings = json.loads(sys.stdin.read())
    control = socket.socket(fileno=int(sys.argv[1]))
    import importlib

    for module in settings.get("imports", []):
        importlib.import_module(module)
    asyncio.run(_serve(settings, control))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
