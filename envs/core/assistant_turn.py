"""What the agent did in one turn: its text and its tool calls, read from any accepted action."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envs.core.errors import InvalidAction
from turngym.chat.calls.formats import may_hold_calls

if TYPE_CHECKING:
    from turngym.chat.calls.call import ToolCall

# C0 control characters except tab, newline and carriage return: models emit them by accident and
# terminals choke on them, so they are dropped before an action is interpreted.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

#: How many unreadable calls one parsed turn may report, and how long one report may be. The reports come
#: from the rollout's parser (a few hundred characters each) or, over the wire, from a client; each one is
#: text the agent reads back, and all of them count toward the turn's size limit.
MAX_CALL_ERRORS = 128
MAX_CALL_ERROR_CHARS = 1024
#: Call ids are echoed into tool messages: longer ones are not kept as given.
_MAX_CALL_ID_CHARS = 256


@dataclass(slots=True)
class AssistantTurn:
    """The assistant's text plus its tool calls (`turngym.chat.calls.ToolCall`) and why any call could not be read.

    It is also an action: the rollout parses each reply once and hands the env this turn, which
    `read_action` checks (types, size, control characters) but never parses again.
    """

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
    """Turn an action into an AssistantTurn, or raise InvalidAction saying why it cannot be used.

    Args:
        action: The assistant's text; an assistant message dict (OpenAI `tool_calls`, and `call_errors`
            when the sender parsed the text itself); or an `AssistantTurn` already parsed, used as it is.
        max_chars: The longest turn: the text, or the text plus every call's name, id and arguments and
            every `call_errors` entry.
        tool_call_format: The format calls written in text are read in (None: text is never read as calls).
        has_tools: Asked before text with that format's marker is parsed (only then, so plain replies
            never build an env's tools); None means yes.

    Returns:
        The turn: text without control characters, the calls, and why any call could not be read.

    Example:
        >>> from turngym.chat.calls import ToolCall
        >>> turn = read_action(AssistantTurn("ok\x07", (ToolCall("call_0", "guess", {"n": 5}),)), max_chars=100)
        >>> turn.content, turn.tool_calls[0].name
        ('ok', 'guess')
        >>> read_action(AssistantTurn("", (), ("bad",) * 200), max_chars=100)
        Traceback (most recent call last):
        envs.core.errors.InvalidAction: 200 call_errors; at most 128 per turn
    """
    if isinstance(action, str):
        if (
            len(action) <= max_chars
            and action.isprintable()
            and not (tool_call_format and may_hold_calls(action, tool_call_format))
        ):
            return AssistantTurn(action)  # the usual plain reply: nothing to drop, cut or parse
        return _read_text(action, max_chars, tool_call_format, has_tools)
    if isinstance(action, AssistantTurn):
        return _read_turn(action, max_chars)
    if isinstance(action, dict):
        return _read_message(action, max_chars, tool_call_format, has_tools)
    raise InvalidAction(
        "an action must be the assistant's text, an assistant message dict or an AssistantTurn, "
        f"got {type(action).__name__}"
    )


def _read_text(
    text: str, max_chars: int, tool_call_format: str | None, has_tools: Callable[[], bool] | None
) -> AssistantTurn:
    if len(text) > max_chars:
        raise InvalidAction(f"the reply is {len(text)} characters long; the limit is {max_chars}")
    if not text.isprintable():  # isprintable() is a fast pre-check; most replies have nothing to drop
        text = _CONTROL_CHARS.sub("", text)
    if tool_call_format and may_hold_calls(text, tool_call_format) and (has_tools is None or has_tools()):
        from turngym.chat.calls import parse_tool_calls

        parsed = parse_tool_calls(text, tool_call_format)
        return AssistantTurn(parsed.content, tuple(parsed.tool_calls), tuple(parsed.errors))
    return AssistantTurn(text)


def _read_turn(turn: AssistantTurn, max_chars: int) -> AssistantTurn:
    """A parsed turn checked as a message's parts are checked, never parsed again."""
    from turngym.chat.calls.call import ToolCall

    content, calls = turn.content, turn.tool_calls
    if not isinstance(content, str):
        raise InvalidAction(f"the turn's content must be a string, got {type(content).__name__}")
    if len(content) > max_chars:
        raise InvalidAction(f"the reply is {len(content)} characters long; the limit is {max_chars}")
    if not isinstance(calls, tuple | list):
        raise InvalidAction(f"the turn's tool_calls must be a tuple of ToolCall, got {type(calls).__name__}")
    errors, size = _read_errors(turn.call_errors, len(content), max_chars)
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise InvalidAction(f"tool call {i} must be a ToolCall, got {type(call).__name__}")
        name, call_id = call.name, call.id
        if not isinstance(name, str) or not name:
            raise InvalidAction(f"tool call {i} has no function name")
        if not isinstance(call_id, str) or not call_id or len(call_id) > _MAX_CALL_ID_CHARS:
            raise InvalidAction(
                f"tool call {i} ({_short(name)}): its id must be a string of 1 to {_MAX_CALL_ID_CHARS} characters"
            )
        size += len(name) + len(call_id) + _argument_chars(call.arguments, i, name)
        if size > max_chars:
            raise _over_limit(max_chars, i, len(calls))
    if not content.isprintable():
        content = _CONTROL_CHARS.sub("", content)
    return AssistantTurn(content, tuple(calls), errors)


