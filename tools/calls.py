"""Moved to `chat.calls` (issue 35: the tool-call formats and their markers sit on the chat ground floor).

This path keeps working and warns once per process; import from `chat.calls` instead. The submodules
(`tools.calls.formats`, `.markers`, `.call`, the parsers) are now `chat.calls.formats`, ... and have no
shim.
"""

import warnings

from chat.calls import (
    CallFormat,
    CallMarkers,
    ParsedTurn,
    ToolCall,
    format_tool_calls,
    get_format,
    guess_format,
    list_formats,
    may_hold_calls,
    parse_tool_calls,
    register_format,
    write_calls,
)

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

warnings.warn("tools.calls moved to chat.calls; import from there", DeprecationWarning, stacklevel=2)
