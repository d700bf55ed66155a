"""`python -m envs serve --port 8000`: every registered env over HTTP, one session per episode.

Routes (JSON in, JSON out; every failure is `{"error": {"code", "message"}}` with a fitting status):

    GET    /health                         status, sessions open, requests running (OpenEnv's `/health`)
    GET    /schema, /metadata              OpenEnv's action/observation/state schemas and server metadata
    GET    /v1/envs                        the registry: id, category, description, max_turns
    POST   /v1/sessions                    {"env_id", "kwargs", "max_turns", "format_penalty"} -> session id
    POST   /v1/sessions/{id}/reset         {"seed", "options"} -> {"observation": {"messages"}, "info", ...}
    POST   /v1/sessions/{id}/step          {"action"} -> {"observation", "reward", "done", "terminated", ...}
    GET    /v1/sessions/{id}/tools         tool schemas;  GET .../expert_action, .../render, .../state
    PUT    /v1/sessions/{id}/tool_call_format  {"tool_call_format"}: how the env reads calls in reply text
    DELETE /v1/sessions/{id}               close the env

Trust: a client chooses the env id, seed, reset options and the kwargs the env declares safe for clients
(`envs.client_kwargs`); `max_turns` and `format_penalty` only stricter than the operator's. Everything else
(isolation, sandbox backends and endpoints, tool files, paths, opponents) is set by the operator with
`--env-kwargs ID:KEY=VALUE` or `--env-config FILE`; a client sending any of it gets 400 `refused_kwarg`
naming the key, and nothing is made. Beyond loopback the server does not start without a token.

Load and faults: at most `max_sessions` sessions are open (503 `sessions_full` beyond, with Retry-After);
at most `max_concurrency` env calls run at once and `max_queue` wait (429 `busy` beyond); a session idle
for `idle_timeout_s` is closed (later calls get 410 `session_expired`); two calls at once on one session
get 409 `session_busy`; a request body not received within `body_timeout_s` gets 408. Env calls that block (make, reset, close, the expert) run in worker threads;
`step` awaits the env's `astep`, as the rollout does.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hmac
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import envs
from envs.client_kwargs import ClientKwargError, check_client_kwargs
from envs.errors import InvalidOptions, ResetNeeded, UnknownEnvError
from envs.remote.wire import decode_action, error_body, to_json
from tools.cli_errors import ArgumentParser, UsageError, check_port_free, run_cli
from tools.serving.errors import RequestError

_MB = 1024 * 1024
# The fields each request body may have: anything else is refused by name, not ignored.
_FIELDS = {
    "create": ("env_id", "kwargs", "max_turns", "format_penalty"),
    "reset": ("seed", "options"),
    "step": ("action", "action_type"),
    "tool_call_format": ("tool_call_format",),
}


@dataclass
class Session:
    """One client's env: its lock (one call at a time) and when it was last used."""

    id: str
    env_id: str
    env: Any
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    steps: int = 0


class SessionTable:
    """Open sessions, bounded; idle ones expire; ids of expired ones are remembered to say so."""

    def __init__(self, max_sessions: int, idle_timeout_s: float):
        self.max_sessions, self.idle_timeout_s = max_sessions, idle_timeout_s
        self.open: dict[str, Session] = {}
        self.reserved = 0  # sessions being made (counted against the bound before `make` returns)
        self.gone: collections.OrderedDict[str, str] = collections.OrderedDict()

    def reserve(self) -> None:
        """Count a session being made, or refuse with 503 when the table is full."""
        if len(self.open) + self.reserved >= self.max_sessions:
            retry = max(1, min(60, math.ceil(self.idle_timeout_s / 4)))
            raise RequestError(
                503,
                "sessions_full",
                f"server full: {len(self.open) + self.reserved} of {self.max_sessions} sessions open; close "
                f"finished sessions (DELETE /v1/sessions/<id>) or retry after {retry}s",
                retry_after=retry,
            )
        self.reserved += 1

    def get(self, session_id: str) -> Session:
        """The open session `session_id`, or 404 / 410 saying it never existed or has expired."""
        session = self.open.get(session_id)
        if session is not None:
            return session
        why = self.gone.get(session_id)
        if why is not None:
            raise RequestError(410, f"session_{why}", f"session {session_id!r} was {why}; create a new one")
        raise RequestError(404, "unknown_session", f"no session {session_id[:80]!r} on this server")

    def forget(self, session_id: str, why: str) -> Session | None:
        """Take a session out of the table, remembering (boundedly) why it went."""
        session = self.open.pop(session_id, None)
        if session is not None:
            self.gone[session_id] = why
            while len(self.gone) > 10_000:
                self.gone.popitem(last=False)
        return session

    def idle(self, now: float) -> list[Session]:
        """Sessions unused for longer than the idle timeout and not in a call right now."""
        return [
            s for s in self.open.values() if now - s.last_used > self.idle_timeout_s and not s.lock.locked()
        ]