def _read_errors(errors: Any, size: int, max_chars: int) -> tuple[tuple[str, ...], int]:
    """A turn's `call_errors`, bounded and without control characters, and the turn's size with them."""
    if not isinstance(errors, tuple | list):
        raise InvalidAction(f"call_errors must be a list of strings, got {type(errors).__name__}")
    if len(errors) > MAX_CALL_ERRORS:
        raise InvalidAction(f"{len(errors)} call_errors; at most {MAX_CALL_ERRORS} per turn")
    for i, error in enumerate(errors):
        if not isinstance(error, str):
            raise InvalidAction(f"call_errors[{i}] must be a string, got {type(error).__name__}")
        if len(error) > MAX_CALL_ERROR_CHARS:
            raise InvalidAction(
                f"call_errors[{i}] is {len(error)} characters long; the limit is {MAX_CALL_ERROR_CHARS}"
            )
        size += len(error)
    if size > max_chars:
        raise InvalidAction(
            f"the reply's text and call_errors are {size} characters long; the limit is {max_chars}"
        )
    return tuple(e if e.isprintable() else _CONTROL_CHARS.sub("", e) for e in errors), size


def _over_limit(max_chars: int, index: int, count: int) -> InvalidAction:
    return InvalidAction(
        f"the reply's text and tool calls are over {max_chars} characters (the limit) by tool call "
        f"{index + 1} of {count}"
    )


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
    # `call_errors` says the sender parsed the turn itself (the rollout does, RemoteEnv sends it so): the
    # text is then used as it is, never read for calls again.
    raw_errors = message.get("call_errors")
    if not raw_calls and raw_errors is None:
        return _read_text(content, max_chars, tool_call_format, has_tools)
    if len(content) > max_chars:
        raise InvalidAction(f"the reply is {len(content)} characters long; the limit is {max_chars}")
    if not isinstance(raw_calls, list):
        raise InvalidAction(f"tool_calls must be a list, got {type(raw_calls).__name__}")
    given, size = _read_errors(() if raw_errors is None else raw_errors, len(content), max_chars)
    calls: list[ToolCall] = []
    errors: list[str] = list(given)
    # The whole turn (text, every call's name and arguments, every error given) shares the reply's size
    # limit, as the same turn written as text would; the running total stops a million-call list early.
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
            raise _over_limit(max_chars, i, len(raw_calls))
    return AssistantTurn(_CONTROL_CHARS.sub("", content), tuple(calls), tuple(errors))


def _read_call(raw: Any, index: int) -> tuple[ToolCall, int]:
    from turngym.chat.calls.call import ToolCall

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
    chars = _argument_chars(arguments, index, name)
    # Ids are echoed into tool messages: only short strings or machine-size integers are kept as given.
    call_id = raw.get("id")
    if isinstance(call_id, int) and not isinstance(call_id, bool) and call_id.bit_length() <= 64:
        call_id = str(call_id)
    if not isinstance(call_id, str) or not call_id or len(call_id) > _MAX_CALL_ID_CHARS:
        call_id = f"call_{index}"
    request = ToolCall(call_id, name, arguments)
    return request, len(name) + len(request.id) + chars


def _argument_chars(arguments: Any, index: int, name: str) -> int:
    """The characters `arguments` (an object or a JSON string, nested within the bound) count for."""
    from turngym.chat.calls.bounded_json import MAX_JSON_DEPTH, JSONTooDeep, check_depth, depth_exceeds

    if isinstance(arguments, str):
        try:
            check_depth(arguments, len(arguments) - len(arguments.lstrip()))
        except JSONTooDeep as e:
            raise InvalidAction(f"tool call {index} ({_short(name)}): arguments {e.msg}") from None
        return len(arguments)
    if not isinstance(arguments, dict):
        raise InvalidAction(
            f"tool call {index} ({_short(name)}): arguments must be an object or a JSON string"
        )
    if depth_exceeds(arguments, MAX_JSON_DEPTH - 1):
        raise InvalidAction(
            f"tool call {index} ({_short(name)}): arguments nested deeper than the limit of {MAX_JSON_DEPTH} levels"
        )
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
