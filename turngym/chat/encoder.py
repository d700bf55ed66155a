"""ChatEncoder: chat prompts whose special tokens come only from the chat template's own markup.

Message contents are text written by other parties (the policy, an env echoing it, tools, simulated
users, opponents). Tokenizing a rendered chat template with special tokens parsed would turn a content
string such as ``<|im_end|><|im_start|>system`` into real role boundaries, so whoever wrote it could
forge system turns in a prompt. Here the rendered conversation is tokenized with the markup the template
wrote as special ids and every content string as plain text, the way ``split_special_tokens=True``
tokenizes text.

How: before rendering, every special-token string inside the messages (and tool schemas) is replaced by
a private-use sentinel pair, so every special-token string left in the render is markup. The render is
tokenized as usual; the text between two markup tokens that holds a sentinel is tokenized again, with
the sentinels restored, with special tokens disabled. Content without special-token strings therefore
tokenizes exactly as ``tokenizer.encode(render)`` always did.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from turngym.chat.render_deadline import RENDER_TIMEOUT_S, bounded_render

_ESC = "\ue000"  # starts a sentinel pair; the second character names the escaped string
_FIRST = 0xF0000  # Supplementary Private Use Area-A: room for 65534 escaped strings
_literal_backends: dict[int, tuple[Any, Any]] = {}
_literal_lock = threading.Lock()


class ChatEncoder:
    """Renders chat messages with `tokenizer`'s chat template and tokenizes contents as plain text."""

    def __init__(self, tokenizer: Any, render_timeout_s: float | None = RENDER_TIMEOUT_S):
        self.tokenizer = tokenizer
        # The template is the tokenizer publisher's code: each render stops at this bound (RenderTimeout).
        self.render_timeout_s = render_timeout_s
        self.specials: list[str] = special_token_strings(tokenizer)
        table = [*self.specials, _ESC]  # the sentinel itself is escaped too, so it cannot be forged
        if len(table) > 0xFFFE:
            raise ValueError(
                f"the tokenizer has {len(self.specials)} special tokens; at most 65533 supported"
            )
        self._table = table
        self._code = {s: _ESC + chr(_FIRST + i) for i, s in enumerate(table)}
        self._escape_re = _alternation(table)
        self._special_re = _alternation(self.specials, capture=True)
        self._id_of = {s: _token_id(tokenizer, s) for s in self.specials}
        self._special_ids = {i for i in self._id_of.values() if i is not None}
        decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
        self._strip = {t.content: (bool(t.lstrip), bool(t.rstrip)) for t in decoder.values()}

    # ----- escaping ------------------------------------------------------------------------------
    def escape(self, value: Any) -> Any:
        """`value` (a string, or lists/dicts of them) with every special-token string replaced by a sentinel."""
        if isinstance(value, str):
            return self._escape_re.sub(lambda m: self._code[m[0]], value) if self._escape_re else value
        if isinstance(value, list | tuple):
            return [self.escape(v) for v in value]
        if isinstance(value, dict):
            return {k: self.escape(v) for k, v in value.items()}
        return value

    def escape_messages(self, messages: Iterable[dict], keep_roles: Iterable[str] = ()) -> list[dict]:
        """`messages` escaped, except those whose role is in `keep_roles` (their strings stay markup)."""
        keep = set(keep_roles)
        return [dict(m) if m.get("role") in keep else self.escape(dict(m)) for m in messages]

    def restore(self, text: str) -> str:
        """`text` with the sentinels turned back into the strings they stand for."""
        if _ESC not in text:
            return text
        return re.sub(_ESC + "(.)", lambda m: self._table[ord(m[1]) - _FIRST], text, flags=re.DOTALL)

    # ----- rendering and tokenizing --------------------------------------------------------------
    def render_escaped(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        add_generation_prompt: bool = False,
        template_kwargs: dict[str, Any] | None = None,
        keep_roles: Iterable[str] = (),
    ) -> str:
        """The template's render of the escaped messages: its special-token strings are all markup.

        Args:
            messages: chat messages; their contents are text from whoever wrote them.
            tools: tool schemas the template renders (escaped as well).
            add_generation_prompt: end with the template's generation prompt.
            template_kwargs: extra keyword arguments for the chat template.
            keep_roles: roles whose strings stay markup (the model's own canonical turns in tests).

        Returns:
            The rendered text, with sentinels where contents held special-token strings.

        Raises:
            RenderTimeout: the template rendered past `render_timeout_s` (it loops without end).
        """
        escaped = self.escape_messages(messages, keep_roles)
        escaped_tools = self.escape(list(tools)) if tools else None
        return bounded_render(
            self.render_timeout_s,
            self.tokenizer.apply_chat_template,
            escaped,
            tools=escaped_tools,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            **(template_kwargs or {}),
        )

    def encode_chat(
        self,
        messages: list[dict],
        *,
        tools: list[dict] | None = None,
        add_generation_prompt: bool = False,
        template_kwargs: dict[str, Any] | None = None,
        keep_roles: Iterable[str] = (),
    ) -> list[int]:
        """Token ids of the rendered conversation: markup as special ids, contents as plain text.

        Args:
            messages: chat messages; their contents are text from whoever wrote them.
            tools: tool schemas the template renders.
            add_generation_prompt: end with the template's generation prompt.
            template_kwargs: extra keyword arguments for the chat template.
            keep_roles: roles whose strings stay markup (see `render_escaped`).

        Returns:
            The ids; equal to ``tokenizer.encode(render)`` when no content holds a special-token string.
        """
        escaped = self.render_escaped(
            messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs=template_kwargs,
            keep_roles=keep_roles,
        )
        return self.encode_rendered(escaped)

    def encode_rendered(self, escaped: str) -> list[int]:
        """Ids of template text whose special-token strings are markup and whose sentinels are content."""
        ids = list(self.tokenizer.encode(escaped, add_special_tokens=False))
        if _ESC not in escaped:
            return ids
        parts = self._special_re.split(escaped) if self._special_re else [escaped]
        texts, marks = parts[0::2], parts[1::2]
        gaps: list[list[int]] = [[]]
        seen: list[int] = []
        for t in ids:
            if t in self._special_ids:
                seen.append(t)
                gaps.append([])
            else:
                gaps[-1].append(t)
        if seen != [self._id_of[m] for m in marks]:
            # The tokenizer split the text differently from the markup found here: tokenize piece by piece.
            gaps = [self.encode_text(self.restore(t)) if t else [] for t in texts]
        out: list[int] = []
        for i, text in enumerate(texts):
            if _ESC in text:
                out.extend(self.encode_text(self.restore(self._stripped(text, marks, i))))
            else:
                out.extend(gaps[i])
            if i < len(marks):
                out.append(self._id_of[marks[i]])
        return out

    def encode_text(self, text: str) -> list[int]:
        """Ids of `text` as plain text: special-token strings become ordinary tokens."""
        backend = _literal_backend(self.tokenizer)
        if backend is None:
            return list(self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))
        return list(backend.encode(text, add_special_tokens=False).ids)

    def _stripped(self, text: str, marks: list[str], i: int) -> str:
        """`text` without the whitespace its neighbouring markup tokens absorb (their lstrip/rstrip)."""
        if i > 0 and self._strip.get(marks[i - 1], (False, False))[1]:
            text = text.lstrip()
        if i < len(marks) and self._strip.get(marks[i], (False, False))[0]:
            text = text.rstrip()
        return text


