"""`ToolRegistry`: the tools of one environment, by name, with per-episode forking and cleanup."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

from tools.result import ToolResult
from tools.tool import Tool


class ToolRegistry:
    """An ordered set of uniquely named tools.

    Args:
        tools: The tools, in the order their schemas are shown to the model; names must be unique.

    Example:
        >>> from tools import ToolRegistry, tool
        >>> @tool
        ... def echo(text: str) -> str:
        ...     '''Say text back.'''
        ...     return text
        >>> registry = ToolRegistry([echo])
        >>> registry.names
        ['echo']
        >>> registry.call_sync("echo", {"text": "hello"}).content
        'hello'
        >>> registry.call_sync("ehco", {}).content
        'unknown tool `ehco`; available tools: echo'
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Add a tool; a second tool with the same name is an error unless `replace`.

        Args:
            tool: The tool to add.
            replace: Replace a tool of the same name instead of refusing it.

        Returns:
            The tool, so that `register` can be used as a decorator's last step.

        Raises:
            TypeError: `tool` is not a `Tool`.
            ValueError: A tool with that name is registered and `replace` is false.
        """
        if not isinstance(tool, Tool):
            raise TypeError(f"expected a Tool, got {type(tool).__name__}: {tool!r}")
        if tool.name in self._tools and not replace:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        if name not in self._tools:
            raise KeyError(self._unknown(name))
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI schemas of all tools, in order (what a chat template's `tools=` takes)."""
        return [t.schema for t in self._tools.values()]

    def fork(self) -> ToolRegistry:
        """Per-episode registry: stateful tools get fresh instances, stateless ones are shared."""
        return ToolRegistry(t.fork() for t in self._tools.values())

    def _unknown(self, name: str) -> str:
        available = ", ".join(self._tools) or "(none)"
        return f"unknown tool `{name}`; available tools: {available}"

    async def call(self, name: str, arguments: dict | str | None, context: dict | None = None) -> ToolResult:
        """Call a tool by name; an unknown name is an error result, not an exception.

        Args:
            name: The tool's name, as the model wrote it.
            arguments: As for `Tool.call`.
            context: As for `Tool.call`.

        Returns:
            The tool's result, or an error result naming the available tools.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(self._unknown(name))
        return await tool.call(arguments, context)

    def call_sync(self, name: str, arguments: dict | str | None, context: dict | None = None) -> ToolResult:
        """Blocking `call`."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(self._unknown(name))
        return tool.call_sync(arguments, context)

    async def aclose(self) -> None:
        """Release every tool's per-episode state; errors in one do not stop the others."""
        results = await asyncio.gather(*(t.aclose() for t in self._tools.values()), return_exceptions=True)
        del results

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names})"
