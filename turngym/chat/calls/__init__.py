"""Tool-call text formats (hermes/Qwen, llama3, mistral): parse model text, render calls back, markers."""

from turngym.chat.calls.call import ParsedTurn, ToolCall
from turngym.chat.calls.formats import (
    CallFormat,
    format_tool_calls,
    get_format,
    guess_format,
    list_formats,
    may_hold_calls,
    parse_tool_calls,
    register_format,
    write_calls,
)
from turngym.chat.calls.markers import CallMarkers

__all__ = [
    "CallFormat",
    "CallMarkers",
    "ParsedTurn",
    "ToolCall",
    "format_tool_calls",
    "get_format",
    "guess_format",
    "list_formats",
    "may_hold_calls",
    "parse_tool_calls",
    "register_format",
    "write_calls",
]
