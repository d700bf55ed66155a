"""Chat messages as plain dicts: the observation type of every turngym env, and what engines render.

`Message` is the one definition; envs, interactions and the rollout import it from here.

>>> assistant("", tool_calls=[{"id": "call_0", "type": "function",
...                            "function": {"name": "add", "arguments": {"a": 1}}}])["tool_calls"][0]["id"]
'call_0'
"""

from __future__ import annotations

from typing import Any

#: One chat message: `{"role", "content"}`, plus `tool_calls` (assistant) or `tool_call_id`/`name` (tool).
Message = dict[str, Any]


def system(content: str) -> Message:
    """A system message.

    >>> system("Be brief.")
    {'role': 'system', 'content': 'Be brief.'}
    """
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    """A user message (what the environment says to the agent).

    >>> user("Guess a number.")
    {'role': 'user', 'content': 'Guess a number.'}
    """
    return {"role": "user", "content": content}


def assistant(content: str, tool_calls: list[dict] | None = None) -> Message:
    """An assistant message, with OpenAI-style tool calls when given.

    >>> assistant("50")
    {'role': 'assistant', 'content': '50'}
    """
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_result(tool_call_id: str, name: str, content: str) -> Message:
    """A tool message answering the call `tool_call_id`.

    >>> tool_result("call_0", "add", "3")
    {'role': 'tool', 'tool_call_id': 'call_0', 'name': 'add', 'content': '3'}
    """
    return {"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content}