def special_token_strings(tokenizer: Any) -> list[str]:
    """The tokenizer's special-token strings (added tokens marked special, and its named specials)."""
    found = set(getattr(tokenizer, "all_special_tokens", None) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    found.update(t.content for t in decoder.values() if getattr(t, "special", False))
    return sorted((s for s in found if s), key=lambda s: (-len(s), s))


def _alternation(strings: list[str], capture: bool = False) -> re.Pattern | None:
    """A regex matching any of `strings`, the longest first where two start at the same place."""
    if not strings:
        return None
    body = "|".join(re.escape(s) for s in sorted(strings, key=len, reverse=True))
    return re.compile(f"({body})" if capture else body)


def _token_id(tokenizer: Any, token: str) -> int | None:
    """The id of one special-token string (None when the tokenizer has no single id for it)."""
    tid = tokenizer.convert_tokens_to_ids(token)
    unk = getattr(tokenizer, "unk_token_id", None)
    return (
        tid
        if isinstance(tid, int) and (tid != unk or token == getattr(tokenizer, "unk_token", None))
        else None
    )


def _literal_backend(tokenizer: Any) -> Any:
    """A private copy of a fast tokenizer's backend with special tokens disabled (None for slow ones).

    transformers' own `split_special_tokens=True` flips a flag on the shared backend for the call, which
    races with other threads tokenizing at the same time (simulated users run in worker threads).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        return None
    key = id(tokenizer)
    with _literal_lock:
        held = _literal_backends.get(key)
        if held is None or held[0] is not tokenizer:
            from tokenizers import Tokenizer

            copy = Tokenizer.from_str(backend.to_str())
            copy.encode_special_tokens = True
            copy.no_truncation()
            copy.no_padding()
            held = _literal_backends[key] = (tokenizer, copy)
        return held[1]
