"""Trajectory: one episode as the trainer sees it (token-exact) plus the conversation for people."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from os import PathLike
from typing import Any


@dataclass
class TurnRecord:
    """One assistant turn: where its tokens sit in the response and what the env made of it."""

    start: int  # index in response_ids of the turn's first generated token
    end: int  # one past its last generated token; the reward sits at end - 1
    reward: float = 0.0
    stop_reason: str | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    parse_errors: int = 0
    format_error: str | None = None
    env_tokens: int = 0  # tokens of the env segment appended after this turn


@dataclass
class Trajectory:
    """Token-exact record of one episode.

    `prompt_ids + response_ids` is exactly the sequence the model saw; `loss_mask` is 1 on generated
    tokens and 0 on env/tool/user tokens (whose `logprobs` are 0). `rewards[i]` belongs to
    `turns[i]` and sits on its last generated token (`reward_positions`). `messages` is the whole
    conversation as the chat template sees it; messages the env sent after the last generated turn
    (the closing feedback) are in `messages` but not in the tokens.
    """

    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    env_id: str | None = None
    seed: int | None = None
    group: str | None = None
    termination: str = "running"  # terminated | truncated | max_turns | budget | context_overflow | failed
    success: bool | None = None
    failed: bool = False
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    extra_fields: dict[str, Any] = field(default_factory=dict)

    @property
    def rewards(self) -> list[float]:
        """Per-turn rewards, in turn order."""
        return [t.reward for t in self.turns]

    @property
    def reward_positions(self) -> list[int]:
        """Index in `response_ids` of each turn's last generated token."""
        return [max(t.end - 1, 0) for t in self.turns]

    @property
    def total_reward(self) -> float:
        """Sum of the per-turn rewards (the episode return)."""
        return float(sum(self.rewards))

    @property
    def assistant_turns(self) -> int:
        """Assistant turns generated: the model's replies (``reward_extra_info.turns`` in training)."""
        return len(self.turns)

    @property
    def num_turns(self) -> int:
        """Assistant turns generated: the same as `assistant_turns`, under its older name.

        Not verl's ``num_turns``, which counts chat messages: that count is `chat_turns`.
        """
        return self.assistant_turns

    @property
    def chat_turns(self) -> int:
        """Messages of the conversation (system, user, assistant and tool alike): what verl's
        ``AgentLoopOutput.num_turns`` and its ``__num_turns__`` column count."""
        return len(self.messages)

    @property
    def overflowed(self) -> bool:
        """True when the episode stopped because the token budget could not hold the next segment."""
        return self.termination in ("context_overflow", "budget")

    def token_rewards(self) -> list[float]:
        """A reward per response token: each turn's reward on its last generated token (rm_scores)."""
        from rollout.reward_placement import place_turn_rewards

        return place_turn_rewards(len(self.response_ids), self.reward_positions, self.rewards)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (turns as dicts, derived rewards included for readers)."""
        d = asdict(self)
        d["rewards"] = self.rewards
        d["total_reward"] = self.total_reward
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        """Inverse of `to_dict`; a field of the wrong type raises TypeError naming it.

        A trajectories file may come from anyone (a shared JSONL opened in `rollout.view`), so each
        field is checked against its type before it becomes an attribute.
        """
        if not isinstance(d, dict):
            raise TypeError(f"a trajectory must be a JSON object, got {type(d).__name__}")
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for key, value in d.items():
            if key != "turns":
                _check_field(key, value, _TRAJECTORY_TYPES[key])
        turns = d.get("turns", [])
        if not isinstance(turns, list):
            raise TypeError(f"turns must be a list, got {type(turns).__name__}")
        d["turns"] = [_turn_from_dict(t, i) for i, t in enumerate(turns)]
        return cls(**d)

    def to_json(self) -> str:
        """One JSON line."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _is(value: Any, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "mask":
        return value in (0, 1) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "bool": bool, "dict": dict}[kind])


def _check_field(key: str, value: Any, kind: str) -> None:
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if optional and value is None:
        return
    if kind.startswith("list["):
        item = kind[5:-1]
        if isinstance(value, list) and all(_is(v, item) for v in value):
            return
        expected = f"a list of {item}s"
    elif _is(value, kind):
        return
    else:
        expected = f"a {kind}"
    got = repr(value)
    raise TypeError(
        f"{key} must be {expected}{' or null' if optional else ''}, got {got[:60]}{'...' if len(got) > 60 else ''}"
    )


