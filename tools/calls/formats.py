"""Registry of tool-call text formats: parse an assistant message, render calls back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tools.calls import hermes, llama3, mistral
from tools.calls.call import ParsedTurn, ToolCall
from tools.registration import Registry


@dataclass(frozen=True)
class CallFormat:
    """How one model family writes tool calls."""

    name: str
    parse: Callable[[str, str], ParsedTurn]
    format: Callable[[list[ToolCall], str], str]


_FORMATS: Registry[CallFormat] = Registry(
    "tool-call format",
    listing=lambda r: f"known formats: {', '.join(r.names)}.",
    aliases={
        "qwen": "hermes",
        "qwen25": "hermes",
        "chatml": "hermes",
        "llama": "llama3",
        "llama3_json": "llama3",
    },
)


def register_format(
    name: str, parse: Callable[[str, str], ParsedTurn], format: Callable[[list[ToolCall], str], str]
) -> None:
    """Add a format under `name`; replacing a different one of the same name warns."""
    _FORMATS.add(name, CallFormat(name, parse, format))


def get_format(name: str) -> CallFormat:
    """The format called `name` (aliases such as `qwen` accepted)."""
    return _FORMATS.spec(name)


def list_formats() -> list[str]:
    """Names of the registered formats."""
    return _FORMATS.names


def parse_tool_calls(text: str, format: str = "hermes", id_prefix: str = "call_") -> ParsedTurn:
    """Split an assistant message into content, calls (ids `{id_prefix}0`, ...) and errors for bad calls."""
    return get_format(format).parse(text, id_prefix)


def format_tool_calls(calls: list[ToolCall], format: str = "hermes", content: str = "") -> str:
    """Render calls (after optional content) as the model writes them."""
    return get_format(format).format(list(calls), content)


register_format("hermes", hermes.parse, hermes.format)
register_format("llama3", llama3.parse, llama3.format)
register_format("mistral", mistral.parse, mistral.format)
