"""What the agent did in one turn: its text and its tool calls, read from any accepted action."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chat.calls.formats import may_hold_calls
from envs.errors import InvalidAction

if TYPE_CHECKING:
    from chat.calls.call import ToolCall

# C0 control characters except tab, newline and carriage return: models emit them by accident and
# terminals choke on them, so they are dropped before an action is interpreted.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(slots=True)
class AssistantTurn:
    """The assistant's text plus its tool calls (`chat.calls.ToolCall`) and why any call could not be read."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    call_errors: tuple[str, ...] = ()

    def as_message(self) -> dict:
        """The assistant message for this turn, tool calls as `ToolCall.to_openai()` writes them."""
        if not self.tool_calls:
            return {"role": "assistant", "content": self.content}
        return {
            "role": "assistant",
            "content": self.content,
            "tool_calls": [c.to_openai() for c in self.tool_calls],
        }


def read_action(
    action: Any,
    *,
    max_chars: int,
    tool_call_format: str | None = "hermes",
    has_tools: Callable[[], bool] | None = None,
) -> AssistantTurn:
    """Turn an action (text or assistant message dict) into an AssistantTurn, or raise InvalidAction.

    Calls written in the text are read in `tool_call_format` when the text holds that format's marker
    and `has_tools()` (asked only then, so plain replies never build an env's tools) is true.
    """
    if isinstance(action, str):
        if (
            len(action) <= max_chars
            and action.isprintable()
            and not (tool_call_format and may_hold_calls(action, tool_call_format))
        ):
            return AssistantTurn(action)  # the usual plain reply: nothing to drop, cut or parse
        return _read_text(action, max_chars, tool_call_format, has_tools)
    if isinstance(action, dict):
        return _read_message(action, max_chars, tool_call_format, has_tools)
    raise InvalidAction(
        f"an action must be the assistant's text or an assistant message dict, got {type(action).__name__}"
    )


def _read_text(
    text: str, max_chars: int, tool_call_format: str | None, has_tools: Callable[[], bool] | None
) -> AssistantTurn:
    if len(text) > max_chars:
        raise InvalidAction(f"the reply is {len(text)} characters long; the limit is {max_chars}")
    if not text.isprintable():  # isprintable() is a fast pre-check; most replies have nothing to drop
        text = _CONTROL_CHARS.sub("", text)
    if tool_call_format and may_hold_calls(text, tool_call_format) and (has_tools is None or has_tools()):
        from chat.calls import parse_tool_calls

        parsed = parse_tool_calls(text, tool_call_format)
        return AssistantTurn(parsed.content, tuple(parsed.tool_calls), tuple(parsed.errors))
    return AssistantTurn(text)


def _read_message(
    message: dict, max_chars: int, tool_call_format: str | None, has_tools: Callable[[], bool] | None
) -> AssistantTurn:
    role = message.get("role", "assistant")
    if role != "assistant":
        raise InvalidAction(f"an action message must have role 'assistant', got {_short_repr(role)}")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise InvalidAction(f"message content must be a string, got {type(content).__name__}")
    raw_calls = message.get("tool_calls") or []
    if not raw_calls:
        return _read_text(content, max_chars, tool_call_format, has_tools)
    if len(content) > max_chars:
        raise InvalidAction(f"the reply is {len(content)} characters long; the limit is {max_chars}")
    if not isinstance(raw_calls, list):
        raise InvalidAction(f"tool_calls must be a list, got {type(raw_calls).__name__}")
    calls: list[ToolCall] = []
    errors: list[str] = []
    # The whole turn (text plus every call's name and arguments) shares the reply's size limit, as the
    # same turn written as text would; the running total stops a million-call list early.
    size = len(content)
    for i, raw in enumerate(raw_calls):
        try:
            call, chars = _read_call(raw, i)
        except InvalidAction as e:
            errors.append(str(e))
            size += 1
        else:
            calls.append(call)
            size += chars
        if size > max_chars:
            raise InvalidAction(
                f"the reply's text and tool calls are over {max_chars} characters (the limit) by tool call "
                f"{i + 1} of {len(raw_calls)}"
            )
    return AssistantTurn(_CONTROL_CHARS.sub("", content), tuple(calls), tuple(errors))


def _read_call(raw: Any, index: int) -> tuple[ToolCall, int]:
    from chat.calls.bounded_json import MAX_JSON_DEPTH, JSONTooDeep, check_depth, depth_exceeds
    from chat.calls.call import ToolCall

    if not isinstance(raw, dict):
        raise InvalidAction(f"tool call {index} must be an object, got {type(raw).__name__}")
    fn = raw.get("function", raw)
    if not isinstance(fn, dict):
        raise InvalidAction(f"tool call {index}: `function` must be an object")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidAction(f"tool call {index} has no function name")
    arguments = fn.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict | str):
        raise InvalidAction(
            f"tool call {index} ({_short(name)}): arguments must be an object or a JSON string"
        )
    if isinstance(arguments, dict) and depth_exceeds(arguments, MAX_JSON_DEPTH - 1):
        raise InvalidAction(
            f"tool call {index} ({_short(name)}): arguments nested deeper than the limit of {MAX_JSON_DEPTH} levels"
        )
    if isinstance(arguments, str):
        try:
            check_depth(arguments, len(arguments) - len(arguments.lstrip()))
        except JSONTooDeep as e:
            raise InvalidAction(f"tool call {index} ({_short(name)}): arguments {e.msg}") from None
    # Ids are echoed into tool messages: only short strings or machine-size integers are kept as given.
    call_id = raw.get("id")
    if isinstance(call_id, int) and not isinstance(call_id, bool) and call_id.bit_length() <= 64:
        call_id = str(call_id)
    if not isinstance(call_id, str) or not call_id or len(call_id) > 256:
        call_id = f"call_{index}"
    request = ToolCall(call_id, name, arguments)
    return request, len(name) + len(request.id) + _argument_chars(arguments, index, name)


def _argument_chars(arguments: dict | str, index: int, name: str) -> int:
    if isinstance(arguments, str):
        return len(arguments)
    try:
        return len(json.dumps(arguments))
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidAction(f"tool call {index} ({_short(name)}): arguments are not JSON ({e})") from None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_repr(value: Any, limit: int = 60) -> str:
    try:
        return _short(repr(value), limit)
    except RecursionError:
        return f"a deeply nested {type(value).__name__}"