def _turn_from_dict(turn: Any, index: int) -> TurnRecord:
    if not isinstance(turn, dict):
        raise TypeError(f"turns[{index}] must be an object, got {type(turn).__name__}")
    unknown = sorted(set(turn) - set(_TURN_TYPES))
    if unknown:
        raise TypeError(f"turns[{index}] has unknown field(s) {', '.join(map(str, unknown))[:80]}")
    for key, value in turn.items():
        _check_field(f"turns[{index}].{key}", value, _TURN_TYPES[key])
    return TurnRecord(**turn)


# What each field of a JSON line must hold ("?": may be null), checked by `Trajectory.from_dict`.
_TURN_TYPES = {
    "start": "int",
    "end": "int",
    "reward": "number",
    "stop_reason": "str?",
    "tool_calls": "int",
    "tool_errors": "int",
    "parse_errors": "int",
    "format_error": "str?",
    "env_tokens": "int",
}
_TRAJECTORY_TYPES = {
    "prompt_ids": "list[int]",
    "response_ids": "list[int]",
    "loss_mask": "list[mask]",
    "logprobs": "list[number]",
    "messages": "list[dict]",
    "tools": "list[dict]",
    "env_id": "str?",
    "seed": "int?",
    "group": "str?",
    "termination": "str",
    "success": "bool?",
    "failed": "bool",
    "error": "str?",
    "metrics": "dict",
    "extra_fields": "dict",
}


class TrajectoryBatch(list):
    """The kept trajectories of a `collect` (a list) plus `.failed`: episodes left out because they failed."""

    def __init__(self, items: Iterable[Trajectory] = (), failed: Iterable[Trajectory] | None = None):
        super().__init__(items)
        self.failed: list[Trajectory] = list(failed or [])


def save_jsonl(
    trajectories: Iterable[Trajectory],
    path: str | PathLike,
    *,
    model: str | None = None,
    tokenizer: Any = None,
    env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    max_turns: int | None = None,
) -> int:
    """Write trajectories one per line, with what `python -m rollout.view` needs to show them.

    Args:
        trajectories: e.g. what `rollout.collect` returned (add ``batch.failed`` to keep the failed ones).
        path: the JSONL file (overwritten).
        model: the model that played, recorded on every line (as ``rollout.eval --save`` does).
        tokenizer: the tokenizer's folder or name, or the tokenizer itself (its ``name_or_path``): the
            viewer decodes the tokens with it (without one, with the embedded model's).
        env_kwargs: the env's kwargs, one mapping for every episode or one per trajectory: the viewer
            plays the random and expert players with them and pairs only episodes played alike.
        max_turns: the turn cap the episodes were played under (`EpisodeConfig.max_turns`), for the same.

    Returns:
        The number of lines written.

    >>> import json, os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "x.jsonl")
    ...     save_jsonl([Trajectory(prompt_ids=[1], response_ids=[2])], path, tokenizer="tok", max_turns=4)
    ...     line = json.loads(open(path).read())
    ...     [t.response_ids for t in load_jsonl(path)]
    1
    [[2]]
    >>> line["tokenizer"], line["max_turns"]
    ('tok', 4)
    """
    name = tokenizer if tokenizer is None or isinstance(tokenizer, str | PathLike) else tokenizer.name_or_path
    items = list(trajectories)
    per_episode = (
        [env_kwargs] * len(items) if env_kwargs is None or isinstance(env_kwargs, Mapping) else env_kwargs
    )
    with open(path, "w", encoding="utf-8") as f:
        for t, kwargs in zip(items, per_episode, strict=True):
            record = t.to_dict()
            if model is not None or name is not None:
                record["model"] = model
                record["tokenizer"] = None if name is None else str(name)
            if kwargs is not None:
                record["env_kwargs"] = dict(kwargs)
            if max_turns is not None:
                record["max_turns"] = max_turns
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(items)


def load_jsonl(path: str) -> list[Trajectory]:
    """Read trajectories written by `save_jsonl`."""
    with open(path, encoding="utf-8") as f:
        return [Trajectory.from_dict(json.loads(line)) for line in f if line.strip()]
