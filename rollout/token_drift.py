"""Token drift: turns whose generated ids, decoded and encoded again, come back as other ids.

The rollout trains on the ids the model generated, never on a re-tokenization of their text
(docs/design.md, "Trajectory"), so drift costs nothing here; it is reported because any pipeline that
re-tokenizes decoded text (a chat-template render of the conversation, a server that returns text)
would train on other tokens than the policy sampled. Many BPE merges have several spellings, and a
sampling policy finds them: a high share says the model writes token sequences its own tokenizer
would never produce.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def turn_drifts(tokenizer: Any, ids: Sequence[int]) -> bool:
    """Whether `ids` re-tokenize to other ids (decoded with special tokens kept, encoded without adding any)."""
    ids = [int(t) for t in ids]
    if not ids:
        return False
    text = tokenizer.decode(ids, skip_special_tokens=False)
    return list(tokenizer.encode(text, add_special_tokens=False)) != ids


def drifted_turns(tokenizer: Any, response_ids: Sequence[int], spans: Sequence[tuple[int, int]]) -> int:
    """How many of the turns (``[start, end)`` spans of `response_ids`) drift; a tokenizer error counts none.

    >>> class Chars:  # a toy tokenizer: one id per character, "ab" also has its own id 9
    ...     def decode(self, ids, skip_special_tokens=False):
    ...         return "".join("ab" if i == 9 else chr(i) for i in ids)
    ...     def encode(self, text, add_special_tokens=False):
    ...         return [ord(c) for c in text]
    >>> drifted_turns(Chars(), [104, 105, 9, 120], [(0, 2), (2, 4)])
    1
    """
    count = 0
    for start, end in spans:
        try:
            count += turn_drifts(tokenizer, response_ids[start:end])
        except Exception:  # noqa: BLE001 - a report must never fail an episode
            continue
    return count
