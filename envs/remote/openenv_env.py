"""OpenEnvEnv: an OpenEnv server (openenv-core 0.3.0's protocol) played as a turngym text env.

`envs.make("openenv", base_url="http://host:port")` opens one WebSocket session on the server's `/ws`:
OpenEnv's plain-HTTP `POST /reset` and `/step` build a fresh env per request, so no episode survives
between them. Each observation becomes one user message, the assistant's reply becomes the server's
action (one text field, or a JSON object of the action's fields; see `action_target`), `done` ends the
episode as terminated. The protocol is written from openenv-core's source (`core/env_client.py`,
`core/env_server/http_server.py`, `types.py`); openenv-core itself is not a dependency (it pulls gradio,
fastmcp and an older pillow than ours). The WebSocket library loads only when an env is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any

from envs.core.errors import InvalidOptions
from envs.core.number_bounds import check_env_numbers, check_reward
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from envs.remote.wire import RemoteEnvError
from turngym.chat.message import Message, system, user

_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)
#: Fields of every OpenEnv action, and of every observation (whose reward and done travel beside it).
_ACTION_BASE = ("metadata",)
_OBSERVATION_BASE = ("metadata", "reward", "done")
_MB = 1024 * 1024


class OpenEnvEnv(TextEnv):
    """One session on an OpenEnv server: reset/step over its `/ws`, observations as chat messages.

    `action_field`: "auto" (the reply's text goes to the action's one free-text field, or must be a JSON
    object of its fields when it has no such single field), "json" (always a JSON object), or a field
    name. `observation_field`: the observation field shown to the agent (default: the only field, or
    every field as `name: value` lines). `system_prompt` opens every episode. Local `tools=` run here as
    in any TextEnv; the server sees only replies without tool calls.
    """

    def __init__(
        self,
        base_url: str,
        *,
        action_field: str = "auto",
        observation_field: str | None = None,
        system_prompt: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 300.0,
        tools: Any = None,
        render_mode: str | None = None,
    ):
        try:
            import websockets  # noqa: F401  (checked now, so a missing library fails at `make`)
        except ImportError:
            raise ImportError(
                "envs.make('openenv') needs the websockets library: pip install 'turngym[openenv]'"
            ) from None
        check_env_numbers(
            type(self).__name__, connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s
        )
        super().__init__(tools=tools, render_mode=render_mode)
        self.base_url, self.ws_url = _urls(base_url)
        self.connect_timeout_s, self.message_timeout_s = connect_timeout_s, message_timeout_s
        self.system_prompt = system_prompt
        schemas = self._fetch_schemas()
        action_schema = schemas["action"]
        self.action_fields = _fields(action_schema)
        self.action_target = _action_target(action_schema, action_field, self.base_url)
        self.observation_field = _observation_field(schemas.get("observation"), observation_field)
        self.action_help = _action_help(self.action_target, action_schema)
        self._ws: Any = None
        self._seed: int | None = None

    # ----- TextEnv ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on the server; options go to its `reset` as keyword arguments (seed too)."""
        self._seed = seed
        return super().reset(seed=seed, options=options)

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Async `reset`: the exchange with the server runs in a worker thread (see `_areset`)."""
        self._seed = seed
        return await super().areset(seed=seed, options=options)

    async def _areset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        # The session's socket is synchronous; a worker thread keeps the event loop free.
        return await asyncio.to_thread(self._reset, options)

    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        data = dict(options)
        if self._seed is not None:
            data["seed"] = self._seed
        answer = self._exchange({"type": "reset", "data": data}, "observation", during="reset")
        if answer.get("type") == "error":
            raise InvalidOptions(f"openenv: the server refused reset({_short(data)}): {_error_text(answer)}")
        observation, _reward, _done = self._result(answer, "reset")
        messages = [system(self.system_prompt)] if self.system_prompt else []
        messages.append(user(self._observation_text(observation)))
        return messages, {"openenv_observation": observation}

    def _respond(self, turn) -> StepResult:
        action, problem = self._action_from(turn.content)
        if problem is not None:
            return self._format_error(problem)
        answer = self._exchange({"type": "step", "data": action}, "observation", during="step")
        if answer.get("type") == "error":
            # The action's pydantic model refused it, or the env raised on it (OpenEnv envs expect valid
            # typed actions): either way the reply could not be used, and the session goes on.
            return self._format_error(
                f"the server refused the action {_short(action)}: {_error_text(answer)}"
            )
        observation, reward, done = self._result(answer, "step")
        return StepResult(
            [user(self._observation_text(observation))],
            reward,
            terminated=done,
            info={"openenv_observation": observation},
        )

    async def _arespond(self, turn) -> StepResult:
        # The session's socket is synchronous; a worker thread keeps the event loop free.
        return await asyncio.to_thread(self._respond, turn)

    def state(self) -> dict[str, Any]:
        """The server env's `State` (episode_id, step_count, and whatever else the env reports)."""
        answer = self._exchange({"type": "state"}, "state", during="state")
        data = answer.get("data")
        if answer.get("type") == "error" or not isinstance(data, dict):
            raise self._bad(f"state answered {_short(answer)}")
        return data

    def close(self) -> None:
        """End the server session (idempotent; a server already gone is not an error)."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.send(json.dumps({"type": "close"}))
            with contextlib.suppress(Exception):
                ws.close()
        super().close()

    # ----- replies and observations ----------------------------------------------------------------
    def _action_from(self, text: str) -> tuple[dict[str, Any] | None, str | None]:
        """The action's JSON fields built from the reply text, or what is wrong with the reply."""
        if self.action_target is not None:
            return {self.action_target: text}, None
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        try:
            action = json.loads(body)
        except (ValueError, RecursionError):
            return None, f"the reply must be one JSON object with the action's fields, got {_short(text)}"
        if not isinstance(action, dict):
            fields = ", ".join(self.action_fields)
            return None, f"the reply must be a JSON object (fields: {fields}), got {type(action).__name__}"
        return action, None

    def _observation_text(self, observation: dict[str, Any]) -> str:
        if self.observation_field is not None:
            if self.observation_field not in observation:
                raise self._bad(f"observation has no field {self.observation_field!r}: {_short(observation)}")
            return _text(observation[self.observation_field])
        if len(observation) == 1:
            return _text(next(iter(observation.values())))
        return "\n".join(f"{name}: {_text(value)}" for name, value in observation.items())

    def _result(self, answer: dict[str, Any], during: str) -> tuple[dict[str, Any], float, bool]:
        data = answer.get("data")
        observation = data.get("observation") if isinstance(data, dict) else None
        if not isinstance(observation, dict):
            raise self._bad(f"{during} answered without an observation object: {_short(answer)}")
        reward, done = data.get("reward"), data.get("done", False)
        if reward is not None and (not isinstance(reward, int | float)):
            raise self._bad(f"{during} answered a reward that is not a number: {_short(reward)}")
        problem = None if reward is None else check_reward(reward)
        if problem is not None:  # NaN, inf, 3e38 or a bool: the server's data, bounded here
            raise self._bad(f"{during} answered {problem}")
        if not isinstance(done, bool):
            raise self._bad(f"{during} answered `done` that is not true/false: {_short(done)}")
        # OpenEnv's reward is optional (None at reset, or for envs that score only at the end).
        return observation, 0.0 if reward is None else float(reward), done

    # ----- the server --------------------------------------------------------------------------------
    def _fetch_schemas(self) -> dict[str, Any]:
        import httpx

        url = f"{self.base_url}/schema"
        try:
            response = httpx.get(url, timeout=self.connect_timeout_s)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from None
        try:
            schemas = response.json()
        except ValueError:
            schemas = None
        if (
            response.status_code != 200
            or not isinstance(schemas, dict)
            or not isinstance(schemas.get("action"), dict)
        ):
            raise RemoteEnvError(
                response.status_code,
                "not_openenv",
                f"{url} answered HTTP {response.status_code} without an action schema "
                f"({_short(response.text)}); is base_url= an OpenEnv server (openenv-core 0.2 or later)?",
            )
        return schemas

    def _connection(self):
        if self._ws is not None:
            return self._ws
        from websockets.exceptions import InvalidStatus, WebSocketException
        from websockets.sync.client import connect

        try:
            ws = connect(
                self.ws_url, open_timeout=self.connect_timeout_s, max_size=100 * _MB, close_timeout=2
            )
            # Entered as its context manager (left by `close`/`_drop`): websockets 17 warns about bare ones.
            self._ws = ws.__enter__()
        except InvalidStatus as exc:
            raise RemoteEnvError(
                exc.response.status_code,
                "no_session",
                f"{self.ws_url} refused the WebSocket (HTTP {exc.response.status_code}); the server at "
                "base_url= does not serve OpenEnv's /ws sessions",
            ) from None
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise _unreachable(self.ws_url, exc) from None
        return self._ws

    def _exchange(self, message: dict[str, Any], expected: str, *, during: str) -> dict[str, Any]:
        """Send one message and read its answer: `{"type": expected, ...}`, or an error about the message
        itself (a refused reset or step action, an env raising on a step) for the caller to report.

        Any other answer, or none, closes the socket: a late or stray answer would be read as the next one.
        """
        from websockets.exceptions import ConnectionClosed

        ws = self._connection()
        try:
            ws.send(json.dumps(message, ensure_ascii=False))
            raw = ws.recv(timeout=self.message_timeout_s)
        except TimeoutError:
            self._drop()
            raise RemoteEnvError(
                0,
                "timeout",
                f"OpenEnv server {self.base_url} did not answer {during} within {self.message_timeout_s:g} s "
                "(message_timeout_s=); the session is closed, reset() opens a new one",
            ) from None
        except ConnectionClosed as exc:
            self._ws = None
            # A server refusing the session (at capacity) says why, then closes: its last words explain.
            raw = _last_words(ws)
            if raw is None:
                raise RemoteEnvError(
                    0,
                    "disconnected",
                    f"OpenEnv server {self.base_url} closed the session during {during} ({exc}); "
                    "reset() opens a new one",
                ) from None
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            answer = None
        if not isinstance(answer, dict):
            raise self._bad(f"{during} answered non-JSON or not an object: {_short(raw)}")
        kind = answer.get("type")
        if kind == expected:
            return answer
        if kind == "error":
            data = answer.get("data") if isinstance(answer.get("data"), dict) else {}
            # Answers about this message (the session goes on): the caller turns them into feedback.
            if data.get("code") == "VALIDATION_ERROR" and during in ("reset", "step"):
                return answer
            if data.get("code") == "EXECUTION_ERROR" and during == "step":
                return answer
            if data.get("code") == "CAPACITY_REACHED":
                self._drop()
                raise RemoteEnvError(
                    503,
                    "capacity_reached",
                    f"OpenEnv server {self.base_url} is full ({_error_text(answer)}); close other sessions "
                    "or raise its max_concurrent_envs",
                )
            # The server answered in turn (its env raised, say): the session stays usable after this.
            raise RemoteEnvError(
                0,
                "server_error",
                f"OpenEnv server {self.base_url}: {during} failed there: {_error_text(answer)}",
            )
        raise self._bad(f"{during} answered type {_short(kind)}, expected {expected!r}: {_short(answer)}")

    def _bad(self, what: str) -> RemoteEnvError:
        self._drop()
        return RemoteEnvError(
            0,
            "bad_response",
            f"OpenEnv server {self.base_url}: {what}; the session is closed, reset() opens a new one",
        )

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close()


