"""Tool schemas for chat templates that render no tools: listed in the system message, hermes format.

Some instruct models' templates ignore the `tools` argument (SmolLM2-135M-Instruct's renders only
roles and contents). An env's tools would then never reach the model, and an assistant turn carrying
`tool_calls` would render as its bare content, so the conversation would no longer be token-exact.
For such a template the rollout:
- appends `tools_system_text(tools)` to the system message: the schemas as JSON lines in `<tools>` and
  how to call one (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, the hermes format
  `turngym.chat.calls` reads). With no system message, the template's own default system prompt (found by
  rendering, e.g. SmolLM2's "You are a helpful AI assistant named SmolLM...") is kept before it;
- hands the template no tools, and records each assistant turn with its text as written (the
  `<tool_call>` blocks stay in `content`, parsed `tool_calls` beside it for readers), since the template
  renders only `content`;
- says so once per template, in one line on the `rollout.tool_prompt` logger.
Tool results keep their `tool` role and render in the template's own markup.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from turngym.chat.calls.formats import get_format, write_calls
from turngym.chat.render_deadline import RENDER_TIMEOUT_S, bounded_render

log = logging.getLogger(__name__)

#: The call format the listed tools are called in: the one `turngym.chat.calls` parses by default.
LISTED_FORMAT = "hermes"

_PROBE_NAME = "turngym_probe_tool"
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": _PROBE_NAME,
        "description": "probe",
        "parameters": {"type": "object", "properties": {}},
    },
}
_SYSTEM_MARK = "\u2063TURNGYM_SYSTEM\u2063"
_USER_MARK = "\u2063TURNGYM_USER\u2063"
_warned: set[int] = set()


def template_renders_tools(tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None) -> bool:
    """Whether the tokenizer's chat template writes a `tools=[...]` schema into the prompt."""
    messages = [{"role": "user", "content": _USER_MARK}]
    # The template is the tokenizer publisher's code: its render is time-bound.
    text = bounded_render(
        RENDER_TIMEOUT_S,
        tokenizer.apply_chat_template,
        messages,
        tools=[_PROBE_TOOL],
        tokenize=False,
        **(chat_template_kwargs or {}),
    )
    return _PROBE_NAME in text


def default_system_prompt(tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None) -> str:
    """The system text the template inserts when a conversation has no system message ("" if none)."""
    kwargs = chat_template_kwargs or {}
    user = {"role": "user", "content": _USER_MARK}
    with_system = bounded_render(
        RENDER_TIMEOUT_S,
        tokenizer.apply_chat_template,
        [{"role": "system", "content": _SYSTEM_MARK}, user],
        tokenize=False,
        **kwargs,
    )
    without = bounded_render(
        RENDER_TIMEOUT_S, tokenizer.apply_chat_template, [user], tokenize=False, **kwargs
    )
    at = with_system.find(_SYSTEM_MARK)
    if at < 0:
        return ""
    before, after = with_system[:at], with_system[at + len(_SYSTEM_MARK) :]
    # Same markup around a default text: `without` is before + default + after.
    if len(without) >= len(before) + len(after) and without.startswith(before) and without.endswith(after):
        return without[len(before) : len(without) - len(after)]
    return ""


def tools_system_text(tools: list[dict]) -> str:
    """The tools block added to the system message: one JSON schema a line, then the call format."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    markers = get_format(LISTED_FORMAT).markers
    example = write_calls([("function name", {"argument": "value"})], LISTED_FORMAT)
    return (
        "# Tools\n\n"
        "You can call the functions listed in <tools></tools>, one JSON schema a line:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        f"To call one, write a JSON object with its name and arguments in {markers.opens[0]}{markers.close} tags:\n"
        + example
    )


def place_tools(
    tokenizer: Any,
    messages: list[dict],
    tools: list[dict] | None,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> tuple[list[dict], list[dict] | None]:
    """Where an episode's tool schemas go: to the template, or into the system message.

    Args:
        tokenizer: the tokenizer whose chat template renders the episode.
        messages: the env's opening conversation (not modified).
        tools: the env's tool schemas (OpenAI function format), or None.
        chat_template_kwargs: extra template arguments the episode renders with.

    Returns:
        The opening messages to render and the tools to pass the template: `(messages, tools)` unchanged
        when the template renders tools (or there are none); otherwise messages whose system message
        lists the tools (`tools_system_text`) and None.
    """
    if not tools or template_renders_tools(tokenizer, chat_template_kwargs):
        return list(messages), (list(tools) if tools else None)
    key = hash(str(getattr(tokenizer, "chat_template", "")))
    if key not in _warned:
        _warned.add(key)
        log.warning(
            "the chat template renders no tools: the %d tool schemas go into the system message "
            "(%s %s format), see docs/rollout.md",
            len(tools),
            LISTED_FORMAT,
            get_format(LISTED_FORMAT).markers.opens[0],
        )
    block = tools_system_text(tools)
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{block}"
    else:
        default = default_system_prompt(tokenizer, chat_template_kwargs)
        out.insert(0, {"role": "system", "content": f"{default}\n\n{block}" if default else block})
    return out, None
