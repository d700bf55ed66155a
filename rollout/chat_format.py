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
"""

from __future__ import annotations

from typing import Any

_MARK = "\u2063TURNGYM_PROBE\u2063"
_PROBE_USER = {"role": "user", "content": "probe"}


class TemplateError(ValueError):
    """The chat template does not render conversations in a way that can be extended token-exactly."""


class ChatFormat:
    """Renders and tokenizes conversation segments for one tokenizer, tool list and template kwargs."""

    def __init__(
        self,
        tokenizer: Any,
        tools: list[dict] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        tool_call_format: str | None = None,
    ):
        self.tokenizer = tokenizer
        self.tools = list(tools) if tools else None
        self.kwargs = dict(chat_template_kwargs or {})
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
        return self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            **self.kwargs,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens parsed, nothing added."""
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        """Ids of the opening conversation plus the generation prompt."""
        return self.encode(self.render(messages, add_generation_prompt=True))

    def suffix_text(self, new_messages: list[dict]) -> str:
        """Text that follows a generated end-of-turn token when `new_messages` are appended."""
        probe = [_PROBE_USER, {"role": "assistant", "content": _MARK}]
        base = self.render(probe)
        full = self.render(probe + list(new_messages), add_generation_prompt=True)
        if not full.startswith(base):
            raise TemplateError(
                "the chat template renders earlier turns differently once messages are appended; "
                "cannot extend the conversation token-exactly"
            )
        return self.separator + full[len(base) :]

    def suffix_ids(self, new_messages: list[dict]) -> list[int]:
        """Ids of the environment segment after an assistant turn (separator + messages + gen prompt)."""
        if not new_messages:
            key = ""
            if key not in self._suffix_cache:
                self._suffix_cache[key] = self.encode(self.suffix_text([]))
            return list(self._suffix_cache[key])
        return self.encode(self.suffix_text(new_messages))

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
        if "<tool_call>" in template:
            return "hermes"
        if "[TOOL_CALLS]" in template:
            return "mistral"
        if "<|python_tag|>" in template or "ipython" in template:
            return "llama3"
        return "hermes"