class Gate:
    """At most `concurrency` env calls at once and `queue` waiting; the rest get 429 at once."""

    def __init__(self, concurrency: int, queue: int):
        self.concurrency, self.queue = concurrency, queue
        self.admitted = 0
        self.running = 0
        self._sem: asyncio.Semaphore | None = None  # made on first use: it belongs to the serving loop

    async def __aenter__(self) -> None:
        if self.admitted >= self.concurrency + self.queue:
            raise RequestError(
                429,
                "busy",
                f"server busy: {self.running} env calls running and {self.admitted - self.running} waiting "
                f"(limits {self.concurrency} and {self.queue}); retry after 1s",
                retry_after=1,
            )
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        self.admitted += 1
        try:
            await self._sem.acquire()
        except BaseException:
            self.admitted -= 1
            raise
        self.running += 1

    async def __aexit__(self, *exc: Any) -> None:
        self.running -= 1
        self.admitted -= 1
        assert self._sem is not None
        self._sem.release()


def _json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None):
    from starlette.responses import Response

    return Response(to_json(content), status_code=status, media_type="application/json", headers=headers)


def _error_response(exc: RequestError):
    return _json_response(error_body(exc.code, exc.message, **exc.extra), exc.status, exc.headers)


async def _read_json(request, max_bytes: int, timeout_s: float, fields: tuple[str, ...]) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    too_big = f"request body is over this server's maximum of {max_bytes / _MB:g} MB"
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, "body_too_large", too_big)
    chunks: list[bytes] = []

    async def receive() -> None:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, "body_too_large", too_big)
            chunks.append(chunk)

    try:
        # A client trickling its body (slowloris) must not hold a handler and its buffer forever.
        await asyncio.wait_for(receive(), timeout_s)
    except TimeoutError:
        raise RequestError(
            408, "body_timeout", f"request body not received within {timeout_s:g}s; send it whole"
        ) from None
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(400, "bad_request", f"body is not JSON: {exc}") from None
    except RecursionError:
        raise RequestError(400, "bad_request", "body is nested too deeply to parse") from None
    if not isinstance(body, dict):
        raise RequestError(400, "bad_request", f"body must be a JSON object, got {type(body).__name__}")
    for key in body:
        if key not in fields:
            raise RequestError(
                400,
                "bad_request",
                f"unknown field {key[:80]!r} in the request body (fields: {', '.join(fields)})",
                key=key[:80],
            )
    return body


def _env_error(exc: Exception) -> RequestError:
    # The exception's type travels with it, so the client raises what the local env would have raised.
    kind = type(exc).__name__
    if isinstance(exc, InvalidOptions):
        return RequestError(400, "bad_options", str(exc), exception="InvalidOptions")
    if isinstance(exc, ResetNeeded):
        return RequestError(409, "reset_needed", str(exc), exception="ResetNeeded")
    if isinstance(exc, UnknownEnvError):
        return RequestError(404, "unknown_env", str(exc), exception="UnknownEnvError")
    if isinstance(exc, NotImplementedError):
        return RequestError(501, "not_implemented", str(exc) or kind, exception="NotImplementedError")
    if isinstance(exc, ValueError | TypeError):
        return RequestError(400, "bad_arguments", str(exc), exception=kind)
    return RequestError(500, "env_error", f"the env raised {kind}: {exc}", exception=kind)


