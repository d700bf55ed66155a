"""Mistral calls: `[TOOL_CALLS] [{"name": ..., "arguments": {...}}]` (and v11's `[TOOL_CALLS]name[ARGS]{...}`)."""

from __future__ import annotations

import json
import re

from turngym.chat.calls.call import ParsedTurn, ToolCall
from turngym.chat.calls.jsonscan import args_value, call_from_object, decode_at, dump, json_error, snippet
from turngym.chat.calls.markers import MISTRAL

TAG = MISTRAL.opens[0]
_V11_RE = re.compile(r"\s*([A-Za-z0-9_.\-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?\[ARGS\]")


def parse(text: str, id_prefix: str = "call_") -> ParsedTurn:
    """Text before the first `[TOOL_CALLS]` is content; each segment after holds a JSON list or one v11 call."""
    if TAG not in text:
        return ParsedTurn(content=text.strip())
    content, *segments = text.split(TAG)
    calls: list[ToolCall] = []
    errors: list[str] = []
    for seg_no, segment in enumerate(segments, 1):
        segment = segment.strip()
        if segment.endswith("</s>"):
            segment = segment[:-4].rstrip()
        v11 = _V11_RE.match(segment)
        try:
            if v11:
                args, _ = decode_at(segment, v11.end())
                obj = {"name": v11.group(1), "arguments": args}
                if v11.group(2):
                    obj["id"] = v11.group(2)
                objects = [obj]
            else:
                value, _ = decode_at(segment, 0)
                objects = value if isinstance(value, list) else [value]
        except json.JSONDecodeError as exc:
            errors.append(f"tool call segment {seg_no}: {json_error(exc)}: {snippet(segment) or '(empty)'}")
            continue
        for obj in objects:
            made = call_from_object(obj, f"{id_prefix}{len(calls)}")
            if isinstance(made, str):
                errors.append(f"tool call segment {seg_no}: {made}: {snippet(dump(obj))}")
            else:
                calls.append(made)
    return ParsedTurn(content=content.strip(), tool_calls=calls, errors=errors)


def format(calls: list[ToolCall], content: str = "") -> str:  # noqa: A001
    """Render calls as one `[TOOL_CALLS]` JSON list."""
    if not calls:
        return content
    body = dump([{"name": c.name, "arguments": args_value(c)} for c in calls])
    return f"{content}{TAG} {body}" if content else f"{TAG} {body}"
