"""Gymnasium spaces for chat-message observations and assistant actions."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space

_ROLES = ("system", "user", "assistant", "tool")
_SAMPLE_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789 \n<>{}[]":,.-_?!\x00\x07\t'


class ChatMessages(Space[list]):
    """A list of chat messages, each a dict with a `role` and a string `content`."""

    def __init__(self, max_messages: int = 1024, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_messages = max_messages

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        """True when `x` is a list of well-formed chat messages."""
        if not isinstance(x, list) or len(x) > self.max_messages:
            return False
        for m in x:
            if not isinstance(m, dict) or m.get("role") not in _ROLES:
                return False
            if not isinstance(m.get("content"), str):
                return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> list:
        """A short random conversation (for checkers, not for training)."""
        n = int(self.np_random.integers(1, 4))
        return [
            {
                "role": str(self.np_random.choice(["user", "assistant"])),
                "content": _random_text(self.np_random),
            }
            for _ in range(n)
        ]

    def __repr__(self) -> str:
        return "ChatMessages()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ChatMessages) and other.max_messages == self.max_messages


class AssistantAction(Space[Any]):
    """The assistant's turn: its text, or a parsed assistant message with tool calls."""

    def __init__(self, max_chars: int = 32768, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_chars = max_chars

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        """True for a string within the length limit or an assistant message dict."""
        if isinstance(x, str):
            return len(x) <= self.max_chars
        return isinstance(x, dict) and x.get("role", "assistant") == "assistant"

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Random text, control bytes included, to exercise parsers."""
        return _random_text(self.np_random)

    def __repr__(self) -> str:
        return f"AssistantAction(max_chars={self.max_chars})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AssistantAction) and other.max_chars == self.max_chars


def _random_text(rng: np.random.Generator) -> str:
    n = int(rng.integers(0, 40))
    return "".join(_SAMPLE_CHARS[i] for i in rng.integers(0, len(_SAMPLE_CHARS), size=n))
