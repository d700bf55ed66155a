"""RemoteEnv: an env served by `python -m envs serve`, driven like the local one (`envs.make(id, remote=url)`).

The server builds the env with `envs.make` (wrappers included), so observations, rewards, info and tool
schemas are the local env's, carried as JSON. Errors the local env raises (bad reset options, step before
reset, unknown ids, bad constructor kwargs) are raised here with the same types; trouble with the server
itself raises `RemoteEnvError` (a RuntimeError) with the server's code and message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

import gymnasium as gym

from envs.core.errors import InvalidOptions, ResetNeeded, UnknownEnvError
from envs.core.number_bounds import check_reward
from envs.core.spaces import AssistantAction, ChatMessages
from envs.remote.wire import RemoteEnvError, encode_action, to_json
from envs.tool_layer.turn_limits import DEFAULT_MAX_ACTION_CHARS

#: Exception types the server names, raised again here so remote code fails as local code would.
_RAISED_AS = {
    "InvalidOptions": InvalidOptions,
    "ResetNeeded": ResetNeeded,
    "UnknownEnvError": UnknownEnvError,
    "NotImplementedError": NotImplementedError,
    "ValueError": ValueError,
    "TypeError": TypeError,
}


class RemoteEnv(gym.Env):
    """A session on an env server, with the env contract (`envs.core.protocol.EnvProtocol`) carried over HTTP:
    `reset`/`areset`, `step`/`astep`, `tool_schemas`, `max_action_chars`, `set_tool_call_format`, plus
    `expert_action`, `render`, `state` and `close`. What only the operator may set (the turn limits)
    raises here with a message saying so; a served env's opponent is the operator's too, set where the
    server starts.

    Requests refused for load (429 `overloaded`, 503 `sessions_full`) are retried, honouring Retry-After,
    for up to `retry_s` seconds; nothing else is retried, since a step must never be taken twice.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        env_id: str,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = 300.0,
        retry_s: float = 60.0,
        render_mode: str | None = None,
        max_turns: int | None = None,
        format_penalty: float | None = None,
        turngym_spec: Any = None,
        **kwargs: Any,
    ):
        import httpx

        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.env_id, self.url = env_id, url.rstrip("/")
        self.render_mode = render_mode
        self.retry_s = retry_s
        token = token if token is not None else os.environ.get("TURNGYM_ENV_TOKEN") or None
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        # One timeout for connecting too: on a loaded host, accepting 64 new connections can take over 10 s.
        self._timeout = httpx.Timeout(timeout_s)
        self._client = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._timeout)
        self._async: tuple[Any, Any] | None = None  # (event loop, AsyncClient): an AsyncClient is loop-bound
        self.session_id: str | None = None
        body = {"env_id": env_id, "kwargs": kwargs, "max_turns": max_turns, "format_penalty": format_penalty}
        try:
            opened = self._request("POST", "/v1/sessions", body)
        except Exception:
            self._client.close()
            raise
        self.session_id = opened["session_id"]
        self._tool_schemas: list[dict] = opened["tool_schemas"]
        # The served env's reading of tool calls in reply text; absent for envs that read none.
        self._reads_call_format = "tool_call_format" in opened
        self.tool_call_format: str | None = opened.get("tool_call_format")
        self.max_action_chars: int = opened.get("max_action_chars") or DEFAULT_MAX_ACTION_CHARS
        self.observation_space = ChatMessages()
        self.action_space = AssistantAction(self.max_action_chars)
        # The local registry's spec of env_id, passed in by `envs.make` (this module does not import the
        # registry, which imports it); None when the env is served by the remote registry only.
        self.turngym_spec = None
        if turngym_spec is not None:
            with contextlib.suppress(gym.error.Error):
                self.spec = gym.spec(turngym_spec.gym_id)
                self.turngym_spec = turngym_spec

    # ----- the env API -----------------------------------------------------------------------------
    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of the remote env's tools."""
        return self._tool_schemas

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode on the server; the same seed and options give the same episode as locally."""
        super().reset(seed=seed)
        result = self._request("POST", self._path("reset"), {"seed": seed, "options": options})
        return result["observation"]["messages"], result["info"]

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Async `reset`: the request does not block the event loop."""
        super().reset(seed=seed)
        result = await self._arequest("POST", self._path("reset"), {"seed": seed, "options": options})
        return result["observation"]["messages"], result["info"]

    def step(self, action: Any):
        """Send one assistant turn; returns (messages, reward, terminated, truncated, info)."""
        return self._unpack(self._request("POST", self._path("step"), encode_action(action)))

    async def astep(self, action: Any):
        """Async `step`: the request does not block the event loop."""
        return self._unpack(await self._arequest("POST", self._path("step"), encode_action(action)))

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Have the served env read tool calls written in reply text in this format, as `TextEnv`'s does.

        The rollout calls this once per episode with the format its chat template writes; a format the
        server already uses costs no request. A served env that reads no tool calls from text (not
        TextEnv-based) has nothing to set, as the rollout skips such envs when local.
        """
        if not self._reads_call_format or tool_call_format == self.tool_call_format:
            return
        answer = self._request("PUT", self._path("tool_call_format"), {"tool_call_format": tool_call_format})
        self.tool_call_format = answer.get("tool_call_format")

    def set_turn_limits(self, **limits: Any) -> None:
        """Refused: a served env's turn limits are the operator's (set where `python -m envs serve` starts)."""
        raise NotImplementedError(
            f"RemoteEnv({self.env_id}): turn limits ({', '.join(limits) or 'none given'}) of a served env are "
            "set by its operator where the server starts, not by a client"
        )

    def expert_action(self) -> str:
        """The server env's scripted expert's next reply."""
        return self._request("GET", self._path("expert_action"))["action"]

    def render(self) -> str | None:
        """The conversation so far as text (`ansi`), or printed (`human`)."""
        text = self._request("GET", self._path("render"))["text"]
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def state(self) -> dict[str, Any]:
        """OpenEnv's `State` of the session: episode_id, step_count, turn, episode_over."""
        return self._request("GET", self._path("state"))

    def close(self) -> None:
        """Close the session on the server (idempotent; a server already gone is not an error)."""
        session_id, self.session_id = self.session_id, None
        try:
            # Closing must not raise for a server that is down or restarted.
            if session_id is not None:
                with contextlib.suppress(Exception):
                    self._client.delete(f"/v1/sessions/{session_id}")
        finally:
            self._client.close()
            if self._async is not None:
                loop, client = self._async
                self._async = None
                if not loop.is_closed():
                    try:
                        if loop.is_running():
                            loop.create_task(client.aclose())
                        else:
                            loop.run_until_complete(client.aclose())
                    except RuntimeError:
                        pass
        super().close()

    # ----- HTTP ------------------------------------------------------------------------------------
    def _path(self, what: str) -> str:
        if self.session_id is None:
            raise RemoteEnvError(0, "closed", f"this RemoteEnv ({self.env_id}) is closed")
        return f"/v1/sessions/{self.session_id}/{what}"

    def _unpack(self, result: dict[str, Any]):
        messages, reward = result["observation"]["messages"], result["reward"]
        # A server is another party: its reward is data, bounded here before any sum or advantage sees it
        # (3e38 overflowed a float32 return to inf; NaN spread over a GRPO group).
        problem = check_reward(reward)
        if problem is not None:
            raise RemoteEnvError(
                200,
                "bad_reward",
                f"env server {self.url} answered a step of {self.env_id} with {problem}; the episode is "
                "not played on (fix the served env)",
            )
        return messages, reward, result["terminated"], result["truncated"], result["info"]

    def _request(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        import httpx

        deadline = time.monotonic() + self.retry_s
        content = to_json(body) if body is not None else None
        while True:
            try:
                response = self._client.request(method, path, content=content)
            except httpx.TransportError as exc:
                raise RemoteEnvError(
                    0, "unreachable", f"env server {self.url} unreachable: {type(exc).__name__}: {exc}"
                ) from None
            wait = self._retry_wait(response, deadline)
            if wait is None:
                return self._parse(response)
            time.sleep(wait)

    async def _arequest(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        import httpx

        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (
                loop,
                httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self._timeout),
            )
        client = self._async[1]
        deadline = time.monotonic() + self.retry_s
        content = to_json(body) if body is not None else None
        while True:
            try:
                response = await client.request(method, path, content=content)
            except httpx.TransportError as exc:
                raise RemoteEnvError(
                    0, "unreachable", f"env server {self.url} unreachable: {type(exc).__name__}: {exc}"
                ) from None
            wait = self._retry_wait(response, deadline)
            if wait is None:
                return self._parse(response)
            await asyncio.sleep(wait)

    @staticmethod
    def _retry_wait(response, deadline: float) -> float | None:
        if response.status_code not in (429, 503):
            return None
        try:
            wait = float(response.headers.get("retry-after", "1"))
        except ValueError:
            wait = 1.0
        # Short first waits: the header is a ceiling in whole seconds, most slots free up sooner.
        wait = min(wait, 0.25)
        if time.monotonic() + wait > deadline:
            return None
        return wait

    def _parse(self, response) -> dict[str, Any]:
        import json

        try:
            data = json.loads(response.content)
        except ValueError:
            raise RemoteEnvError(
                response.status_code, "bad_response", f"env server answered non-JSON: {response.text[:200]!r}"
            ) from None
        if response.status_code < 400:
            return data
        error = (data or {}).get("error") if isinstance(data, dict) else None
        error = error if isinstance(error, dict) else {}
        code, message = error.get("code", "http_error"), error.get("message", response.text[:200])
        raised = _RAISED_AS.get(error.get("exception"))
        if raised is not None:
            raise raised(message)
        retry = response.headers.get("retry-after")
        raise RemoteEnvError(response.status_code, code, message, float(retry) if retry else None)
