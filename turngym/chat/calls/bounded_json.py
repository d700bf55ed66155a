"""JSON with a nesting bound: model text nested 1000 deep becomes a decoding error, never a RecursionError."""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest JSON nesting a tool call may use. Real arguments nest a few levels; CPython's decoder and
#: encoder recurse per level and raise RecursionError near 1000, so model text is refused long before.
MAX_JSON_DEPTH = 64

# The only characters that change nesting depth or string state; everything else is skipped by the regex.
_STRUCTURAL = re.compile(r'[\[\]{}"\\]')


class JSONTooDeep(json.JSONDecodeError):
    """A JSON value nests deeper than `MAX_JSON_DEPTH`; reported like any other decoding error."""

    def __init__(self, doc: str, pos: int, limit: int = MAX_JSON_DEPTH):
        super().__init__(f"nested deeper than the limit of {limit} levels", doc, pos)
        self.limit = limit

    def __reduce__(self):  # JSONDecodeError pickles as (msg, doc, pos); this class takes (doc, pos, limit)
        return type(self), (self.doc, self.pos, self.limit)


def check_depth(text: str, pos: int = 0, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise JSONTooDeep if the JSON value starting at `pos` opens more than `limit` nested levels.

    A linear scan that stops where the value ends; it does not validate, the decoder does that next.
    """
    if pos >= len(text) or text[pos] not in "[{":
        return
    depth = 0
    in_string = False
    skip = -1  # index of a character escaped by a backslash inside a string
    for m in _STRUCTURAL.finditer(text, pos):
        i = m.start()
        if i == skip:
            continue
        ch = m.group()
        if in_string:
            if ch == "\\":
                skip = i + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise JSONTooDeep(text, i, limit)
        elif ch in "]}":
            depth -= 1
            if depth <= 0:
                return


def loads(text: str) -> Any:
    """`json.loads` with the nesting bound of `decode_at`; raises json.JSONDecodeError (or JSONTooDeep)."""
    check_depth(text, len(text) - len(text.lstrip()))
    try:
        return json.loads(text)
    except RecursionError:
        raise JSONTooDeep(text, 0) from None


def depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when a decoded value (dicts/lists/tuples) nests deeper than `limit`; iterative, so never recurses."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def dump(value: Any) -> str:
    """Canonical JSON for rendering calls; a value that cannot be encoded becomes a note, never an error."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return f'"[value nested too deeply to show (over {MAX_JSON_DEPTH} levels)]"'
    except (TypeError, ValueError) as exc:
        return json.dumps(f"[value that is not JSON: {exc}]")
