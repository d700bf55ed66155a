"""PooledRemoteEnv: one episode at a time on a pool of env servers, replayed elsewhere if its server dies.

`envs.make(id, remote=[url, ...])` returns one. Each episode stays on one server (a session there). When
that server stops answering (connection refused or reset, a request past its timeout, or the server no
longer knowing the session), the server leaves the pool and the episode is replayed on a live one: a new
session is reset with the episode's seed and options and sent the episode's earlier actions, and every
answer must equal the one recorded (messages, reward, terminated, truncated). Then the failed call is
made again. An episode that cannot be replayed (no seed, a divergent answer, no live server left) raises
`RemoteEnvError` saying why, so the caller can count it as failed; it never continues half-replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import gymnasium as gym

from envs.remote.pool import EnvServerPool, server_pool
from envs.remote.wire import RemoteEnvError

#: RemoteEnvError codes meaning the session is gone with (or from) its server, not that a call was wrong.
LOST_SESSION_CODES = frozenset({"unreachable", "unknown_session", "session_expired"})


def session_lost(exc: BaseException) -> bool:
    """Whether `exc` says the server (or its session) is gone, so the episode must move."""
    return isinstance(exc, RemoteEnvError) and exc.code in LOST_SESSION_CODES


class PooledRemoteEnv(gym.Env):
    """A `RemoteEnv` on the least-loaded live server of a pool, with failover by replay.

    Attributes:
        failovers: one dict per move of this env's episodes: `from`, `to`, `reason`, `replayed_steps`,
            `seed` (cleared by `reset`; read it when the episode ends).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        env_id: str,
        urls: list[str] | tuple[str, ...] | EnvServerPool,
        *,
        token: str | None = None,
        timeout_s: float | None = None,
        **kwargs: Any,
    ):
        self.env_id = env_id
        self.pool = urls if isinstance(urls, EnvServerPool) else server_pool(urls)
        self._session_kwargs = dict(kwargs, token=token)
        if timeout_s is not None:
            if not timeout_s > 0:
                raise ValueError(f"remote_timeout_s must be a number of seconds > 0, got {timeout_s!r}")
            self._session_kwargs["timeout_s"] = timeout_s
        self.render_mode = kwargs.get("render_mode")
        self._lock = threading.Lock()  # a failover runs in a worker thread while astep waits
        self.failovers: list[dict[str, Any]] = []
        self._tool_call_format: tuple[str | None] | None = None  # set by the caller, re-applied after a move
        self._turn_limits: dict[str, Any] = {}
        self._reset_args: dict[str, Any] | None = None
        self._opening: list[dict] | None = None
        self._played: list[tuple[Any, tuple]] = []  # (action, (messages, reward, terminated, truncated))
        self.env = None
        self.url: str | None = None
        self._open(exclude=())
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.spec = getattr(self.env, "spec", None)
        self.turngym_spec = getattr(self.env, "turngym_spec", None)

    # ----- sessions --------------------------------------------------------------------------------
    def _open(self, exclude: tuple[str, ...]) -> str | None:
        """A session on a live server not in `exclude`; returns why earlier servers failed, if any did."""
        from envs.remote.client import RemoteEnv

        while True:
            url = self.pool.pick(exclude)
            try:
                env = RemoteEnv(self.env_id, url, **self._session_kwargs)
            except RemoteEnvError as exc:
                if not session_lost(exc):
                    raise
                self.pool.mark_down(url, exc.message)
                exclude = (*exclude, url)
                continue
            self.pool.opened(url)
            self.env, self.url = env, url
            return None

    def _drop_session(self) -> None:
        env, url, self.env = self.env, self.url, None
        if url is not None:
            self.pool.closed(url)
        if env is not None:
            # A hung server must not hold the episode: close without waiting on it.
            threading.Thread(target=_close_quietly, args=(env,), daemon=True).start()

    def _move(self, exc: RemoteEnvError) -> None:
        """Replay the episode so far on another live server (see the module docstring)."""
        failed = self.url
        self.pool.mark_down(failed, exc.message)
        self._drop_session()
        record = {"from": failed, "to": None, "reason": exc.message, "replayed_steps": len(self._played)}
        if self._reset_args is not None:
            record["seed"] = self._reset_args.get("seed")
        self.failovers.append(record)
        if self._reset_args is not None and self._reset_args.get("seed") is None:
            raise RemoteEnvError(
                0,
                "episode_lost",
                f"env server {failed} failed ({exc.message}); an unseeded episode cannot be replayed",
            )
        tried: tuple[str, ...] = (failed,)
        while True:
            try:
                self._open(exclude=tried)
            except RemoteEnvError as none_left:
                raise RemoteEnvError(
                    0, "episode_lost", f"env server {failed} failed ({exc.message}) and {none_left.message}"
                ) from None
            try:
                self._restore()
                record["to"] = self.url
                return
            except RemoteEnvError as again:
                if not session_lost(again):
                    raise
                self.pool.mark_down(self.url, again.message)
                tried = (*tried, self.url)
                self._drop_session()

    def _restore(self) -> None:
        """Bring the fresh session to where the lost one was: settings, reset, then every action so far."""
        if self._tool_call_format is not None:
            self.env.set_tool_call_format(self._tool_call_format[0])
        if self._turn_limits:
            self.env.set_turn_limits(**self._turn_limits)
        if self._reset_args is None:
            return
        messages, _ = self.env.reset(**self._reset_args)
        if messages != self._opening:
            raise RemoteEnvError(
                0, "replay_diverged", f"replay on {self.url}: the opening differs from the first"
            )
        for i, (action, seen) in enumerate(self._played):
            again = self.env.step(action)[:4]
            if _comparable(again) != _comparable(seen):
                raise RemoteEnvError(
                    0,
                    "replay_diverged",
                    f"replay on {self.url}: step {i + 1} answered differently than before",
                )

    def _call(self, do):
        with self._lock:
            while True:
                try:
                    return do(self.env)
                except RemoteEnvError as exc:
                    if not session_lost(exc):
                        raise
                    self._move(exc)

    # ----- the env API -----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on the current server (another one if it is down)."""
        super().reset(seed=seed)
        self.failovers = []
        with self._lock:
            self._reset_args, self._opening, self._played = None, None, []
        messages, info = self._call(lambda env: env.reset(seed=seed, options=options))
        self._reset_args, self._opening = {"seed": seed, "options": options}, messages
        return messages, info

    def step(self, action: Any):
        """One assistant turn; replayed on another server first if this one is gone."""
        result = self._call(lambda env: env.step(action))
        self._played.append((action, tuple(result[:4])))
        return result

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """`reset` without blocking the event loop."""
        return await asyncio.to_thread(self.reset, seed=seed, options=options)

    async def astep(self, action: Any):
        """Async `step`: the request is awaited; a failover (blocking HTTP) runs in a worker thread."""
        env = self.env
        try:
            result = await env.astep(action)
        except RemoteEnvError as exc:
            if not session_lost(exc):
                raise
            return await asyncio.to_thread(self._step_after_loss, env, exc, action)
        self._played.append((action, tuple(result[:4])))
        return result

    def _step_after_loss(self, lost_env: Any, exc: RemoteEnvError, action: Any):
        with self._lock:
            if self.env is lost_env:
                self._move(exc)
        return self.step(action)

    @property
    def tool_schemas(self) -> list[dict]:
        """The served env's tool schemas."""
        return self.env.tool_schemas

    @property
    def tool_call_format(self) -> str | None:
        """How the served env reads tool calls in reply text."""
        return self.env.tool_call_format

    @property
    def max_action_chars(self) -> int | None:
        """The served env's reply size limit."""
        return getattr(self.env, "max_action_chars", None)

    def set_tool_call_format(self, tool_call_format: str | None) -> None:
        """Set how the served env reads tool calls (kept, and set again on a server the episode moves to)."""
        self._call(lambda env: env.set_tool_call_format(tool_call_format))
        self._tool_call_format = (tool_call_format,)

    def set_turn_limits(self, **limits: Any) -> None:
        """Set the served env's turn limits (kept, and set again after a move)."""
        self._call(lambda env: env.set_turn_limits(**limits))
        self._turn_limits.update(limits)

    def expert_action(self) -> str:
        """The served env's scripted expert's next reply."""
        return self._call(lambda env: env.expert_action())

    def render(self) -> str | None:
        """The conversation so far (see `RemoteEnv.render`)."""
        return self._call(lambda env: env.render())

    def __getattr__(self, name: str) -> Any:
        # Members of the session this class does not change (state, ...) go to it.
        if name.startswith("_") or name in ("env", "pool"):
            raise AttributeError(name)
        env = self.__dict__.get("env")
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)

    def close(self) -> None:
        """Close the session (idempotent)."""
        env, url, self.env = self.env, self.url, None
        if env is not None:
            self.pool.closed(url)
            if self.pool.servers[url].alive is False:
                # Its server is down or hung: do not wait on it.
                threading.Thread(target=_close_quietly, args=(env,), daemon=True).start()
            else:
                _close_quietly(env)
        super().close()


def _comparable(result: tuple) -> tuple:
    messages, reward, terminated, truncated = result
    reward = float(reward)
    return messages, reward if reward == reward else "nan", bool(terminated), bool(truncated)


def _close_quietly(env: Any) -> None:
    with contextlib.suppress(Exception):
        env.close()
