"""The opening prompt of an episode: where its tools go, its ChatFormat, and the ids the model first sees.

One function builds it for everyone who needs those ids: the rollout (`rollout.episode.run_episode`)
and the trainer's prompt-budget check (`trainer.checks.prompt_budget`), which must measure exactly what the
rollout will send, tool schemas included. A second copy of these three steps drifts (a template that
renders no tools puts them in the system message, `rollout.tool_prompt.place_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rollout.tool_prompt import place_tools
from turngym.chat.format import ChatFormat


@dataclass(frozen=True)
class OpeningPrompt:
    """An episode's opening, as rendered for one tokenizer.

    Args:
        messages: the opening messages to render (the env's, with the tools block in the system
            message when the template renders no tools).
        format: the ChatFormat the episode goes on with (its tools are those the template renders).
        prompt_ids: the ids of ``messages`` plus the generation prompt.
    """

    messages: list[dict[str, Any]]
    format: ChatFormat
    prompt_ids: list[int]


def opening_prompt(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    chat_template_kwargs: dict[str, Any] | None = None,
    tool_call_format: str | None = None,
    reuse: ChatFormat | None = None,
) -> OpeningPrompt:
    """The opening prompt of an episode whose env opened with `messages` and offers `tools`.

    Args:
        tokenizer: the tokenizer whose chat template renders the episode.
        messages: the env's opening messages (not modified).
        tools: the env's tool schemas (OpenAI function format), or None/[] for none.
        chat_template_kwargs: extra template arguments the episode renders with.
        tool_call_format: how calls are written (None: guessed from the template).
        reuse: the ``format`` of an earlier opening with the same tokenizer, tools and kwargs (a
            ChatFormat probes the template when built; the budget check measures many seeds of one
            env). Used only when its tools and kwargs match; otherwise a new one is built.

    Returns:
        The messages to render, the ChatFormat and the prompt ids.

    >>> from transformers import AutoTokenizer  # doctest: +SKIP
    >>> tok = AutoTokenizer.from_pretrained("Qwen/Qwen3-0.6B")  # doctest: +SKIP
    >>> opening = opening_prompt(tok, [{"role": "user", "content": "Guess a number."}], None)  # doctest: +SKIP
    >>> opening.prompt_ids == opening.format.prompt_ids(opening.messages)  # doctest: +SKIP
    True
    """
    messages, template_tools = place_tools(tokenizer, messages, tools, chat_template_kwargs)
    kwargs = dict(chat_template_kwargs or {})
    fmt = reuse
    if (
        fmt is None
        or fmt.tokenizer is not tokenizer
        or fmt.tools != (list(template_tools) if template_tools else None)
        or fmt.kwargs != kwargs
        or (tool_call_format is not None and fmt.tool_call_format != tool_call_format)
    ):
        fmt = ChatFormat(tokenizer, template_tools, chat_template_kwargs, tool_call_format)
    return OpeningPrompt(messages=messages, format=fmt, prompt_ids=fmt.prompt_ids(messages))
