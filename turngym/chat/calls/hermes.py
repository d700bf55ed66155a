"""Hermes / Qwen (ChatML) calls: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`."""

from __future__ import annotations

import json

from turngym.chat.calls.call import ParsedTurn, ToolCall
from turngym.chat.calls.jsonscan import args_value, call_from_object, decode_at, dump, json_error, snippet
from turngym.chat.calls.markers import HERMES

OPEN, CLOSE = HERMES.opens[0], HERMES.close


def parse(text: str, id_prefix: str = "call_") -> ParsedTurn:
    """Split text into content and calls; several blocks allowed, whitespace lenient."""
    pieces: list[str] = []
    calls: list[ToolCall] = []
    errors: list[str] = []
    pos = 0
    block = 0
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            pieces.append(text[pos:])
            break
        pieces.append(text[pos:start])
        body_start = start + len(OPEN)
        block += 1
        # Decode the JSON first so a "</tool_call>" inside a string argument does not end the block.
        end, objects, problem = _decode_block(text, body_start)
        if problem is None:
            for obj in objects:
                made = call_from_object(obj, f"{id_prefix}{len(calls)}")
                if isinstance(made, str):
                    errors.append(f"tool call block {block}: {made}: {snippet(dump(obj))}")
                else:
                    calls.append(made)
            pos = end
            continue
        close = text.find(CLOSE, body_start)
        raw = text[body_start : close if close >= 0 else len(text)]
        errors.append(f"tool call block {block}: {problem}: {snippet(raw) or '(empty)'}")
        pos = close + len(CLOSE) if close >= 0 else len(text)
    content = "\n".join(p.strip() for p in pieces if p.strip())
    return ParsedTurn(content=content, tool_calls=calls, errors=errors)


def _decode_block(text: str, pos: int) -> tuple[int, list, str | None]:
    objects = []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith(CLOSE, pos):
            if not objects:
                return pos, [], "empty tool call block"
            return pos + len(CLOSE), objects, None
        if pos >= len(text):
            if objects:  # the closing tag was trimmed as a stop string: the JSON itself is complete
                return pos, objects, None
            return pos, [], "unterminated tool call block (no JSON and no </tool_call>)"
        try:
            obj, pos = decode_at(text, pos)
        except json.JSONDecodeError as exc:
            return pos, [], json_error(exc)
        objects.append(obj)


def format(calls: list[ToolCall], content: str = "") -> str:  # noqa: A001 - the format's verb
    """Render calls as Qwen's chat template does."""
    blocks = [f"{OPEN}\n{dump({'name': c.name, 'arguments': args_value(c)})}\n{CLOSE}" for c in calls]
    return "\n".join([content, *blocks] if content else blocks)
