"""turngym tools: typed tools with OpenAI schemas, YAML loading, built-ins and code sandboxes."""

from __future__ import annotations

from typing import Any

from tools.builtin import get_builtin, list_builtins
from tools.calls import ParsedTurn, ToolCall, format_tool_calls, parse_tool_calls
from tools.registry import ToolRegistry
from tools.result import ToolResult
from tools.tool import FunctionTool, Tool, tool

__all__ = [
    "FunctionTool",
    "ParsedTurn",
    "Tool",
    "ToolCall",
    "ToolLoadError",
    "ToolRegistry",
    "ToolResult",
    "format_tool_calls",
    "get_builtin",
    "list_builtins",
    "load_tools",
    "make_tool",
    "parse_tool_calls",
    "resolve_tools",
    "tool",
]


def __getattr__(name: str) -> Any:
    # YAML loading imports pyyaml only when used.
    if name in ("load_tools", "resolve_tools", "make_tool", "ToolLoadError"):
        from tools import loading

        return getattr(loading, name)
    raise AttributeError(f"module 'tools' has no attribute {name!r}")