def create_app(
    *,
    max_sessions: int = 256,
    max_concurrency: int = 64,
    max_queue: int | None = None,
    idle_timeout_s: float = 600.0,
    token: str | None = None,
    max_body_mb: float = 16.0,
    body_timeout_s: float = 30.0,
    operator_kwargs: dict[str, dict[str, Any]] | None = None,
):
    """The Starlette app serving every registered env (see the module docstring for routes and limits).

    Args:
        max_sessions: open sessions at most (503 beyond).
        max_concurrency: env calls running at once.
        max_queue: env calls waiting beyond those (429 beyond); default 4 x max_concurrency.
        idle_timeout_s: a session unused this long is closed and its env released.
        token: when set, every route but /health needs `Authorization: Bearer <token>`.
        max_body_mb: request bodies over this get 413.
        body_timeout_s: a request body not received whole within this gets 408.
        operator_kwargs: env id -> kwargs the operator sets for every session of that env; clients cannot
            override them.

    Returns:
        A Starlette app (run it with uvicorn).
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    table = SessionTable(max_sessions, idle_timeout_s)
    gate = Gate(max_concurrency, 4 * max_concurrency if max_queue is None else max_queue)
    max_bytes = int(max_body_mb * _MB)
    operator_kwargs = {k: dict(v) for k, v in (operator_kwargs or {}).items()}

    async def read_body(request, route: str) -> dict[str, Any]:
        return await _read_json(request, max_bytes, body_timeout_s, _FIELDS[route])

    stats = {"sessions_created": 0, "sessions_expired": 0, "steps": 0, "rejected": 0, "refused": 0}

    def guarded(handler):
        async def endpoint(request):
            if token is not None and request.url.path != "/health":
                given = request.headers.get("authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    return _error_response(
                        RequestError(
                            401, "unauthorized", "missing or wrong token (Authorization: Bearer ...)"
                        )
                    )
            try:
                return await handler(request)
            except RequestError as exc:
                if exc.status in (429, 503):
                    stats["rejected"] += 1
                return _error_response(exc)

        return endpoint

    async def health(_request):
        return _json_response(
            {
                "status": "healthy",
                "protocol": "v1",
                "sessions": len(table.open),
                "max_sessions": max_sessions,
                "running": gate.running,
                "waiting": gate.admitted - gate.running,
                "max_concurrency": max_concurrency,
                "idle_timeout_s": idle_timeout_s,
                **stats,
            }
        )

    async def schema(_request):
        from envs.remote.openenv import SCHEMAS

        return _json_response(SCHEMAS)

    async def metadata(_request):
        return _json_response(
            {
                "name": "turngym",
                "description": f"turngym env server: {len(envs.list_envs())} envs, one session per episode",
                "version": "v1",
            }
        )

    async def list_all(_request):
        return _json_response(
            {
                "envs": [
                    {
                        "id": s.id,
                        "category": s.category,
                        "description": s.description,
                        "max_turns": s.max_turns,
                    }
                    for s in envs.list_envs()
                ]
            }
        )

    async def create(request):
        body = await read_body(request, "create")
        env_id = body.get("env_id")
        if not isinstance(env_id, str):
            raise RequestError(400, "bad_request", "`env_id` (a registered env id) is required")
        kwargs = body.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            raise RequestError(400, "bad_request", "`kwargs` must be an object of constructor options")
        kwargs = dict(kwargs)
        for key in ("max_turns", "format_penalty"):
            if body.get(key) is not None:
                if kwargs.get(key) is not None:
                    raise RequestError(400, "bad_request", f"`{key}` given twice (in the body and in kwargs)")
                kwargs[key] = body[key]
        try:
            env_spec = envs.spec(env_id)
        except UnknownEnvError as exc:
            raise _env_error(exc) from None
        operator = operator_kwargs.get(env_id, {})
        try:
            kwargs = {**check_client_kwargs(env_spec, kwargs, operator), **operator}
        except ClientKwargError as exc:
            stats["refused"] += 1
            raise RequestError(
                400,
                "refused_kwarg",
                f"{exc}; the server's operator sets the rest (python -m envs serve --env-kwargs ID:KEY=VALUE)"
                if exc.operator_only
                else str(exc),
                key=exc.key[:80],
                exception="ValueError",
            ) from None
        table.reserve()
        try:
            async with gate:
                env = await asyncio.to_thread(envs.make, env_id, **kwargs)
        except RequestError:
            raise
        except Exception as exc:
            raise _env_error(exc) from None
        finally:
            table.reserved -= 1
        session = Session(uuid.uuid4().hex, env_id, env)
        table.open[session.id] = session
        stats["sessions_created"] += 1
        unwrapped = env.unwrapped
        return _json_response(
            {
                "session_id": session.id,
                "env_id": env_id,
                "tool_schemas": list(getattr(unwrapped, "tool_schemas", None) or []),
                "max_action_chars": getattr(unwrapped, "max_action_chars", None),
                # Absent for envs that read no tool calls from text (no `set_tool_call_format`).
                **_call_format_of(unwrapped),
                "render_modes": list(unwrapped.metadata.get("render_modes", [])),
                "idle_timeout_s": idle_timeout_s,
            },
            201,
        )

    async def in_session(request, work):
        session = table.get(request.path_params["session_id"])
        if session.lock.locked():
            raise RequestError(
                409, "session_busy", "another call on this session is still running; one at a time"
            )
        async with session.lock:
            session.last_used = time.monotonic()
            try:
                async with gate:
                    return await work(session)
            finally:
                session.last_used = time.monotonic()

    async def reset(request):
        body = await read_body(request, "reset")
        seed, options = body.get("seed"), body.get("options")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise RequestError(
                400, "bad_request", f"`seed` must be a whole number >= 0 or null, got {seed!r}"
            )

        async def work(session: Session):
            try:
                messages, info = await asyncio.to_thread(session.env.reset, seed=seed, options=options)
            except Exception as exc:
                raise _env_error(exc) from None
            session.steps = 0
            return _json_response(
                {"observation": {"messages": messages}, "reward": None, "done": False, "info": info}
            )

        return await in_session(request, work)

    async def step(request):
        body = await read_body(request, "step")
        if "action" not in body and "action_type" not in body:
            raise RequestError(400, "bad_request", "`action` (the assistant's text or message) is required")
        try:
            action = decode_action(body)
        except ValueError as exc:
            raise RequestError(400, "bad_request", str(exc)) from None

        async def work(session: Session):
            try:
                messages, reward, terminated, truncated, info = await session.env.astep(action)
            except Exception as exc:
                raise _env_error(exc) from None
            session.steps += 1
            stats["steps"] += 1
            return _json_response(
                {
                    "observation": {"messages": messages},
                    "reward": reward,
                    "done": bool(terminated or truncated),
                    "terminated": terminated,
                    "truncated": truncated,
                    "info": info,
                }
            )

        return await in_session(request, work)

    async def tool_call_format(request):
        body = await read_body(request, "tool_call_format")
        if "tool_call_format" not in body:
            raise RequestError(
                400, "bad_request", "`tool_call_format` (a format name such as hermes, or null) is required"
            )
        chosen = body["tool_call_format"]

        async def work(session: Session):
            setter = getattr(session.env.unwrapped, "set_tool_call_format", None)
            try:
                if setter is None:
                    # What `envs.make(id, tool_call_format=...)` raises for such an env locally.
                    raise TypeError(f"{session.env_id}: tool_call_format only applies to TextEnv-based envs")
                setter(chosen)
            except Exception as exc:
                raise _env_error(exc) from None
            return _json_response(_call_format_of(session.env.unwrapped))

        return await in_session(request, work)

    async def tools(request):
        async def work(session: Session):
            return _json_response(
                {"tool_schemas": list(getattr(session.env.unwrapped, "tool_schemas", None) or [])}
            )

        return await in_session(request, work)

    async def expert_action(request):
        async def work(session: Session):
            try:
                action = await asyncio.to_thread(session.env.unwrapped.expert_action)
            except Exception as exc:
                raise _env_error(exc) from None
            return _json_response({"action": action})

        return await in_session(request, work)

    async def render(request):
        async def work(session: Session):
            from envs.text_env import render_transcript

            transcript = getattr(session.env.unwrapped, "transcript", None)
            text = render_transcript(transcript) if transcript is not None else None
            return _json_response({"text": text})

        return await in_session(request, work)

    async def state(request):
        async def work(session: Session):
            unwrapped = session.env.unwrapped
            return _json_response(
                {
                    "episode_id": session.id,
                    "step_count": session.steps,
                    "env_id": session.env_id,
                    "turn": getattr(unwrapped, "turn", None),
                    "episode_over": getattr(unwrapped, "episode_over", None),
                }
            )

        return await in_session(request, work)

    async def close(request):
        session_id = request.path_params["session_id"]
        session = table.get(session_id)
        async with session.lock:
            if table.forget(session_id, "closed") is None:
                raise RequestError(410, "session_closed", f"session {session_id!r} was closed")
            await asyncio.to_thread(_close_quietly, session.env)
        return _json_response({"closed": True, "session_id": session_id})

    async def reaper() -> None:
        while True:
            await asyncio.sleep(max(0.05, min(5.0, idle_timeout_s / 4)))
            for session in table.idle(time.monotonic()):
                if table.forget(session.id, "expired") is not None:
                    stats["sessions_expired"] += 1
                    await asyncio.to_thread(_close_quietly, session.env)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        task = asyncio.create_task(reaper())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for session_id in list(table.open):
                session = table.forget(session_id, "closed")
                if session is not None:
                    _close_quietly(session.env)

    async def not_found(request, exc: HTTPException):
        detail = f"{request.method} {request.url.path}: {exc.detail}"
        return _error_response(RequestError.from_http(exc.status_code, detail))

    async def internal(_request, exc: Exception):
        return _error_response(RequestError.internal(exc))

    sid = "/v1/sessions/{session_id}"
    routes = [
        Route("/health", guarded(health), methods=["GET"]),
        Route("/schema", guarded(schema), methods=["GET"]),
        Route("/metadata", guarded(metadata), methods=["GET"]),
        Route("/v1/envs", guarded(list_all), methods=["GET"]),
        Route("/v1/sessions", guarded(create), methods=["POST"]),
        Route(f"{sid}/reset", guarded(reset), methods=["POST"]),
        Route(f"{sid}/step", guarded(step), methods=["POST"]),
        Route(f"{sid}/tools", guarded(tools), methods=["GET"]),
        Route(f"{sid}/tool_call_format", guarded(tool_call_format), methods=["PUT"]),
        Route(f"{sid}/expert_action", guarded(expert_action), methods=["GET"]),
        Route(f"{sid}/render", guarded(render), methods=["GET"]),
        Route(f"{sid}/state", guarded(state), methods=["GET"]),
        Route(sid, guarded(close), methods=["DELETE"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found, Exception: internal},
    )
    app.state.sessions = table
    return app


def _call_format_of(unwrapped: Any) -> dict[str, Any]:
    """`{"tool_call_format": ...}` for an env that reads tool calls from reply text, else `{}`."""
    if getattr(unwrapped, "set_tool_call_format", None) is None:
        return {}
    return {"tool_call_format": getattr(unwrapped, "tool_call_format", None)}


def _close_quietly(env: Any) -> None:
    # A failing close must not keep the session (or the server) stuck.
    with contextlib.suppress(Exception):
        env.close()


def serve(args: argparse.Namespace) -> int:
    """Run the server until interrupted; bad settings raise `UsageError` (one line, exit status 2).

    Args:
        args: the `serve` subcommand's options (`envs.remote.add_serve_arguments`).

    Returns:
        The exit status.
    """
    import os

    import uvicorn

    from envs.remote.operator_config import OperatorConfigError, operator_kwargs, require_token

    token = args.token or os.environ.get("TURNGYM_ENV_TOKEN") or None
    try:
        require_token(args.host, token)
        for flag, value in (("--idle-timeout", args.idle_timeout), ("--body-timeout", args.body_timeout)):
            if not value > 0:
                raise OperatorConfigError(f"{flag} must be a number of seconds > 0, got {value}")
        if not args.max_body_mb > 0:
            raise OperatorConfigError(f"--max-body-mb must be > 0, got {args.max_body_mb}")
        operator = operator_kwargs(args.env_config, args.env_kwargs)
    except OperatorConfigError as exc:
        raise UsageError(str(exc)) from None
    check_port_free(args.host, args.port)  # one line now, rather than uvicorn's log once the app is built
    app = create_app(
        max_sessions=args.max_sessions,
        max_concurrency=args.max_concurrency,
        max_queue=args.max_queue,
        idle_timeout_s=args.idle_timeout,
        token=token,
        max_body_mb=args.max_body_mb,
        body_timeout_s=args.body_timeout,
        operator_kwargs=operator,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m envs.remote.server` (the same as `python -m envs serve`)."""
    parser = ArgumentParser(prog="python -m envs serve", description=__doc__.splitlines()[0])
    from envs.remote import add_serve_arguments

    add_serve_arguments(parser)
    return run_cli("envs serve", lambda args: serve(parser.parse_args(args)), argv)


if __name__ == "__main__":
    raise SystemExit(main())
