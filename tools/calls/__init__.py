"""Tool-call text formats (hermes/Qwen, llama3, mistral): parse model text, render calls back."""

from tools.calls.call import ParsedTurn, ToolCall
from tools.calls.formats import (
    CallFormat,
    format_tool_calls,
    get_format,
    list_formats,
    parse_tool_calls,
    register_format,
)

__all__ = [
    "CallFormat",
    "ParsedTurn",
    "ToolCall",
    "format_tool_calls",
    "get_format",
    "list_formats",
    "parse_tool_calls",
    "register_format",
]
