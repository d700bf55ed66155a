"""The tools of an env and their per-episode copies: built on first use, forked per episode, released at reset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from common.run_sync import run_sync

if TYPE_CHECKING:
    from tools import Tool
    from tools.registry import ToolRegistry


class EpisodeTools:
    """Mixin for TextEnv: `tool_registry`, `tools` and `tool_schemas` from `own_tools()` and `tools=`.

    Stateful tools get fresh instances per episode (a `ToolRegistry.fork` at the episode's first call),
    released when the next episode starts or the env closes.
    """

    _extra_tools: Sequence[Tool] = ()  # the tools given by `tools=`, resolved
    _tool_prototypes: ToolRegistry | None = None
    _episode_tools: ToolRegistry | None = None  # this episode's fork, made at its first tool call

    def own_tools(self) -> list[Tool]:
        """Tools this env provides itself (e.g. a game's `guess` tool)."""
        return []

    @property
    def tool_registry(self) -> ToolRegistry:
        """The env's tools as a `tools.ToolRegistry`: its own, then the extra ones it was given.

        Built on first use: a plain-text reply never needs them, and building a game's action tool on
        every `make` cost most of a short episode.
        """
        if self._tool_prototypes is None:
            from tools.registry import ToolRegistry

            try:
                self._tool_prototypes = ToolRegistry([*self.own_tools(), *self._extra_tools])
            except ValueError as exc:  # two tools with one name
                raise ValueError(f"{type(self).__name__}: {exc}") from None
        return self._tool_prototypes

    @property
    def tools(self) -> list[Tool]:
        """All tools the agent may call in this env, in order (see `tool_registry`)."""
        return list(self.tool_registry)

    @property
    def tool_schemas(self) -> list[dict]:
        """OpenAI function schemas of `tools`, as rendered into the prompt by a chat template."""
        return self.tool_registry.schemas()

    def _episode_tool(self, name: str) -> Tool | None:
        if self._episode_tools is None:
            self._episode_tools = self.tool_registry.fork()
        return self._episode_tools.get(name)

    def _has_tools(self) -> bool:
        return len(self.tool_registry) > 0

    def _release_episode_tools(self) -> None:
        if self._episode_tools is not None:
            episode, self._episode_tools = self._episode_tools, None
            # Releasing one tool does not stop the others or the next episode (ToolRegistry.aclose).
            run_sync(episode.aclose())

    async def _arelease_episode_tools(self) -> None:
        if self._episode_tools is not None:
            episode, self._episode_tools = self._episode_tools, None
            await episode.aclose()
