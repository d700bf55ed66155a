"""The engine contract: `await engine.generate(request_id, prompt_ids=..., sampling_params=...)`.

The protocol only; the engines that implement it (transformers, SGLang, an OpenAI-compatible API,
scripted test engines) and their shared types (`Generation`, `SamplingParams`, `EngineError`) live in
`rollout/`. It sits on the ground floor because callers at several layers hold an engine: the
simulated user `interactions.llm_user.LLMUser`, the env opponent `rollout.engine_opponent`, and the
rollout itself. verl's server manager meets it as it is.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Engine(Protocol):
    """Anything that turns prompt ids into generated ids with logprobs.

    `generate` returns something with `token_ids`, `log_probs` and `stop_reason` (verl's `TokenOutput`
    or `turngym.engines.engine.Generation`).

    >>> class Echo:
    ...     async def generate(self, request_id, *, prompt_ids, sampling_params):
    ...         return prompt_ids
    >>> isinstance(Echo(), Engine)
    True
    """

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> Any:
        """Generate a continuation of `prompt_ids`."""
        ...


def chat_kwargs(
    engine: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The extra `generate` keywords for an engine that reads chat messages (`takes_messages = True`).

    A token engine (HF, SGLang, verl's server manager) reads `prompt_ids` alone and gets none; an engine
    behind a chat API (`turngym.engines.openai_engine.OpenAIEngine`) cannot take ids, so its callers also hand it
    the messages the ids were rendered from, and the tool schemas.

    Args:
        engine: The engine about to be called.
        messages: The chat the prompt ids render.
        tools: The tool schemas the chat template was given, if any.

    Returns:
        `{}` or `{"messages": ..., "tools": ...}`.

    >>> chat_kwargs(object(), [{"role": "user", "content": "hi"}])
    {}
    """
    if not getattr(engine, "takes_messages", False):
        return {}
    return {"messages": [dict(m) for m in messages], "tools": list(tools or [])}
