"""Chat messages as plain dicts: the observation type of every turngym env."""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


def system(content: str) -> Message:
    """A system message."""
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    """A user message (what the environment says to the agent)."""
    return {"role": "user", "content": content}


def assistant(content: str, tool_calls: list[dict] | None = None) -> Message:
    """An assistant message, with OpenAI-style tool calls when given."""
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_result(tool_call_id: str, name: str, content: str) -> Message:
    """A tool message answering the call `tool_call_id`."""
    return {"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content}
