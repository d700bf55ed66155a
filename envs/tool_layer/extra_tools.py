"""The tools given to an env with `tools=`: built-in names, YAML files and Tool objects, resolved to Tools."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools import Tool


def resolve_extra_tools(tools: Any) -> list[Tool]:
    """Tools from `tools=`: built-in names, YAML paths and Tool objects (alone or in a list); else a clear error.

    Args:
        tools: A built-in tool name, a `.yaml`/`.yml` path, a Tool, or a list of them (None: none).

    Returns:
        The tools, in the order given (a YAML file contributes all of its tools).

    Example:
        >>> [tool.name for tool in resolve_extra_tools(["calculator", "search"])]
        ['calculator', 'search']
    """
    if tools is None:
        return []
    if isinstance(tools, str | os.PathLike) or not isinstance(tools, Sequence):
        tools = [tools]
    resolved: list[Tool] = []
    for item in tools:
        resolved.extend(_resolve_tool_item(item))
    return resolved


def _resolve_tool_item(item: Any) -> list[Tool]:
    from tools import Tool, load_tools
    from tools.builtin import BUILTINS, get_builtin, list_builtins

    if isinstance(item, Tool):
        return [item]
    builtins = ", ".join(list_builtins())
    if isinstance(item, os.PathLike) or (isinstance(item, str) and item.endswith((".yaml", ".yml"))):
        return load_tools(item)
    if isinstance(item, str):
        if item in BUILTINS:
            return [get_builtin(item)]
        raise ValueError(
            f"tools=: {item!r} is neither a built-in tool ({builtins}) nor a YAML file path (.yaml/.yml)"
        )
    raise TypeError(
        f"tools= takes built-in tool names ({builtins}), YAML file paths or Tool objects (decorate a "
        f"function with @tools.tool), alone or in a list; got {type(item).__name__}"
    )
