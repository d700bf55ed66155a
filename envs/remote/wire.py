"""What crosses the wire between `python -m envs serve` and `RemoteEnv`: actions, results and errors as JSON.

Kept free of HTTP libraries so both ends (and `import envs`) can use it cheaply.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envs.core.assistant_turn import AssistantTurn
from turngym.chat.calls.call import ToolCall

#: Version of the session protocol, in every route (`/v1/...`).
PROTOCOL = "v1"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class RemoteEnvError(RuntimeError):
    """The env server refused or failed a request: HTTP status, machine-readable code, one clear sentence."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"{message} [{code}, HTTP {status}]")
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def to_json(value: Any) -> bytes:
    """`value` as JSON bytes; values JSON has no type for (numpy scalars, sets, objects) become plain ones."""
    # allow_nan: a NaN info value arrives as NaN, as the local env returns it (a NaN reward arrives too, and
    # the client refuses it: envs.core.number_bounds.check_reward).
    return json.dumps(value, default=_plain, allow_nan=True, ensure_ascii=False).encode()


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def encode_action(action: Any) -> dict[str, Any]:
    """The step request body for `action`; an action JSON cannot carry is sent as its type name only.

    The env answers such actions with a format error naming the type, so sending the name is enough for
    the remote env to answer exactly as the local one would. A parsed turn (`AssistantTurn`) goes as an
    assistant message with its calls and `call_errors`, which the server's env reads without parsing the
    text again.

    Args:
        action: What `step` was given: text, an assistant message dict, an `AssistantTurn`, or anything else.

    Returns:
        The body: `{"action": ...}`, or `{"action": None, "action_type": name}`.

    Example:
        >>> from turngym.chat.calls import ToolCall
        >>> from envs.core.assistant_turn import AssistantTurn
        >>> body = encode_action(AssistantTurn("hi", (ToolCall("call_0", "guess", {"n": 5}),), ("block 2: bad",)))
        >>> body["action"]["tool_calls"][0]["function"], body["action"]["call_errors"]
        ({'name': 'guess', 'arguments': {'n': 5}}, ['block 2: bad'])
    """
    if isinstance(action, AssistantTurn):
        action = turn_message(action)
    try:
        json.dumps(action, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return {"action": None, "action_type": type(action).__name__}
    return {"action": action}


def turn_message(turn: AssistantTurn) -> dict[str, Any]:
    """A parsed turn as the assistant message the server's env reads back as that turn (`call_errors` included).

    A malformed turn (a call that is no `ToolCall`, errors that are no list) is sent as it is, for the
    server's env to refuse as the local env would.
    """
    calls = turn.tool_calls
    if isinstance(calls, tuple | list):
        calls = [c.to_openai() if isinstance(c, ToolCall) else c for c in calls]
    errors = turn.call_errors
    return {
        "role": "assistant",
        "content": turn.content,
        "tool_calls": calls,
        "call_errors": list(errors) if isinstance(errors, tuple | list) else errors,
    }


def decode_action(body: dict[str, Any]) -> Any:
    """The action of a step request body (a stand-in object of the named type for non-JSON actions)."""
    name = body.get("action_type")
    if name is None:
        return body.get("action")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError("action_type must be a Python identifier of at most 64 characters")
    # An instance of a fresh class with that name: the env only ever reports the type's name.
    return type(name, (), {})()
