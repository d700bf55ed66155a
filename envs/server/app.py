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
(`envs.registry.client_kwargs`); `max_turns` and `format_penalty` only stricter than the operator's. Everything else
(isolation, sandbox backends and endpoints, tool files, paths, opponents) is set by the operator with
`--env-kwargs ID:KEY=VALUE` or `--env-config FILE`; a client sending any of it gets 400 `refused_kwarg`
naming the key, and nothing is made. Beyond loopback the server does not start without a token.

Load and faults: at most `max_sessions` sessions are open (503 `sessions_full` beyond, with Retry-After),
at most `max_sessions_per_client` of them by one client, told apart by peer address (429
`too_many_sessions` beyond, with Retry-After);
at most `max_concurrency` env calls run at once and `max_queue` wait (429 `overloaded` beyond); a session
idle for `idle_timeout_s` is closed (later calls get 410 `session_expired`); two calls at once on one
session get 409 `session_busy`; a request body not received within `body_timeout_s` gets 408. Env calls
that block (make, reset, close, the expert) run in worker threads; `step` awaits the env's `astep`, as the
rollout does. The gate, the body limits, the token and the error shape are the shared serving layer's
(`turngym.serving`); this module holds the sessions and one handler per route.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import envs
from envs.core.errors import InvalidOptions, ResetNeeded, UnknownEnvError
from envs.core.protocol import EnvProtocol
from envs.registry.client_kwargs import ClientKwargError, check_client_kwargs
from envs.remote.wire import decode_action, to_json
from turngym.common.cli_errors import ArgumentParser, UsageError, run_cli
from turngym.serving import (
    AdmissionGate,
    RequestError,
    json_response,
    make_app,
    parse_json_object,
    read_body,
    run_server,
    server_settings,
)

#: The environment variable that may hold the server's token (and RemoteEnv's).
TOKEN_ENV = "TURNGYM_ENV_TOKEN"
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
    env: EnvProtocol
    client: str = ""  # who opened it (`client_of`), for the per-client cap
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    steps: int = 0


def client_of(request: Any) -> str:
    """Who a request comes from, for the per-client session cap: its peer address (IPv6: its /64).

    Not the token: a server has one, shared by all its clients, so it cannot tell them apart. An IPv6
    host usually holds a whole /64, so that is one client.

    Example:
        >>> from types import SimpleNamespace as Peer
        >>> client_of(Peer(client=Peer(host="10.0.0.7"))), client_of(Peer(client=Peer(host="2001:db8::1:2")))
        ('10.0.0.7', '2001:db8::/64')
    """
    from envs.server.peer import peer_key

    return peer_key((request.client.host,) if request.client is not None else None)


class SessionTable:
    """Open sessions, bounded in all and per client; idle ones expire; ids of expired ones are remembered."""

    def __init__(self, max_sessions: int, idle_timeout_s: float, max_per_client: int | None = None):
        self.max_sessions, self.idle_timeout_s = max_sessions, idle_timeout_s
        self.max_per_client = max_sessions if max_per_client is None else max_per_client
        self.open: dict[str, Session] = {}
        self.reserved = 0  # sessions being made (counted against the bound before `make` returns)
        self.held: collections.Counter[str] = collections.Counter()  # client -> open + being made
        self.gone: collections.OrderedDict[str, str] = collections.OrderedDict()

    def reserve(self, client: str = "") -> None:
        """Count a session being made for `client`, or refuse: 503 when the table is full, 429 over its share."""
        retry = max(1, min(60, math.ceil(self.idle_timeout_s / 4)))
        if len(self.open) + self.reserved >= self.max_sessions:
            raise RequestError(
                503,
                "sessions_full",
                f"server full: {len(self.open) + self.reserved} of {self.max_sessions} sessions open; close "
                f"finished sessions (DELETE /v1/sessions/<id>) or retry after {retry}s",
                retry_after=retry,
            )
        if self.held[client] >= self.max_per_client:
            raise RequestError(
                429,
                "too_many_sessions",
                f"this client holds {self.held[client]} sessions, the most one client may have open on this "
                f"server ({self.max_per_client} of {self.max_sessions}); close finished sessions (DELETE "
                f"/v1/sessions/<id>) or retry after {retry}s",
                retry_after=retry,
            )
        self.reserved += 1
        self.held[client] += 1

    def made(self, client: str, opened: bool) -> None:
        """End a `reserve`: the session is open (still held by `client`), or was not made (freed)."""
        self.reserved -= 1
        if not opened:
            self._release(client)

    def _release(self, client: str) -> None:
        self.held[client] -= 1
        if self.held[client] <= 0:
            del self.held[client]

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
            self._release(session.client)
            self.gone[session_id] = why
            while len(self.gone) > 10_000:
                self.gone.popitem(last=False)
        return session

    def idle(self, now: float) -> list[Session]:
        """Sessions unused for longer than the idle timeout and not in a call right now."""
        return [
            s for s in self.open.values() if now - s.last_used > self.idle_timeout_s and not s.lock.locked()
        ]


