"""ModelParticipant: a model writing the other side of a conversation through any engine.

The one place where "a model plays the other side" is written: a game's opponent
(`rollout.engine_opponent.EngineOpponent`) and a simulated user (`interactions.llm_user.LLMUser`) are
both a message list rendered with the tokenizer's chat template, sent to an engine and decoded back to
text. What differs between them (which messages the model sees, what an engine error or an empty reply
means for the episode) stays with them.
"""

from __future__ import annotations

import itertools
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from turngym.chat.engine import Engine, chat_kwargs
from turngym.chat.format import ChatFormat

_request_ids = itertools.count()


class ModelPrompt(NamedTuple):
    """What one request sends: the messages kept within the budget, their render and its ids."""

    messages: list[dict[str, Any]]
    text: str
    ids: list[int]


@dataclass(frozen=True)
class ModelReply:
    """What the model wrote for one request: the decoded text (stripped), its tokens, why it stopped."""

    text: str
    token_ids: list[int]
    stop_reason: str | None = None


class ModelParticipant:
    """A model that writes one side of a conversation: messages in, the model's decoded text out.

    Each request renders the messages with the tokenizer's chat template (`turngym.chat.format.ChatFormat`),
    every content tokenized as plain text: the other side's words reach this prompt and must not become
    role markup. It asks `engine` for at most `max_new_tokens` tokens, stopping at the template's
    end-of-turn token, and decodes them without special tokens.

    Args:
        engine: any `turngym.chat.Engine` (an async `generate(request_id, *, prompt_ids, sampling_params)`).
        tokenizer: a Hugging Face tokenizer with a chat template, or the path of one (loaded offline).
        name: who this is in the one-line report of the first failure (`turngym: <name>: ...`).
        request_prefix: the engine request ids are `<request_prefix>-<n>`.
        sampling_params: sampling for every request; `max_new_tokens` is set from the argument.
        max_new_tokens: the cap on one reply.
        seed: when set, each request's sampling seed is derived from it and the rendered prompt, so the
            same conversation gets the same reply however requests interleave.
        chat_template_kwargs: extra keyword arguments for the chat template.
        max_prompt_tokens: when set, the oldest exchanges (after a system message) are left out of a
            prompt that would be longer, two messages at a time, down to the latest message.
        on_engine_error: what happens next after an engine error, for the report.
        on_empty_reply: what happens next after an empty reply, for the report.

    `requests`, `failures` (engine errors and empty replies) and `generated_tokens` count over the
    participant's life; the first failure is reported on stderr. The example loads a tokenizer
    (torch), so it is skipped here; tests/interactions/test_model_participant.py runs it.

    >>> from transformers import AutoTokenizer  # doctest: +SKIP
    >>> from turngym.engines.embedded_model import build_embedded_model  # doctest: +SKIP
    >>> from turngym.chat import user  # doctest: +SKIP
    >>> from turngym.common.run_sync import run_sync  # doctest: +SKIP
    >>> from turngym.engines.engine import Generation  # doctest: +SKIP
    >>> tokenizer = AutoTokenizer.from_pretrained(build_embedded_model())  # doctest: +SKIP
    >>> class Plays4:  # an engine that always writes the same move  # doctest: +SKIP
    ...     async def generate(self, request_id, *, prompt_ids, sampling_params=None):
    ...         return Generation(token_ids=tokenizer.encode(" [4] ", add_special_tokens=False))
    >>> player = ModelParticipant(Plays4(), tokenizer, name="opponent", seed=0)  # doctest: +SKIP
    >>> run_sync(player.reply([user("Your move.")])).text, player.requests, player.failures  # doctest: +SKIP
    ('[4]', 1, 0)
    """

    def __init__(
        self,
        engine: Engine,
        tokenizer: Any,
        *,
        name: str = "ModelParticipant",
        request_prefix: str = "participant",
        sampling_params: dict[str, Any] | None = None,
        max_new_tokens: int = 32,
        seed: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        max_prompt_tokens: int | None = None,
        on_engine_error: str = "the error is raised to the caller",
        on_empty_reply: str = "the empty reply is returned",
    ):
        if not callable(getattr(engine, "generate", None)):
            raise TypeError(f"engine must have an async `generate` method, got {type(engine).__name__}")
        if isinstance(tokenizer, str):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
        self.engine = engine
        self.tokenizer = tokenizer
        self.name, self.request_prefix = name, request_prefix
        self.format = ChatFormat(tokenizer, chat_template_kwargs=chat_template_kwargs)
        self.sampling_params = {
            "temperature": 1.0,
            "stop_token_ids": list(self.format.stop_token_ids),
            **(sampling_params or {}),
            "max_new_tokens": max_new_tokens,
        }
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self.on_engine_error, self.on_empty_reply = on_engine_error, on_empty_reply
        self.requests = 0
        self.failures = 0
        self.generated_tokens = 0

    def prompt(self, messages: Sequence[dict[str, Any]]) -> ModelPrompt:
        """The prompt for `messages`: the oldest exchanges left out until it fits `max_prompt_tokens`.

        Args:
            messages: the conversation as this participant sees it (it is not changed).

        Returns:
            The messages kept, their render with the generation prompt, and its ids.
        """
        kept = list(messages)
        chat = self.format.chat
        while True:
            escaped = chat.render_escaped(
                kept, add_generation_prompt=True, template_kwargs=self.format.kwargs
            )
            prompt = ModelPrompt(kept, chat.restore(escaped), chat.encode_rendered(escaped))
            if self.max_prompt_tokens is None or len(prompt.ids) <= self.max_prompt_tokens:
                return prompt
            first = 1 if kept and kept[0]["role"] == "system" else 0
            if len(kept) - first < 3:  # only the latest message is left: send it as it is
                return prompt
            del kept[first : first + 2]  # one exchange: a message from each side

    async def reply(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None) -> ModelReply:
        """Ask the engine for this participant's next message.

        Args:
            messages: the conversation as this participant sees it (its own turns as `assistant`).
            seed: this request's sampling seed unless `sampling_params` set one; without it, the seed is
                derived from the participant's `seed` (when set) and the prompt.

        Returns:
            The reply; its text is empty when the engine wrote nothing (counted as a failure).

        Raises:
            Exception: whatever the engine raised, after counting it as a failure.
        """
        self.requests += 1
        prompt = self.prompt(messages)
        params = dict(self.sampling_params)
        if seed is not None:
            params.setdefault("seed", seed)
        elif self.seed is not None:
            params["seed"] = zlib.crc32(f"{self.seed}:{prompt.text}".encode()) & 0x7FFFFFFF
        try:
            out = await self.engine.generate(
                f"{self.request_prefix}-{next(_request_ids)}",
                prompt_ids=prompt.ids,
                sampling_params=params,
                **chat_kwargs(self.engine, prompt.messages),
            )
        except Exception as e:
            self.failed(describe_error(e), self.on_engine_error)
            raise
        token_ids = list(getattr(out, "token_ids", None) or [])
        self.generated_tokens += len(token_ids)
        text = self.tokenizer.decode(token_ids, skip_special_tokens=True).strip()
        if not text:
            self.failed("the engine returned an empty reply", self.on_empty_reply)
        return ModelReply(text, token_ids, getattr(out, "stop_reason", None))

    def failed(self, why: str, what_next: str) -> None:
        """Count a failure; the first is reported on stderr in one line."""
        self.failures += 1
        if self.failures == 1:
            print(
                f"turngym: {self.name}: {why}; {what_next} (check the engine; see `.failures`)",
                file=sys.stderr,
            )


def describe_error(error: BaseException) -> str:
    """`Type: message` of an engine error in one line; a Ray task error is described by its cause.

    Args:
        error: what the engine raised.

    Returns:
        The error's type and the last line of its message (at most 200 characters).

    >>> describe_error(ValueError("first\\nlast line"))
    'ValueError: last line'
    """
    cause = getattr(error, "cause", None)  # Ray's RayTaskError carries the remote exception here
    if isinstance(cause, BaseException):
        error = cause
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {(lines[-1] if lines else '')[:200]}"