def _unreachable(url: str, exc: Exception) -> RemoteEnvError:
    return RemoteEnvError(
        0,
        "unreachable",
        f"OpenEnv server {url} unreachable ({type(exc).__name__}: {exc}); start it or fix base_url=",
    )


def _last_words(ws) -> str | None:
    """A message the server sent before closing, if one is still buffered."""
    try:
        return ws.recv(timeout=0)
    except Exception:  # closed with nothing left, or anything else: there are no last words
        return None


def _urls(base_url: Any) -> tuple[str, str]:
    """(http URL, ws URL of `/ws`) of an OpenEnv server given as http(s):// or ws(s)://."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://", "ws://", "wss://")):
        raise ValueError(f"base_url= must be the OpenEnv server's URL (http://host:port), got {base_url!r}")
    url = base_url.rstrip("/")
    scheme, rest = url.split("://", 1)
    secure = scheme in ("https", "wss")
    return f"{'https' if secure else 'http'}://{rest}", f"{'wss' if secure else 'ws'}://{rest}/ws"


def _fields(schema: dict[str, Any], base: tuple[str, ...] = _ACTION_BASE) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {k: v for k, v in properties.items() if k not in base and isinstance(v, dict)}


def _is_free_text(prop: dict[str, Any]) -> bool:
    # A Literal (const/enum) string is a tag such as MCP's `type: "call_tool"`, not room for a reply.
    options = prop.get("anyOf") or [prop]
    return any(
        isinstance(o, dict) and o.get("type") == "string" and "const" not in o and "enum" not in o
        for o in options
    )


def _action_target(schema: dict[str, Any], action_field: str, base_url: str) -> str | None:
    """The action field that receives the reply's text, or None when the reply is the action as JSON."""
    fields = _fields(schema)
    if action_field == "json":
        return None
    if action_field != "auto":
        if action_field not in fields:
            raise ValueError(
                f"action_field={action_field!r} is not a field of {base_url}'s action "
                f"({', '.join(fields) or 'it has none'}); name one of them, or use 'auto' or 'json'"
            )
        return action_field
    text_fields = [name for name, prop in fields.items() if _is_free_text(prop)]
    required = [name for name in schema.get("required") or () if name not in _ACTION_BASE]
    if len(text_fields) == 1 and set(required) <= set(text_fields):
        return text_fields[0]
    return None


