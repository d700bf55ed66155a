"""A conversation as the env records and renders it: the plain-text rendering and the stand-in for a reply
the env could not read."""

from __future__ import annotations

from typing import Any

from turngym.chat.message import Message


def render_transcript(messages: list[Message]) -> str:
    """A conversation as plain text, one block per message.

    Args:
        messages: Chat messages; tool calls of assistant messages are shown as `→ name(arguments)`.

    Returns:
        The blocks, each `[role]` (or `[tool name]`) and the text, separated by blank lines.

    Example:
        >>> print(render_transcript([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]))
        [user]
        Hi
        <BLANKLINE>
        [assistant]
        Hello
    """
    blocks = []
    for m in messages:
        head = m["role"] if m["role"] != "tool" else f"tool {m.get('name', '')}"
        body = m.get("content") or ""
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {})
            body += f"\n→ {fn.get('name')}({_arguments_text(fn.get('arguments'))})"
        blocks.append(f"[{head}]\n{body}")
    return "\n\n".join(blocks)


def unreadable_reply(action: Any) -> Message:
    """The assistant message recorded for an action the env could not read: the text, cut, or its type."""
    if isinstance(action, str):
        shown = action if len(action) <= 200 else f"{action[:200]}… [{len(action)} characters]"
    else:
        shown = f"[unreadable action of type {type(action).__name__}]"
    return {"role": "assistant", "content": shown}


def _arguments_text(arguments: Any) -> str:
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    from turngym.chat.calls.jsonscan import dump  # never raises, even on hand-built deep or odd values

    return dump(arguments)
