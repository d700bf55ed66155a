"""ChatFormat: what a chat template puts between turns, found by rendering probe conversations.

Token-exact assembly needs three facts about a template, all measured rather than assumed:
- the generation prompt after the opening messages (the prompt the model first sees);
- the end-of-turn token that closes an assistant turn (e.g. `<|im_end|>`, `<|eot_id|>`) and the
  separator the template writes after it (`"\\n"` for ChatML, nothing for Llama 3). The model stops at
  the end-of-turn token, so the separator belongs to the *next* (environment) segment. Dropping it is
  the assistant->tool boundary bug seen in verl;
- for messages appended after an assistant turn, the text the template adds in context: the suffix of
  render(probe + new, generation prompt) over render(probe), with a fixed probe conversation so the
  real history is never re-rendered (templates that rewrite history, e.g. drop old think blocks, do not
  disturb the tokens already generated).

Message contents (and tool schemas) are tokenized as plain text (`turngym.chat.encoder.ChatEncoder`): only
the template's own markup becomes special ids, so text the policy wrote and an env echoed back cannot
open a system turn. "Token-exact" therefore means: the assembled ids equal `conversation_ids(messages)`,
the template's render tokenized with every non-assistant content as text and each assistant turn as the
tokens the model generates for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from turngym.chat.calls.formats import guess_format
from turngym.chat.encoder import ChatEncoder
from turngym.chat.render_deadline import RENDER_TIMEOUT_S, RenderTimeout, bounded_render

_MARK = "\u2063TURNGYM_PROBE\u2063"
_PROBE_USER = {"role": "user", "content": "probe"}


class TemplateError(ValueError):
    """The chat template does not render conversations in a way that can be extended token-exactly."""


@contextlib.contextmanager
def _bounded() -> Iterator[None]:
    try:
        yield
    except RenderTimeout as exc:
        raise TemplateError(str(exc)) from None


class ChatFormat:
    """Renders and tokenizes conversation segments for one tokenizer, tool list and template kwargs.

    Every render runs under `render_timeout_s` (`turngym.chat.render_deadline`): a template that loops or
    recurses past it raises TemplateError instead of holding the process.
    """

    def __init__(
        self,
        tokenizer: Any,
        tools: list[dict] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        tool_call_format: str | None = None,
        render_timeout_s: float | None = RENDER_TIMEOUT_S,
    ):
        self.tokenizer = tokenizer
        self.tools = list(tools) if tools else None
        self.kwargs = dict(chat_template_kwargs or {})
        self.render_timeout_s = render_timeout_s
        self.chat = ChatEncoder(tokenizer, render_timeout_s=render_timeout_s)
        self.tool_call_format = tool_call_format or self._guess_tool_call_format()
        self.end_of_turn, self.separator = self._probe_turn_end()
        self.end_of_turn_id = self._single_token(self.end_of_turn)
        eos = getattr(tokenizer, "eos_token_id", None)
        stops = [self.end_of_turn_id] + ([eos] if eos is not None and eos != self.end_of_turn_id else [])
        self.stop_token_ids: list[int] = stops
        self._suffix_cache: dict[str, list[int]] = {}

    # ----- rendering -----------------------------------------------------------------------------
    def render(self, messages: list[dict], add_generation_prompt: bool = False) -> str:
        """The template's text for `messages` (with this format's tools and kwargs)."""
        with _bounded():
            return bounded_render(
                self.render_timeout_s,
                self.tokenizer.apply_chat_template,
                messages,
                tools=self.tools,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                **self.kwargs,
            )

    def encode(self, text: str) -> list[int]:
        """Token ids of template or model text, special tokens parsed, nothing added.

        Only for text whose special-token strings are meant as tokens: the template's markup and what a
        model writes. Message contents go through `prompt_ids` / `suffix_ids` (contents as text).
        """
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        """Ids of the opening conversation plus the generation prompt (contents as plain text)."""
        with _bounded():
            return self.chat.encode_chat(
                messages, tools=self.tools, add_generation_prompt=True, template_kwargs=self.kwargs
            )

    def conversation_ids(self, messages: list[dict], add_generation_prompt: bool = False) -> list[int]:
        """The ids a token-exact trajectory of `messages` equals (the contract the tests check).

        Every non-assistant content is plain text; assistant turns are tokenized as the model writes
        them (`assistant_ids`), since their tokens are the generated ones, never re-tokenized.
        """
        with _bounded():
            return self.chat.encode_chat(
                messages,
                tools=self.tools,
                add_generation_prompt=add_generation_prompt,
                template_kwargs=self.kwargs,
                keep_roles=("assistant",),
            )

    def _suffix_escaped(self, new_messages: list[dict]) -> str:
        """`suffix_text` with the sentinels of `ChatEncoder` where contents hold special-token strings."""
        probe = [_PROBE_USER, {"role": "assistant", "content": _MARK}]
        with _bounded():
            base = self.chat.render_escaped(probe, tools=self.tools, template_kwargs=self.kwargs)
            full = self.chat.render_escaped(
                probe + list(new_messages),
                tools=self.tools,
                add_generation_prompt=True,
                template_kwargs=self.kwargs,
            )
        if not full.startswith(base):
            raise TemplateError(
                "the chat template renders earlier turns differently once messages are appended; "
                "cannot extend the conversation token-exactly"
            )
        return self.separator + full[len(base) :]

    def suffix_text(self, new_messages: list[dict]) -> str:
        """Text that follows a generated end-of-turn token when `new_messages` are appended."""
        return self.chat.restore(self._suffix_escaped(new_messages))

    def suffix_ids(self, new_messages: list[dict]) -> list[int]:
        """Ids of the environment segment after an assistant turn (separator + messages + gen prompt).

        Contents are plain text: only the template's markup becomes special ids.
        """
        if not new_messages:
            key = ""
            if key not in self._suffix_cache:
                self._suffix_cache[key] = self.chat.encode_rendered(self._suffix_escaped([]))
            return list(self._suffix_cache[key])
        return self.chat.encode_rendered(self._suffix_escaped(new_messages))

    def assistant_text(self, message: dict) -> str:
        """What a model writes for `message` in this template (end-of-turn token included)."""
        probe = [_PROBE_USER]
        start = self.render(probe, add_generation_prompt=True)
        full = self.render(probe + [message])
        if not full.startswith(start):
            raise TemplateError(
                "the template renders an assistant turn that does not extend its generation prompt"
            )
        body = full[len(start) :]
        end = body.rfind(self.end_of_turn)
        if end < 0:
            raise TemplateError(f"assistant turn does not end with {self.end_of_turn!r}")
        return body[: end + len(self.end_of_turn)]

    def assistant_ids(self, message: dict) -> list[int]:
        """The canonical ids a model would generate for `message` (used by scripted engines and tests)."""
        return self.encode(self.assistant_text(message))

    # ----- probing -------------------------------------------------------------------------------
    def _probe_turn_end(self) -> tuple[str, str]:
        rendered = self.render([_PROBE_USER, {"role": "assistant", "content": _MARK}])
        at = rendered.rfind(_MARK)
        if at < 0:
            raise TemplateError("the chat template does not render assistant content")
        tail = rendered[at + len(_MARK) :]
        for token in self._added_tokens_by_length():
            if tail.startswith(token):
                return token, tail[len(token) :]
        eos = getattr(self.tokenizer, "eos_token", None)
        if eos and eos in tail:
            i = tail.index(eos)
            return eos, tail[i + len(eos) :]
        raise TemplateError(f"cannot find the end-of-turn token after assistant content in {tail!r}")

    def _added_tokens_by_length(self) -> list[str]:
        decoder = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
        return sorted((t.content for t in decoder.values()), key=len, reverse=True)

    def _single_token(self, text: str) -> int:
        ids = self.encode(text)
        if len(ids) != 1:
            raise TemplateError(f"end-of-turn {text!r} is not a single token: {ids}")
        return ids[0]

    def _guess_tool_call_format(self) -> str:
        template = getattr(self.tokenizer, "chat_template", None) or ""
        if isinstance(template, dict):
            template = " ".join(str(v) for v in template.values())
        return guess_format(template)