def _observation_field(schema: Any, observation_field: str | None) -> str | None:
    if observation_field is None:
        return None
    fields = _fields(schema, _OBSERVATION_BASE) if isinstance(schema, dict) else {}
    if fields and observation_field not in fields:
        raise ValueError(
            f"observation_field={observation_field!r} is not a field of the server's observation "
            f"({', '.join(fields)})"
        )
    return observation_field


def _action_help(target: str | None, schema: dict[str, Any]) -> str:
    if target is not None:
        return ""
    fields = _fields(schema)
    required = set(schema.get("required") or ())
    listed = ", ".join(
        f"{name} ({_describe(prop)}{', required' if name in required else ''})"
        for name, prop in fields.items()
    )
    return f"Reply with one JSON object holding the action's fields: {listed or 'none'}."


def _describe(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "one of " + ", ".join(_text(v) for v in prop["enum"])
    if "const" in prop:
        return f"always {_text(prop['const'])}"
    options = prop.get("anyOf")
    if isinstance(options, list):
        return " or ".join(_describe(o) for o in options if isinstance(o, dict))
    return str(prop.get("type", "any value"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _error_text(answer: dict[str, Any]) -> str:
    data = answer.get("data") if isinstance(answer.get("data"), dict) else {}
    text = f"{data.get('message', 'no message')} ({data.get('code', 'no code')})"
    errors = data.get("errors")
    if isinstance(errors, list) and errors:
        # pydantic's errors: where ("loc") and what ("msg") is enough to fix the reply.
        details = [
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
            for e in errors[:5]
            if isinstance(e, dict)
        ]
        text += ": " + "; ".join(details)
    return text


def _short(value: Any, limit: int = 200) -> str:
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... [{len(text)} characters]"
