"""EpisodeKind: which env, built with which kwargs; what a mixture entry, a dataset row and an eval
table name before a seed picks one episode of it.

Code that groups episodes by kind (tool schemas per kind in the prompt budget, rows that must be
buildable, baseline players per kind, a run's recorded env mixture) keys them by `EpisodeKind` or
its `key`, never by a tuple of the env id and a JSON dump written in place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, eq=False)
class EpisodeKind:
    """An env id with the keyword arguments it is built with.

    Two kinds are equal when their ids and kwargs are (in any key order); a kind hashes, sorts and
    prints by its `key`, the same in every process.

    Args:
        env_id: the registered env id.
        kwargs: the env's constructor keyword arguments (copied).

    >>> kind = EpisodeKind("guess-number-v0", {"max_turns": 6, "difficulty": "easy"})
    >>> kind.key
    'guess-number-v0 {"difficulty": "easy", "max_turns": 6}'
    >>> kind == EpisodeKind("guess-number-v0", {"difficulty": "easy", "max_turns": 6})
    True
    >>> EpisodeKind("maze-v0").key
    'maze-v0'
    >>> EpisodeKind.from_entry({"id": "maze-v0", "weight": 2.0, "kwargs": {}}).entry(2.0)
    {'id': 'maze-v0', 'weight': 2.0, 'kwargs': {}}
    """

    env_id: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "env_id", str(self.env_id))
        object.__setattr__(self, "kwargs", dict(self.kwargs or {}))

    @property
    def kwargs_json(self) -> str:
        """The kwargs as JSON with sorted keys (equal kwargs, equal text; a value JSON lacks as its str)."""
        return json.dumps(dict(self.kwargs), sort_keys=True, default=str)

    @property
    def key(self) -> str:
        """``<env id>`` alone, or ``<env id> <kwargs_json>``: for grouping, logs and table rows."""
        return f"{self.env_id} {self.kwargs_json}" if self.kwargs else self.env_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EpisodeKind):
            return NotImplemented
        return (self.env_id, self.kwargs_json) == (other.env_id, other.kwargs_json)

    def __hash__(self) -> int:
        return hash((self.env_id, self.kwargs_json))

    def __lt__(self, other: EpisodeKind) -> bool:
        return (self.env_id, self.kwargs_json) < (other.env_id, other.kwargs_json)

    def __str__(self) -> str:
        return self.key

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> EpisodeKind:
        """The kind of an env-mixture entry ``{"id", "weight", "kwargs"}`` (trainer.compose.env_entries).

        Args:
            entry: the mixture entry; ``kwargs`` may be missing or None.

        Returns:
            Its env id and kwargs (the weight is the mixture's, not the kind's).
        """
        return cls(entry["id"], entry.get("kwargs") or {})

    def entry(self, weight: float) -> dict[str, Any]:
        """This kind as an env-mixture entry with `weight` (the layout run.json records)."""
        return {"id": self.env_id, "weight": weight, "kwargs": json.loads(self.kwargs_json)}

    def make(self) -> Any:
        """A new env of this kind (`envs.make(env_id, **kwargs)`); the caller closes it."""
        import envs

        return envs.make(self.env_id, **self.kwargs)
