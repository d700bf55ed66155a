"""turngym tools: typed tools with OpenAI schemas, YAML loading, built-ins and code sandboxes.

Names load on first use, so `import tools` (and any `tools.<submodule>` import, which runs this file
first) pulls neither pydantic nor pyyaml. `Registry` and `load_entry_point` (in `turngym.common.registration`)
and the call-format names (in `turngym.chat.calls`) live on the ground floor and are still exported here.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "FunctionTool": "tools.tool",
    "Tool": "tools.tool",
    "tool": "tools.tool",
    "ToolRegistry": "tools.registry",
    "ToolResult": "tools.result",
    "ParsedTurn": "turngym.chat.calls",
    "ToolCall": "turngym.chat.calls",
    "format_tool_calls": "turngym.chat.calls",
    "parse_tool_calls": "turngym.chat.calls",
    "get_builtin": "tools.builtin",
    "list_builtins": "tools.builtin",
    "load_tools": "tools.loading",
    "resolve_tools": "tools.loading",
    "make_tool": "tools.loading",
    "ToolLoadError": "tools.loading",
    "Registry": "turngym.common.registration",
    "load_entry_point": "turngym.common.registration",
}

__all__ = [
    "FunctionTool",
    "ParsedTurn",
    "Registry",
    "Tool",
    "ToolCall",
    "ToolLoadError",
    "ToolRegistry",
    "ToolResult",
    "format_tool_calls",
    "get_builtin",
    "list_builtins",
    "load_entry_point",
    "load_tools",
    "make_tool",
    "parse_tool_calls",
    "resolve_tools",
    "tool",
]

if TYPE_CHECKING:
    from tools.builtin import get_builtin, list_builtins
    from tools.loading import ToolLoadError, load_tools, make_tool, resolve_tools
    from tools.registry import ToolRegistry
    from tools.result import ToolResult
    from tools.tool import FunctionTool, Tool, tool
    from turngym.chat.calls import ParsedTurn, ToolCall, format_tool_calls, parse_tool_calls
    from turngym.common.registration import Registry, load_entry_point


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        # `tools.sandbox`, `tools.builtin`, ... as attributes, as when this file imported them eagerly.
        try:
            return importlib.import_module(f"tools.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tools.{name}":
                raise
        raise AttributeError(f"module 'tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _ToolsModule(types.ModuleType):
    # Importing the submodule `tools.tool` sets `tools.tool` to that module, which would hide the
    # `@tool` decorator exported under the same name: `tools.tool` stays the decorator.
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "tool" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ToolsModule
