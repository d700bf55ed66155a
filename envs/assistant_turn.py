"""What the agent did in one turn: its text and its tool calls, read from any accepted action."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from envs.errors import InvalidAction

# C0 control characters except tab, newline and carriage return: models emit them by accident and
# terminals choke on them, so they are dropped before an action is interpreted.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(slots=True)
class ToolCallRequest:
    """One tool call as the env sees it; `arguments` is a dict or the raw JSON string."""

    id: str
    name: str
    arguments: dict | str


@dataclass(slots=True)
class AssistantTurn:
    """The assistant's text plus its tool calls (and why any call could not be read)."""

    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    call_errors: tuple[str, ...] = ()

    def as_message(self) -> dict:
        """The OpenAI-style assistant message for this turn."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.arguments if isinstance(c.arguments, str) else _dumps(c.arguments),
                    },
                }
                for c in self.tool_calls
            ]
        return message


def _dumps(value: Any) -> str:
    # Arguments are depth-checked when read, but a turn can be built by hand: this must never raise.
    try:
        return json.dumps(value)
    except RecursionError:
        return '"[arguments nested too deeply to show]"'
    except (TypeError, ValueError) as e:
        return json.dumps(f"[arguments that are not JSON: {e}]")


def read_action(action: Any, *, max_chars: int, tool_call_format: str | None = "hermes") -> AssistantTurn:
    """Turn an action (text or assistant message dict) into an AssistantTurn, or raise InvalidAction."""
    if isinstance(action, str):
        return _read_text(action, max_chars=max_chars, tool_call_format=tool_call_format)
    if isinstance(action, dict):
        return _read_message(action, max_chars=max_chars, tool_call_format=tool_call_format)
    raise InvalidAction(
        f"an action must be the assistant's text or an assistant message dict, got {type(action).__name__}"
    )


def _read_text(text: str, *, max_chars: int, tool_call_format: str | None) -> AssistantTurn:
    if len(text) > max_chars:
        raise InvalidAction(f"the reply is {len(text)} characters long; the limit is {max_chars}")
    if not text.isprintable():  # isprintable() is a fast pre-check; most replies have nothing to drop
        text = _CONTROL_CHARS.sub("", text)
    if tool_call_format and _may_hold_tool_calls(text, tool_call_format):
        from tools.calls import parse_tool_calls

        parsed = parse_tool_calls(text, tool_call_format)
        calls = tuple(ToolCallRequest(c.id, c.name, c.arguments) for c in parsed.tool_calls)
        return AssistantTurn(parsed.content, calls, tuple(parsed.errors))
    return AssistantTurn(text)


def _may_hold_tool_calls(text: str, tool_call_format: str) -> bool:
    # A cheap test first: env steps are a hot path and most replies hold no call.
    if tool_call_format == "hermes":
        return "<tool_call>" in text
    if tool_call_format == "mistral":
        return "[TOOL_CALLS]" in text
    return "{" in text or "<|python_tag|>" in text


def _read_message(message: dict, *, max_chars: int, tool_call_format: str | None) -> AssistantTurn:
    role = message.get("role", "assistant")
    if role != "assistant":
        raise InvalidAction(f"an action message must have role 'assistant', got {_short_repr(role)}")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise InvalidAction(f"message content must be a string, got {type(content).__name__}")
    raw_calls = message.get("tool_calls") or []
    if not raw_calls:
        return _read_text(content, max_chars=max_chars, tool_call_format=tool_call_format)
    if len(content) > max_chars:
        raise InvalidAction(f"the reply is {len(content)} characters long; the limit is {max_chars}")
    if not isinstance(raw_calls, list):
        raise InvalidAction(f"tool_calls must be a list, got {type(raw_calls).__name__}")
    calls: list[ToolCallRequest] = []
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


def _read_call(raw: Any, index: int) -> tuple[ToolCallRequest, int]:
    from tools.calls.bounded_json import MAX_JSON_DEPTH, JSONTooDeep, check_depth, depth_exceeds

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
    request = ToolCallRequest(call_id, name, arguments)
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