@dataclass
class ServerState:
    """What the handlers share: the sessions, the gate, the limits, the operator's kwargs and counters."""

    table: SessionTable
    gate: AdmissionGate
    max_body_bytes: int
    body_timeout_s: float
    operator_kwargs: dict[str, dict[str, Any]]
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "sessions_created": 0,
            "sessions_expired": 0,
            "steps": 0,
            "rejected": 0,
            "refused": 0,
        }
    )

    async def body(self, request: Any, route: str) -> dict[str, Any]:
        """The request's JSON object, with only the fields `route` takes (400/408/413 otherwise)."""
        raw = await read_body(request, self.max_body_bytes, self.body_timeout_s)
        return parse_json_object(raw, _FIELDS[route])

    async def in_session(self, request: Any, work: Callable[[Session], Awaitable[Any]]) -> Any:
        """Run `work` on the request's session: one call at a time (409 beyond), through the gate."""
        session = self.table.get(request.path_params["session_id"])
        if session.lock.locked():
            raise RequestError(
                409, "session_busy", "another call on this session is still running; one at a time"
            )
        async with session.lock:
            session.last_used = time.monotonic()
            try:
                async with self.gate.admitted_slot():
                    return await work(session)
            finally:
                session.last_used = time.monotonic()

    def counted(self, exc: RequestError) -> None:
        """Count a refusal for load (429, 503) in `/health`'s `rejected`."""
        if exc.status in (429, 503):
            self.stats["rejected"] += 1


def _reply(content: Any, status: int = 200) -> Any:
    return json_response(content, status, encode=to_json)


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


# --- the handlers: one per route -----------------------------------------------------------------------


async def health(state: ServerState, _request: Any) -> Any:
    """GET /health: liveness, sessions open, env calls running and waiting, counters."""
    return _reply(
        {
            "status": "healthy",
            "protocol": "v1",
            "sessions": len(state.table.open),
            "max_sessions": state.table.max_sessions,
            "max_sessions_per_client": state.table.max_per_client,
            "running": state.gate.running,
            "waiting": state.gate.waiting,
            "max_concurrency": state.gate.concurrency,
            "idle_timeout_s": state.table.idle_timeout_s,
            **state.stats,
        }
    )


async def schema(_state: ServerState, _request: Any) -> Any:
    """GET /schema: OpenEnv's action, observation and state schemas."""
    from envs.server.openenv_schema import SCHEMAS

    return _reply(SCHEMAS)


async def metadata(_state: ServerState, _request: Any) -> Any:
    """GET /metadata: OpenEnv's server description."""
    return _reply(
        {
            "name": "turngym",
            "description": f"turngym env server: {len(envs.list_envs())} envs, one session per episode",
            "version": "v1",
        }
    )


