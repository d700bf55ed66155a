"""Llama 3.x JSON calls: `<|python_tag|>{"name": ..., "parameters": {...}}` or the bare JSON object."""

from __future__ import annotations

import json

from turngym.chat.calls.call import ParsedTurn, ToolCall
from turngym.chat.calls.jsonscan import args_value, call_from_object, decode_at, dump, json_error, snippet
from turngym.chat.calls.markers import LLAMA3

TAG = LLAMA3.opens[0]
_END_TOKENS = ("<|eom_id|>", "<|eot_id|>")


def parse(text: str, id_prefix: str = "call_") -> ParsedTurn:
    """Calls after `<|python_tag|>`, or a message that is only JSON call objects (`;`-separated)."""
    if TAG in text:
        content, payload = text.split(TAG, 1)
        calls, errors = _parse_payload(payload, id_prefix)
        return ParsedTurn(content=content.strip(), tool_calls=calls, errors=errors)
    stripped = _strip_end(text)
    if stripped.startswith("{"):
        calls, errors = _parse_payload(stripped, id_prefix)
        if calls and not errors:
            return ParsedTurn(content="", tool_calls=calls)
        if errors and '"name"' in stripped:
            return ParsedTurn(content=text.strip(), tool_calls=[], errors=errors)
    return ParsedTurn(content=text.strip())


def _strip_end(text: str) -> str:
    text = text.strip()
    for token in _END_TOKENS:
        if text.endswith(token):
            text = text[: -len(token)].rstrip()
    return text


def _parse_payload(payload: str, id_prefix: str) -> tuple[list[ToolCall], list[str]]:
    payload = _strip_end(payload)
    calls: list[ToolCall] = []
    errors: list[str] = []
    pos = 0
    k = 0
    while pos < len(payload):
        while pos < len(payload) and (payload[pos].isspace() or payload[pos] == ";"):
            pos += 1
        if pos >= len(payload):
            break
        k += 1
        try:
            obj, pos = decode_at(payload, pos)
        except json.JSONDecodeError as exc:
            errors.append(f"tool call {k}: {json_error(exc)}: {snippet(payload[pos:])}")
            break
        made = call_from_object(obj, f"{id_prefix}{len(calls)}", ("parameters", "arguments"))
        if isinstance(made, str):
            errors.append(f"tool call {k}: {made}: {snippet(dump(obj))}")
        else:
            calls.append(made)
    if not calls and not errors:
        errors.append("empty tool call after <|python_tag|>")
    return calls, errors


def format(calls: list[ToolCall], content: str = "") -> str:  # noqa: A001
    """Bare JSON (`; `-joined) as Llama's template renders calls; `<|python_tag|>` after any text."""
    body = "; ".join(dump({"name": c.name, "parameters": args_value(c)}) for c in calls)
    if not calls:
        return content
    return f"{content}{TAG}{body}" if content else body
