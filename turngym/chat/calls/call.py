"""A parsed tool call and an assistant turn split into text and calls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from turngym.chat.calls.bounded_json import dump, loads


@dataclass
class ToolCall:
    """One call the model asked for; `arguments` is a dict, or the raw string when it was not an object."""

    id: str
    name: str
    arguments: dict | str

    def arguments_json(self) -> str:
        """Arguments as a JSON string (raw strings pass through unchanged)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return dump(self.arguments)

    def to_openai(self) -> dict[str, Any]:
        """OpenAI chat `tool_calls` entry (arguments as a dict, as chat templates expect)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_openai(cls, entry: dict[str, Any], default_id: str = "call_0") -> ToolCall:
        """Read an OpenAI `tool_calls` entry; JSON-string arguments are decoded when they are an object."""
        fn = entry.get("function", entry)
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                decoded = loads(args) if args.strip() else {}
                if isinstance(decoded, dict):
                    args = decoded
            except json.JSONDecodeError:  # too deep included: the raw string goes to the tool, which says so
                pass
        return cls(id=str(entry.get("id") or default_id), name=str(fn.get("name", "")), arguments=args)


@dataclass
class ParsedTurn:
    """An assistant message split into its text, the well-formed calls, and messages for bad ones."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
