"""Helpers shared by the call formats: scanning JSON values (depth-bounded) and turning objects into calls."""

from __future__ import annotations

import json
from typing import Any

from turngym.chat.calls.bounded_json import JSONTooDeep, check_depth, dump, loads
from turngym.chat.calls.call import ToolCall

_DECODER = json.JSONDecoder()


def decode_at(text: str, pos: int) -> tuple[Any, int]:
    """Decode one JSON value starting at `pos` (after whitespace); return (value, end).

    Raises json.JSONDecodeError (JSONTooDeep for values nested deeper than `MAX_JSON_DEPTH`).
    """
    while pos < len(text) and text[pos].isspace():
        pos += 1
    check_depth(text, pos)
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:  # cannot happen after check_depth; kept so model text can never raise it
        raise JSONTooDeep(text, pos) from None


def json_error(exc: json.JSONDecodeError) -> str:
    """Short description of a decoding error."""
    return f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"


def snippet(text: str, limit: int = 200) -> str:
    """The raw text of a bad call, shortened for an error message."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_from_object(
    obj: Any, call_id: str, arg_keys: tuple[str, ...] = ("arguments", "parameters")
) -> ToolCall | str:
    """A ToolCall from a decoded `{"name", "arguments"}` object, or an error message."""
    if not isinstance(obj, dict):
        return f'expected a JSON object with "name" and "arguments", got {type(obj).__name__}'
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return 'missing "name" (a non-empty string)'
    args: Any = {}
    for key in arg_keys:
        if key in obj:
            args = obj[key]
            break
    if args is None:
        args = {}
    if isinstance(args, str):
        # Arguments given as a JSON string hide their nesting from the outer scan: bound it here.
        try:
            decoded = loads(args) if args.strip() else {}
        except JSONTooDeep as exc:
            return f"arguments of `{name}`: {exc.msg}"
        except json.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            args = decoded
    elif not isinstance(args, dict):
        # Keep it as text so the tool reports "arguments must be a JSON object".
        args = dump(args)
    given_id = obj.get("id")
    return ToolCall(
        id=given_id if isinstance(given_id, str) and given_id else call_id, name=name, arguments=args
    )


def args_value(call: ToolCall) -> Any:
    """Arguments for rendering: objects as objects; a raw string as the object it encodes, if it does."""
    if isinstance(call.arguments, str):
        try:
            decoded = loads(call.arguments)
            if isinstance(decoded, dict):
                return decoded
        except json.JSONDecodeError:
            pass
    return call.arguments