async def list_envs(_state: ServerState, _request: Any) -> Any:
    """GET /v1/envs: every registered env's id, category, description and turn limit."""
    listed = [
        {"id": s.id, "category": s.category, "description": s.description, "max_turns": s.max_turns}
        for s in envs.list_envs()
    ]
    return _reply({"envs": listed})


def _client_kwargs(state: ServerState, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The env id and the kwargs to make it with: the client's (checked) under the operator's."""
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
    operator = state.operator_kwargs.get(env_id, {})
    try:
        return env_id, {**check_client_kwargs(env_spec, kwargs, operator), **operator}
    except ClientKwargError as exc:
        state.stats["refused"] += 1
        raise RequestError(
            400,
            "refused_kwarg",
            f"{exc}; the server's operator sets the rest (python -m envs serve --env-kwargs ID:KEY=VALUE)"
            if exc.operator_only
            else str(exc),
            key=exc.key[:80],
            exception="ValueError",
        ) from None


async def create(state: ServerState, request: Any) -> Any:
    """POST /v1/sessions: make the env (nothing is made for a refused kwarg) and open a session."""
    env_id, kwargs = _client_kwargs(state, await state.body(request, "create"))
    client = client_of(request)
    state.table.reserve(client)
    env = None
    try:
        async with state.gate.admitted_slot():
            env = await asyncio.to_thread(envs.make, env_id, **kwargs)
    except RequestError:
        raise
    except Exception as exc:
        raise _env_error(exc) from None
    finally:
        state.table.made(client, opened=env is not None)
    session = Session(uuid.uuid4().hex, env_id, env, client=client)
    state.table.open[session.id] = session
    state.stats["sessions_created"] += 1
    opened = {
        "session_id": session.id,
        "env_id": env_id,
        "tool_schemas": list(env.tool_schemas or []),
        "max_action_chars": env.max_action_chars,
        "tool_call_format": env.tool_call_format,
        "render_modes": list(env.unwrapped.metadata.get("render_modes", [])),
        "idle_timeout_s": state.table.idle_timeout_s,
    }
    return _reply(opened, 201)


async def reset(state: ServerState, request: Any) -> Any:
    """POST /v1/sessions/{id}/reset: start an episode with the client's seed and options."""
    body = await state.body(request, "reset")
    seed, options = body.get("seed"), body.get("options")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise RequestError(400, "bad_request", f"`seed` must be a whole number >= 0 or null, got {seed!r}")

    async def work(session: Session) -> Any:
        try:
            messages, info = await asyncio.to_thread(session.env.reset, seed=seed, options=options)
        except Exception as exc:
            raise _env_error(exc) from None
        session.steps = 0
        return _reply({"observation": {"messages": messages}, "reward": None, "done": False, "info": info})

    return await state.in_session(request, work)


async def step(state: ServerState, request: Any) -> Any:
    """POST /v1/sessions/{id}/step: play one assistant turn with the env's `astep`."""
    body = await state.body(request, "step")
    if "action" not in body and "action_type" not in body:
        raise RequestError(400, "bad_request", "`action` (the assistant's text or message) is required")
    try:
        action = decode_action(body)
    except ValueError as exc:
        raise RequestError(400, "bad_request", str(exc)) from None

    async def work(session: Session) -> Any:
        try:
            messages, reward, terminated, truncated, info = await session.env.astep(action)
        except Exception as exc:
            raise _env_error(exc) from None
        session.steps += 1
        state.stats["steps"] += 1
        return _reply(
            {
                "observation": {"messages": messages},
                "reward": reward,
                "done": bool(terminated or truncated),
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
            }
        )

    return await state.in_session(request, work)


async def tool_call_format(state: ServerState, request: Any) -> Any:
    """PUT /v1/sessions/{id}/tool_call_format: how the env reads tool calls written in reply text."""
    body = await state.body(request, "tool_call_format")
    if "tool_call_format" not in body:
        raise RequestError(
            400, "bad_request", "`tool_call_format` (a format name such as hermes, or null) is required"
        )
    chosen = body["tool_call_format"]

    async def work(session: Session) -> Any:
        try:
            session.env.set_tool_call_format(chosen)
        except Exception as exc:
            raise _env_error(exc) from None
        return _reply({"tool_call_format": session.env.tool_call_format})

    return await state.in_session(request, work)


async def tools(state: ServerState, request: Any) -> Any:
    """GET /v1/sessions/{id}/tools: the tool schemas the agent may call."""

    async def work(session: Session) -> Any:
        return _reply({"tool_schemas": list(session.env.tool_schemas or [])})

    return await state.in_session(request, work)


async def expert_action(state: ServerState, request: Any) -> Any:
    """GET /v1/sessions/{id}/expert_action: the env's scripted expert move (501 for envs without one)."""

    async def work(session: Session) -> Any:
        try:
            action = await asyncio.to_thread(session.env.unwrapped.expert_action)
        except Exception as exc:
            raise _env_error(exc) from None
        return _reply({"action": action})

    return await state.in_session(request, work)


async def render(state: ServerState, request: Any) -> Any:
    """GET /v1/sessions/{id}/render: the episode's transcript as text (null before a reset)."""

    async def work(session: Session) -> Any:
        from envs.core.text_env import render_transcript

        transcript = getattr(session.env.unwrapped, "transcript", None)
        return _reply({"text": render_transcript(transcript) if transcript is not None else None})

    return await state.in_session(request, work)


async def episode_state(state: ServerState, request: Any) -> Any:
    """GET /v1/sessions/{id}/state: OpenEnv's state (episode id, step count) plus the turn."""

    async def work(session: Session) -> Any:
        unwrapped = session.env.unwrapped
        return _reply(
            {
                "episode_id": session.id,
                "step_count": session.steps,
                "env_id": session.env_id,
                "turn": getattr(unwrapped, "turn", None),
                "episode_over": getattr(unwrapped, "episode_over", None),
            }
        )

    return await state.in_session(request, work)


async def close(state: ServerState, request: Any) -> Any:
    """DELETE /v1/sessions/{id}: close the env and free the session's slot."""
    session_id = request.path_params["session_id"]
    session = state.table.get(session_id)
    async with session.lock:
        if state.table.forget(session_id, "closed") is None:
            raise RequestError(410, "session_closed", f"session {session_id!r} was closed")
        await asyncio.to_thread(_close_quietly, session.env)
    return _reply({"closed": True, "session_id": session_id})


_SESSION = "/v1/sessions/{session_id}"
ROUTES = [
    ("GET", "/health", health),
    ("GET", "/schema", schema),
    ("GET", "/metadata", metadata),
    ("GET", "/v1/envs", list_envs),
    ("POST", "/v1/sessions", create),
    ("POST", f"{_SESSION}/reset", reset),
    ("POST", f"{_SESSION}/step", step),
    ("GET", f"{_SESSION}/tools", tools),
    ("PUT", f"{_SESSION}/tool_call_format", tool_call_format),
    ("GET", f"{_SESSION}/expert_action", expert_action),
    ("GET", f"{_SESSION}/render", render),
    ("GET", f"{_SESSION}/state", episode_state),
    ("DELETE", _SESSION, close),
]


async def _reap_idle(state: ServerState) -> None:
    """Close sessions idle past the timeout, checking a few times per timeout."""
    while True:
        await asyncio.sleep(max(0.05, min(5.0, state.table.idle_timeout_s / 4)))
        for session in state.table.idle(time.monotonic()):
            if state.table.forget(session.id, "expired") is not None:
                state.stats["sessions_expired"] += 1
                await asyncio.to_thread(_close_quietly, session.env)


def _lifespan(state: ServerState):
    @contextlib.asynccontextmanager
    async def lifespan(_app: Any):
        task = asyncio.create_task(_reap_idle(state))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for session_id in list(state.table.open):
                session = state.table.forget(session_id, "closed")
                if session is not None:
                    _close_quietly(session.env)

    return lifespan


def create_app(
    *,
    max_sessions: int = 256,
    max_sessions_per_client: int | None = None,
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
        max_sessions_per_client: open sessions at most per client, by peer address (`client_of`; 429
            beyond); default half of `max_sessions`, so one client cannot hold every slot.
        max_concurrency: env calls running at once.
        max_queue: env calls waiting beyond those (429 beyond); default 4 x max_concurrency.
        idle_timeout_s: a session unused this long is closed and its env released.
        token: when set, every route but /health needs `Authorization: Bearer <token>`.
        max_body_mb: request bodies over this get 413.
        body_timeout_s: a request body not received whole within this gets 408.
        operator_kwargs: env id -> kwargs the operator sets for every session of that env; clients cannot
            override them.

    Returns:
        A Starlette app (run it with uvicorn); `app.state.sessions` is its session table.
    """
    state = ServerState(
        table=SessionTable(
            max_sessions,
            idle_timeout_s,
            max(1, max_sessions // 2) if max_sessions_per_client is None else max_sessions_per_client,
        ),
        gate=AdmissionGate(
            max_concurrency, 4 * max_concurrency if max_queue is None else max_queue, what="env calls"
        ),
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        body_timeout_s=body_timeout_s,
        operator_kwargs={k: dict(v) for k, v in (operator_kwargs or {}).items()},
    )
    app = make_app(
        [(method, path, functools.partial(handler, state)) for method, path, handler in ROUTES],
        token=token,
        lifespan=_lifespan(state),
        encode=to_json,
        on_error=state.counted,
    )
    app.state.sessions = state.table
    return app


def _close_quietly(env: Any) -> None:
    # A failing close must not keep the session (or the server) stuck.
    with contextlib.suppress(Exception):
        env.close()


def sessions_per_client(args: argparse.Namespace) -> int:
    """`--max-sessions-per-client`, checked (default: half of `--max-sessions`, at least 1).

    Raises:
        UsageError: a number below 1 (one line).
    """
    given = getattr(args, "max_sessions_per_client", None)
    if given is None:
        return max(1, args.max_sessions // 2)
    if given < 1:
        raise UsageError(f"--max-sessions-per-client must be at least 1, got {given}")
    return given


def serve(args: argparse.Namespace) -> int:
    """Run the server until interrupted; bad settings raise `UsageError` (one line, exit status 2).

    Args:
        args: the `serve` subcommand's options (`envs.server.add_serve_arguments`).

    Returns:
        The exit status.
    """
    from envs.server.operator_config import OperatorConfigError, operator_kwargs

    settings = server_settings(args, token_env=TOKEN_ENV)
    if not args.idle_timeout > 0:
        raise UsageError(f"--idle-timeout must be a number of seconds > 0, got {args.idle_timeout}")
    per_client = sessions_per_client(args)
    try:
        operator = operator_kwargs(args.env_config, args.env_kwargs)
    except OperatorConfigError as exc:
        raise UsageError(str(exc)) from None
    app = create_app(
        max_sessions=args.max_sessions,
        max_sessions_per_client=per_client,
        max_concurrency=settings["max_concurrency"],
        max_queue=settings["max_queue"],
        idle_timeout_s=args.idle_timeout,
        token=settings["token"],
        max_body_mb=args.max_body_mb,
        body_timeout_s=settings["body_timeout_s"],
        operator_kwargs=operator,
    )
    run_server(app, args)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m envs.server.app` (the same as `python -m envs serve`)."""
    parser = ArgumentParser(prog="python -m envs serve", description=__doc__.splitlines()[0])
    from envs.server import add_serve_arguments

    add_serve_arguments(parser)
    return run_cli("envs serve", lambda args: serve(parser.parse_args(args)), argv)


if __name__ == "__main__":
    raise SystemExit(main())
