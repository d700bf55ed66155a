"""Registry of tool-call text formats: parse an assistant message, render calls back, and the markers.

A format's parser and renderer load on first use, so asking for its markers (an env does, for every
reply, to see whether the reply may hold a call) imports no parser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from turngym.chat.calls import markers as _markers
from turngym.chat.calls.call import ParsedTurn, ToolCall
from turngym.chat.calls.markers import CallMarkers
from turngym.common.registration import EntryPoint, Registry, load_entry_point


@dataclass(frozen=True)
class CallFormat:
    """How one model family writes tool calls: its parser, its renderer and its markers.

    `parser` and `renderer` are callables or `module:attr` strings (loaded on first use).
    """

    name: str
    parser: EntryPoint
    renderer: EntryPoint
    markers: CallMarkers = CallMarkers(opens=("",))  # none known: every text may hold a call

    def parse(self, text: str, id_prefix: str = "call_") -> ParsedTurn:
        """Split `text` into content, calls (ids `{id_prefix}0`, ...) and errors for bad calls."""
        return load_entry_point(self.parser)(text, id_prefix)

    def format(self, calls: list[ToolCall], content: str = "") -> str:
        """Render `calls` (after optional `content`) as the model writes them."""
        return load_entry_point(self.renderer)(list(calls), content)


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
#: Each format's (and alias's) opening markers, by the name asked for: `may_hold_calls` runs every step.
_OPENS: dict[str, tuple[str, ...]] = {}


def register_format(
    name: str,
    parse: Callable[[str, str], ParsedTurn] | str,
    format: Callable[[list[ToolCall], str], str] | str,
    markers: CallMarkers | None = None,
) -> None:
    """Add a format under `name`; replacing a different one of the same name warns.

    Args:
        name: The format's name (what `tool_call_format` settings say).
        parse: `parse(text, id_prefix) -> ParsedTurn`, or its `module:attr`.
        format: `format(calls, content) -> str`, or its `module:attr`.
        markers: What opens a call and what its chat templates hold (none: every text may hold calls,
            no template is guessed to be this format).
    """
    _FORMATS.add(name, CallFormat(name, parse, format, markers or CallMarkers(opens=("",))))
    _OPENS.clear()


def get_format(name: str) -> CallFormat:
    """The format called `name` (aliases such as `qwen` accepted).

    >>> get_format("qwen").markers.opens
    ('<tool_call>',)
    """
    return _FORMATS.spec(name)


def list_formats() -> list[str]:
    """Names of the registered formats."""
    return _FORMATS.names


def may_hold_calls(text: str, format: str = "hermes") -> bool:
    """Whether `text` holds one of `format`'s opening markers: False means it holds no call in `format`.

    Args:
        text: What the model wrote.
        format: A registered format's name or alias.

    Returns:
        Whether parsing `text` could find a call.

    >>> may_hold_calls("50"), may_hold_calls('<tool_call>{"name": "f"}</tool_call>')
    (False, True)
    """
    opens = _OPENS.get(format)
    if opens is None:  # once per name: every env step asks, so the answer is kept
        opens = _OPENS[format] = get_format(format).markers.opens
    for marker in opens:  # noqa: SIM110 - a loop, not any() over a generator: 3x faster on this path
        if marker in text:
            return True
    return False


def guess_format(chat_template: str, default: str = "hermes") -> str:
    """The format a chat template writes tool calls in, from the markers it holds (`default` when none).

    Args:
        chat_template: The template's source text.
        default: The answer when no registered format's template markers appear.

    Returns:
        A registered format's name.

    >>> guess_format("{{ '[TOOL_CALLS]' }}"), guess_format("{{ messages }}")
    ('mistral', 'hermes')
    """
    for name in _FORMATS.names:
        if _FORMATS.spec(name).markers.in_template(chat_template):
            return name
    return default


def parse_tool_calls(text: str, format: str = "hermes", id_prefix: str = "call_") -> ParsedTurn:
    """Split an assistant message into content, calls (ids `{id_prefix}0`, ...) and errors for bad calls."""
    return get_format(format).parse(text, id_prefix)


def format_tool_calls(calls: list[ToolCall], format: str = "hermes", content: str = "") -> str:
    """Render calls (after optional content) as the model writes them."""
    return get_format(format).format(list(calls), content)


def write_calls(calls: Iterable[tuple[str, dict[str, Any]]], format: str | None = "hermes") -> str:
    """The text a model writes to make `calls` in `format`: what a scripted expert replies.

    Args:
        calls: `(tool name, arguments)` pairs, in order.
        format: A registered format's name or alias: an env's `tool_call_format` (None, an env that
            reads no calls, gets the default, hermes).

    Returns:
        The reply text, markers included, as `format_tool_calls` renders it.

    >>> print(write_calls([("guess", {"number": 50})]))
    <tool_call>
    {"name": "guess", "arguments": {"number": 50}}
    </tool_call>
    """
    made = [ToolCall(f"call_{i}", name, dict(arguments)) for i, (name, arguments) in enumerate(calls)]
    return format_tool_calls(made, format or "hermes")


register_format(
    "hermes", "turngym.chat.calls.hermes:parse", "turngym.chat.calls.hermes:format", _markers.HERMES
)
register_format(
    "llama3", "turngym.chat.calls.llama3:parse", "turngym.chat.calls.llama3:format", _markers.LLAMA3
)
register_format(
    "mistral", "turngym.chat.calls.mistral:parse", "turngym.chat.calls.mistral:format", _markers.MISTRAL
)
