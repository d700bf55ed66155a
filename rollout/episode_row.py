"""EpisodeRow: one dataset row (one episode: env id, seed, kwargs) in verl's RLHFDataset layout.

The trainer writes rows with ``EpisodeRow.to_row`` and verl's agent loop reads them back with
``EpisodeRow.from_row``; the column names live here and nowhere else. A row's columns::

    data_source    env id (verl groups validation metrics by it; greedy copies: ``<env id>@greedy``)
    prompt         the env's opening messages for the seed ([{role, content}]): verl's RLHFDataset
                   builds ``raw_prompt`` from it (validation logs) and the trainer's prompt-budget
                   check measures it; the agent loop plays from the env's own reset
    ability        the env's category
    reward_model   {"style": "env", "ground_truth": ""}  (rewards come from the env, not a reward fn)
    extra_info     {"env_id", "seed", "env_kwargs", "index", "split"}
    agent_name     "turngym"
    turngym_temperature    optional: this row's sampling temperature (0 = greedy)
    turngym_sampling_seed  optional: seeds the episode's sampling (validation replays)
    turngym_difficulty     optional: the difficulty to play at, over env_kwargs' (set per step by the
                           trainer's curriculum, never written to a file)

``env_kwargs`` is a JSON object string inside the file. Parquet would store a mapping as a struct
with the union of every row's keys (a key another row has reads back as None), cannot store an
empty one, and refuses one key holding a string in one row and a number in another; JSON keeps each
row's kwargs exactly. The encoding happens in ``to_row`` and the decoding in ``from_row`` only;
``from_row`` also takes a mapping (rows built in memory, or files with a struct column).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rollout.episode_kind import EpisodeKind

AGENT_NAME = "turngym"


def _missing(value: Any) -> bool:
    """True for an absent optional column: None, or the NaN pandas fills in for it."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def decode_kwargs(value: Any) -> dict[str, Any]:
    """A row's ``env_kwargs`` as a dict, from a JSON object string, a mapping, or nothing.

    Args:
        value: the stored ``env_kwargs``: a JSON object string, a mapping (a parquet struct, whose
            keys other rows have read back as None and are dropped), or None/NaN/"" for none.

    Returns:
        The constructor keyword arguments.

    Raises:
        ValueError: the value is not JSON, or not an object.

    >>> decode_kwargs('{"difficulty": "easy"}')
    {'difficulty': 'easy'}
    >>> decode_kwargs({"difficulty": "hard", "max_turns": None})
    {'difficulty': 'hard'}
    """
    if _missing(value):
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"env_kwargs is not JSON ({exc}); give a JSON object or a dict") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"env_kwargs must be a JSON object or a dict, got {type(value).__name__}")
    return {str(k): v for k, v in value.items() if v is not None}


def encode_kwargs(kwargs: Mapping[str, Any]) -> str:
    """``env_kwargs`` as stored in a row: a JSON object string with sorted keys (equal kwargs, equal text)."""
    return json.dumps(dict(kwargs), sort_keys=True)


