"""EnvTools: an env's tools, their per-episode copies, the per-turn tool limits, and running a turn's calls.

One object composed into each `TextEnv` (`env.env_tools`). It uses the env only through public members:
`own_tools()` for the env's own tools, `after_tool_call(...)` as the hook after each call, and the env
itself as the `env` a tool's call context carries (a game's action tool plays its move on it).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from envs.tool_layer.tool_turn import run_tool_turn
from envs.tool_layer.turn_limits import (
    DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_TIME_S,
    checked_tool_calls,
    checked_tool_time,
)
from turngym.common.run_sync import run_sync

if TYPE_CHECKING:
    from envs.core.assistant_turn import AssistantTurn
    from envs.core.step_result import StepResult
    from tools import Tool
    from tools.registry import ToolRegistry


class EnvTools:
    """The tool layer of one env: `registry` (its own tools, then `extra`), forked per episode, and turns.

    Stateful tools get fresh instances per episode (a `ToolRegistry.fork` at the episode's first call),
    released by `release`/`arelease` (the env calls them when the next episode starts and when it closes).

    Args:
        env: The env the tools serve: its `own_tools()` come first, its `after_tool_call` hook sees each
            result, and it is the `env` in each call's context. Held weakly: the env owns this layer.
        extra: Tools given with `tools=`, already resolved (see `envs.tool_layer.extra_tools`).
        max_tool_calls_per_turn: Calls past this many in one turn are not run (None: no cap).
        max_tool_time_s: Seconds of tool time one turn may use in all (None: no budget).

    Example:
        >>> import envs
        >>> env = envs.make("guess-number-v0")
        >>> layer = env.unwrapped.env_tools
        >>> layer.registry.names, layer.max_tool_calls_per_turn, layer.max_tool_time_s
        (['guess'], 8, 30.0)
    """

    __slots__ = ("_env", "_episode", "_registry", "extra", "max_tool_calls_per_turn", "max_tool_time_s")

    def __init__(
        self,
        env: Any,
        extra: Sequence[Tool] = (),
        *,
        max_tool_calls_per_turn: int | None = DEFAULT_MAX_TOOL_CALLS_PER_TURN,
        max_tool_time_s: float | None = DEFAULT_MAX_TOOL_TIME_S,
    ):
        # A weak reference: the env holds this layer, and a cycle would leave each env (one per episode
        # in verl's agent loop) to the cyclic garbage collector; with the layer built in every `make`,
        # the cycle measured `envs.make` 7.5 us against 4.7 us without it (timeit, GC on).
        self._env = weakref.ref(env)
        self.extra = extra
        self.max_tool_calls_per_turn = checked_tool_calls(max_tool_calls_per_turn)
        self.max_tool_time_s = checked_tool_time(max_tool_time_s)
        # Built on first use: a plain-text reply never needs the tools, and building a game's action
        # tool imports pydantic and builds its schema (test_import_weight pins that plain text does not).
        self._registry: ToolRegistry | None = None
        self._episode: ToolRegistry | None = None  # this episode's fork, made at its first tool call

    @property
    def env(self) -> Any:
        """The env these tools serve (the `env` of each call's context)."""
        return self._env()

    @property
    def registry(self) -> ToolRegistry:
        """The env's tools as a `tools.ToolRegistry`: its own, then the extra ones (built on first use)."""
        if self._registry is None:
            from tools.registry import ToolRegistry

            try:
                self._registry = ToolRegistry([*self.env.own_tools(), *self.extra])
            except ValueError as exc:  # two tools with one name
                raise ValueError(f"{type(self.env).__name__}: {exc}") from None
        return self._registry

    def has_tools(self) -> bool:
        """Whether the agent may call any tool (text is read for calls only then)."""
        return len(self.registry) > 0

    def set_limits(self, *, max_tool_calls_per_turn: Any = ..., max_tool_time_s: Any = ...) -> None:
        """Change the per-turn limits (None: no limit; omitted: unchanged); raises ValueError for bad ones."""
        if max_tool_calls_per_turn is not ...:
            self.max_tool_calls_per_turn = checked_tool_calls(max_tool_calls_per_turn)
        if max_tool_time_s is not ...:
            self.max_tool_time_s = checked_tool_time(max_tool_time_s)

    def episode_tool(self, name: str) -> Tool | None:
        """This episode's instance of tool `name` (None: no such tool); the first call forks the registry."""
        if self._episode is None:
            self._episode = self.registry.fork()
        return self._episode.get(name)

    def after_tool_call(self, call: Any, result: Any, turn_info: dict) -> StepResult | None:
        """The env's hook after each call (`TextEnv.after_tool_call`): a StepResult ends or redirects the turn."""
        return self.env.after_tool_call(call, result, turn_info)

    async def run_turn(self, turn: AssistantTurn) -> StepResult:
        """Run `turn`'s tool calls within the per-turn limits (see `envs.tool_layer.tool_turn.run_tool_turn`)."""
        return await run_tool_turn(self, turn)

    def release(self) -> None:
        """Close this episode's tool instances (the next call forks fresh ones)."""
        if self._episode is not None:
            episode, self._episode = self._episode, None
            # Releasing one tool does not stop the others or the next episode (ToolRegistry.aclose).
            run_sync(episode.aclose())

    async def arelease(self) -> None:
        """`release` on the caller's event loop."""
        if self._episode is not None:
            episode, self._episode = self._episode, None
            await episode.aclose()
