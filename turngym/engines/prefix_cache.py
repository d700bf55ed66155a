"""PrefixCache: the key/value states of finished generations, for the next turn of the same episode.

A multi-turn episode's next prompt is its last prompt, the tokens just generated and the env's answer:
token-exact rollouts append the sampled ids unchanged. Without a cache every turn prefills the whole
history again, so an episode of T turns over a history of L tokens computes about T x L / 2 prompt
tokens; with it, each turn computes only what was added since the last one.

Entries are keyed by their exact token sequence; a new prompt uses the longest one that is a strict
prefix of it. An entry stays after use: episodes that sampled the same tokens share it, and the turn it
served stores a longer one. The cache holds at most `max_tokens` tokens over all entries and drops the
least recently used first. Weights that change
make every entry stale: the engine clears the cache on each weight load.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass
class PrefixEntry:
    """One finished generation's states: `tokens` and, per layer, keys and values `[heads, len, dim]`."""

    tokens: list[int]
    keys: list[Any]
    values: list[Any]


class PrefixCache:
    """Finished generations' key/value states, found again by token prefix.

    Args:
        max_tokens: the most tokens kept over all entries (0 keeps none).

    Example:
        >>> cache = PrefixCache(max_tokens=8)
        >>> cache.store([1, 2, 3], keys=["k"], values=["v"])
        >>> cache.find([1, 2, 3, 4, 5]).tokens
        [1, 2, 3]
        >>> cache.find([1, 2, 3]) is None  # a strict prefix only
        True
    """

    def __init__(self, max_tokens: int) -> None:
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        self.max_tokens = int(max_tokens)
        self._entries: OrderedDict[tuple[int, ...], PrefixEntry] = OrderedDict()
        self._tokens = 0
        self.hits = 0  # prompts that found a prefix
        self.reused_tokens = 0  # prompt tokens not computed again thanks to a hit

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def tokens(self) -> int:
        """Tokens held over all entries."""
        return self._tokens

    def store(self, tokens: list[int], keys: list[Any], values: list[Any]) -> None:
        """Keep the states of `tokens` (per layer `keys`/`values`), dropping the oldest entries over the cap.

        Args:
            tokens: the token ids the states were computed for, in order.
            keys: one tensor per layer, `[heads, len(tokens), head_dim]`.
            values: as `keys`.
        """
        n = len(tokens)
        if n == 0 or n > self.max_tokens:
            return
        key = tuple(tokens)
        old = self._entries.pop(key, None)
        if old is not None:
            self._tokens -= len(old.tokens)
        while self._entries and self._tokens + n > self.max_tokens:
            _, dropped = self._entries.popitem(last=False)
            self._tokens -= len(dropped.tokens)
        self._entries[key] = PrefixEntry(list(tokens), keys, values)
        self._tokens += n

    def find(self, prompt: list[int]) -> PrefixEntry | None:
        """The longest entry whose tokens are a strict prefix of `prompt` (now the most recently used), or None.

        Args:
            prompt: the new prompt's token ids.

        Returns:
            The entry (its states cover `prompt[:len(entry.tokens)]`), or None when none matches.
        """
        best: tuple[int, ...] | None = None
        n = len(prompt)
        for key in self._entries:
            k = len(key)
            if (
                k < n
                and (best is None or k > len(best))
                and prompt[k - 1] == key[-1]
                and tuple(prompt[:k]) == key
            ):
                best = key
        if best is None:
            return None
        self._entries.move_to_end(best)
        entry = self._entries[best]
        self.hits += 1
        self.reused_tokens += len(entry.tokens)
        return entry

    def clear(self) -> None:
        """Drop every entry (their states belong to weights that are gone)."""
        self._entries.clear()
        self._tokens = 0
