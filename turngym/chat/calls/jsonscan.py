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


def add_call(
    obj: Any,
    where: str,
    id_prefix: str,
    calls: list[ToolCall],
    errors: list[str],
    arg_keys: tuple[str, ...] = ("arguments", "parameters"),
) -> None:
    """Append the call a decoded object makes to `calls`, or why it makes none to `errors`.

    Every format's parser does this per object, so the call ids (`<id_prefix><index>`) and the error
    form stay one.

    Args:
        obj: the decoded JSON of one call.
        where: what the error names, e.g. "tool call block 2".
        id_prefix: the prefix of a made-up call id (a call without its own `id`).
        calls: the calls parsed so far, appended to.
        errors: the errors so far, appended to.
        arg_keys: where the arguments may stand, first found wins.

    >>> calls, errors = [], []
    >>> add_call({"name": "add", "arguments": {"a": 1}}, "tool call 1", "call_", calls, errors)
    >>> add_call([1], "tool call 2", "call_", calls, errors)
    >>> [c.id for c in calls], errors
    (['call_0'], ['tool call 2: expected a JSON object with "name" and "arguments", got list: [1]'])
    """
    made = call_from_object(obj, f"{id_prefix}{len(calls)}", arg_keys)
    if isinstance(made, str):
        errors.append(f"{where}: {made}: {snippet(dump(obj))}")
    else:
        calls.append(made)


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