@dataclass(frozen=True)
class EpisodeRow:
    """One episode of a dataset: which env, which seed, which kwargs, and how to sample it.

    Args:
        env_id: the registered env id.
        seed: the env seed (same seed, same episode); None lets the env pick.
        env_kwargs: the env's constructor keyword arguments.
        prompt: the opening messages (``[{role, content}]``) for verl and the prompt-budget check.
        ability: the env's category.
        index: the row's position in its split.
        split: ``"train"`` or ``"val"``.
        data_source: what verl groups metrics by; defaults to ``env_id``.
        temperature: a per-row sampling temperature over the batch's (0 = greedy).
        sampling_seed: seeds the episode's sampling (validation rows: their env seed).
        difficulty: the difficulty to play at, over ``env_kwargs``' (the curriculum's pick).

    >>> row = EpisodeRow("guess-number-v0", 7, {"difficulty": "easy"})
    >>> cols = row.to_row()
    >>> cols["extra_info"]["env_kwargs"]
    '{"difficulty": "easy"}'
    >>> EpisodeRow.from_row(cols) == row
    True
    >>> EpisodeRow.from_row({**cols, "turngym_difficulty": "hard"}).play_kwargs()
    {'difficulty': 'hard'}
    >>> row.kind.key
    'guess-number-v0 {"difficulty": "easy"}'
    """

    DATA_SOURCE: ClassVar[str] = "data_source"
    PROMPT: ClassVar[str] = "prompt"
    ABILITY: ClassVar[str] = "ability"
    REWARD_MODEL: ClassVar[str] = "reward_model"
    EXTRA_INFO: ClassVar[str] = "extra_info"
    AGENT_NAME: ClassVar[str] = "agent_name"
    TEMPERATURE: ClassVar[str] = "turngym_temperature"
    SAMPLING_SEED: ClassVar[str] = "turngym_sampling_seed"
    DIFFICULTY: ClassVar[str] = "turngym_difficulty"
    GREEDY_SUFFIX: ClassVar[str] = "@greedy"

    env_id: str
    seed: int | None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    prompt: list[dict[str, str]] = field(default_factory=list)
    ability: str = ""
    index: int = 0
    split: str = "train"
    data_source: str | None = None
    temperature: float | None = None
    sampling_seed: int | None = None
    difficulty: str | None = None

    def __post_init__(self) -> None:
        if self.data_source is None:
            object.__setattr__(self, "data_source", self.env_id)

    def to_row(self) -> dict[str, Any]:
        """The row's columns, as written to parquet and read back by verl's RLHFDataset.

        Returns:
            A dict of columns; the optional ``turngym_*`` columns appear only when set.
        """
        row: dict[str, Any] = {
            self.DATA_SOURCE: self.data_source,
            self.PROMPT: [
                {"role": str(m["role"]), "content": str(m.get("content") or "")} for m in self.prompt
            ],
            self.ABILITY: self.ability,
            self.REWARD_MODEL: {"style": "env", "ground_truth": ""},
            self.EXTRA_INFO: {
                "env_id": self.env_id,
                "seed": self.seed,
                "env_kwargs": encode_kwargs(self.env_kwargs),
                "index": self.index,
                "split": self.split,
            },
            self.AGENT_NAME: AGENT_NAME,
        }
        for column, value in (
            (self.TEMPERATURE, self.temperature),
            (self.SAMPLING_SEED, self.sampling_seed),
            (self.DIFFICULTY, self.difficulty),
        ):
            if value is not None:
                row[column] = value
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeRow:
        """Read a row as verl hands it to the agent loop (or as pandas reads the file).

        Args:
            row: the row's columns. The episode is read from ``extra_info`` (a dict, or a JSON
                string), else from top-level ``env_id``/``seed``/``env_kwargs`` columns.

        Returns:
            The EpisodeRow; absent optional columns (None, NaN, "") are None.

        Raises:
            ValueError: one line naming what is missing or malformed.
        """
        extra = row.get(cls.EXTRA_INFO)
        if isinstance(extra, str):
            extra = json.loads(extra) if extra.strip() else {}
        extra = dict(extra) if isinstance(extra, Mapping) else {}

        def pick(key: str) -> Any:
            value = extra.get(key)
            return row.get(key) if _missing(value) else value

        env_id = pick("env_id")
        if _missing(env_id) or not str(env_id):
            raise ValueError(
                "dataset row has no env_id (expected extra_info.env_id); rows come from "
                "trainer.data.datasets, or give env_id and seed columns"
            )
        seed, index = pick("seed"), extra.get("index")
        temperature, sampling_seed = row.get(cls.TEMPERATURE), row.get(cls.SAMPLING_SEED)
        difficulty = row.get(cls.DIFFICULTY)
        prompt = row.get(cls.PROMPT)
        if isinstance(prompt, str):  # a plain-text prompt column: one user message
            prompt = [{"role": "user", "content": prompt}]
        return cls(
            env_id=str(env_id),
            seed=None if _missing(seed) else int(seed),
            env_kwargs=decode_kwargs(pick("env_kwargs")),
            prompt=[dict(m) for m in prompt] if prompt is not None and not _missing(prompt) else [],
            ability=str(row.get(cls.ABILITY) or ""),
            index=0 if _missing(index) else int(index),
            split=str(extra.get("split") or "train"),
            data_source=None if _missing(row.get(cls.DATA_SOURCE)) else str(row.get(cls.DATA_SOURCE)),
            temperature=None if _missing(temperature) else float(temperature),
            sampling_seed=None if _missing(sampling_seed) else int(sampling_seed),
            difficulty=None if _missing(difficulty) or not str(difficulty) else str(difficulty),
        )

    @property
    def kind(self) -> EpisodeKind:
        """The row's kind of episode: its env id and ``env_kwargs`` (the curriculum's difficulty aside)."""
        return EpisodeKind(self.env_id, self.env_kwargs)

    def play_kwargs(self) -> dict[str, Any]:
        """The kwargs to build the env with: ``env_kwargs`` with the row's ``difficulty`` over its own."""
        kwargs = dict(self.env_kwargs)
        if self.difficulty:
            kwargs["difficulty"] = self.difficulty
        return kwargs

    def sampling(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """The batch's sampling parameters with this row's temperature and sampling seed over them."""
        params = dict(base)
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.sampling_seed is not None:
            params["sampling_seed"] = self.sampling_seed
        return params

    def greedy_copy(self) -> EpisodeRow:
        """The same episode played greedily, reported under ``<data_source>@greedy``."""
        return replace(self, temperature=0.0, data_source=f"{self.data_source}{self.GREEDY_SUFFIX}")
