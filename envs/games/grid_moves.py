"""Reading up/down/left/right moves from a reply, shared by the grid games (sokoban, frozen lake).

The rules are maze-v0's: one block of move-only lines (prose lines around it are ignored); two blocks
split by prose are alternatives, not one plan, and are a format error.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from envs.core.errors import InvalidAction

Direction = Literal["up", "down", "left", "right"]
STEPS: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ALIASES = {
    **{d: d for d in STEPS},
    "u": "up",
    "d": "down",
    "l": "left",
    "r": "right",
    "n": "up",
    "s": "down",
    "w": "left",
    "e": "right",
    "north": "up",
    "south": "down",
    "west": "left",
    "east": "right",
}
_TOKENS = re.compile(r"[A-Za-z]+")
_SEPARATORS = re.compile(r"^[\s,;.:>\-]*$")


def parse_moves(text: str) -> list[str]:
    """The moves of the reply's one block of move-only lines; InvalidAction saying what is wrong."""
    if not text.strip():
        raise InvalidAction("the reply is empty")
    blocks: list[list[str]] = []
    in_block = False
    for line in text.strip().splitlines():
        words = _TOKENS.findall(line)
        if not words:
            continue  # blank or punctuation-only lines neither start nor end a block
        if all(w.lower() in ALIASES for w in words) and _SEPARATORS.match(_TOKENS.sub("", line)):
            if not in_block:
                blocks.append([])
            blocks[-1].extend(ALIASES[w.lower()] for w in words)
            in_block = True
        else:
            in_block = False
    if len(blocks) > 1:
        shown = "; ".join(" ".join(b)[:40] for b in blocks[:3])
        raise InvalidAction(f"the reply holds several separate lists of moves ({shown}); send one")
    if blocks:
        return blocks[0]
    first_bad = next((w for w in _TOKENS.findall(text) if w.lower() not in ALIASES), None)
    if first_bad is None:
        raise InvalidAction("no moves found in the reply")
    raise InvalidAction(f"{first_bad[:40]!r} is not a move; use up, down, left or right")


def move_args_model():
    """`move(directions: list["up" | "down" | "left" | "right"])`; a single direction string is accepted too."""
    from typing import Annotated

    from pydantic import BaseModel, BeforeValidator, Field

    class MoveArgs(BaseModel):
        directions: Annotated[list[Direction], BeforeValidator(_as_list)] = Field(
            description='Steps to take in order, e.g. ["up", "left"].'
        )

    return MoveArgs


def moves_from_tool(args: Any) -> list[str]:
    """The moves of a validated `move` call; an empty list is refused."""
    if not args.directions:
        raise InvalidAction("`directions` is empty; give at least one move")
    return list(args.directions)


def _as_list(value: Any) -> Any:
    # Models often send one move as a bare string; it means the same as a one-element list.
    return [value] if isinstance(value, str) else value
