"""EpisodeResult: what one episode returns to verl (its ``extra_fields``), typed, in both directions.

The agent loop writes an episode's result with ``EpisodeResult.to_extra_fields`` and every trainer
module reads it back with ``EpisodeResult.from_extra_fields``; the key names live here and nowhere
else (as the dataset row's columns live in rollout/episode_row.py). The keys, as verl carries them
(one non-tensor column each)::

    turn_scores            per turn, its reward (verl's own name; its tool agent loop writes it too)
    turn_reward_positions  per turn, the response index its reward sits on (its last generated token)
    turn_spans             per turn, [start, end) of its generated tokens in the response
    turn_anchors           per turn, a digest of every token before it (GiGPO's state key)
    env_id                 the env played
    turngym_failed         the episode raised: it is a masked-out placeholder row
    turngym_error          why it failed (``Type: message (at file:line in function)``)
    turngym_termination    how it ended (terminated, truncated, max_turns, budget, context_overflow, failed)
    turngym_health         {tool_env, valid_tool_turns, drifted_turns, generated_tokens}
    turngym_behaviour      the env's behaviour counts (envs/baselines/behaviour.py), or None
    turngym_env_moves      how often it moved to another env server (rollout/env_servers.py)
    turngym_replayed       it moved and was replayed from its seed on another server
    turngym_failover       each move, as text
    reward_extra_info      verl's per-episode columns: success, turns, episode_failed, overflow,
                           turns_cut, format_errors and behaviour_<count> for every count any
                           registered env names (verl wants the same columns on every row)

Reading is tolerant: None, a missing key or a value of the wrong type reads as the field's default,
so rows written before a key existed (or by another agent loop) still read. Keys the result does not
own (verl's ``min_global_steps``, ``raw_prompt``, ...) are kept in ``other`` and written back as they were.

Two counts are both called "turns" elsewhere; here each has its own name. ``assistant_turns`` (the
``turns`` column) counts the model's replies, as ``Trajectory.assistant_turns`` does. verl's
``AgentLoopOutput.num_turns`` (and its ``__num_turns__`` column, its ``num_turns/mean`` metric) counts
chat messages, as verl's own tool agent loop does (user + assistant + tool turns + 1);
``Trajectory.chat_turns`` is that count. Neither is stored in the other's place.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


def _number(value: Any) -> float | None:
    """A finite-or-not float of `value`, or None when it is not a number (bools are numbers)."""
    if value is None or isinstance(value, str):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _count(value: Any) -> int:
    """A non-negative count read from a stored number; 0 for anything else."""
    number = _number(value)
    return int(number) if number is not None and math.isfinite(number) and number > 0 else 0


def _index(value: Any) -> int | None:
    """An integer (a Python or numpy int, not a bool), or None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _sequence(value: Any) -> list:
    """A stored list (a list, tuple or numpy array) as a list; [] for anything else."""
    if value is None or isinstance(value, str | bytes | Mapping):
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    return list(value) if isinstance(value, Sequence) else []


@dataclass(frozen=True)
class TurnSpan:
    """One assistant turn's generated tokens in the response, and its reward.

    Args:
        start: index in the response of the turn's first generated token.
        end: one past its last generated token.
        reward: the turn's reward.

    >>> TurnSpan(3, 7, 0.5).reward_position
    6
    """

    start: int
    end: int
    reward: float = 0.0

    @property
    def reward_position(self) -> int:
        """Where the turn's reward sits: its last generated token (0 for an empty first turn)."""
        return max(self.end - 1, 0)


@dataclass(frozen=True)
class EpisodeHealth:
    """The per-episode numbers the trainer's health metrics read (trainer/hooks/health/metrics.py).

    Args:
        tool_env: the episode offered tools.
        valid_tool_turns: turns with a tool call that parsed, ran without a tool error and drew no
            format error.
        drifted_turns: turns whose ids re-tokenize differently (rollout/token_drift.py); None when
            not measured.
        generated_tokens: tokens the model wrote; None when not reported.

    >>> EpisodeHealth.from_mapping({"tool_env": True, "valid_tool_turns": 2}).to_dict()
    {'tool_env': True, 'valid_tool_turns': 2}
    """

    tool_env: bool = False
    valid_tool_turns: int = 0
    drifted_turns: int | None = None
    generated_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored dict; a number that was not measured is left out rather than written as 0."""
        out: dict[str, Any] = {"tool_env": self.tool_env, "valid_tool_turns": self.valid_tool_turns}
        if self.drifted_turns is not None:
            out["drifted_turns"] = self.drifted_turns
        if self.generated_tokens is not None:
            out["generated_tokens"] = self.generated_tokens
        return out

    @classmethod
    def from_mapping(cls, value: Any) -> EpisodeHealth:
        """Read a stored health dict; anything else (None, an old row without one) reads as the defaults."""
        if not isinstance(value, Mapping):
            return cls()
        return cls(
            tool_env=bool(value.get("tool_env")),
            valid_tool_turns=_count(value.get("valid_tool_turns")),
            drifted_turns=_count(value["drifted_turns"]) if "drifted_turns" in value else None,
            generated_tokens=_count(value["generated_tokens"]) if "generated_tokens" in value else None,
        )


@dataclass(frozen=True)
class EpisodeResult:
    """One episode's result as verl carries it in ``extra_fields`` (see the module docstring).

    Args:
        env_id: the env played (None when unknown).
        turns: each assistant turn's span and reward.
        anchors: per turn, the digest of the tokens before it (None where a turn has none).
        failed: the episode raised and is a masked-out placeholder.
        error: why it failed.
        termination: how it ended; None when the row does not say.
        health: the numbers trainer/hooks/health/metrics.py reads.
        behaviour: the env's behaviour counts, or None.
        success: the env judged it a success (None: not reported).
        assistant_turns: the model's replies (None: not reported).
        overflow: it stopped because the token budget was full.
        turns_cut: turns cut by the per-turn cap or the budget.
        format_errors: replies the env could not read as an action.
        behaviour_columns: ``behaviour_<count>`` columns by count name (every count any registered
            env names, 0.0 where this episode has none).
        env_moves: how often it moved to another env server.
        replayed: it moved and was replayed on another server.
        failover: each move, as text ("" when it stayed).
        other: keys the result does not own, kept as they were.

    >>> result = EpisodeResult(env_id="guess-number-v0", turns=(TurnSpan(0, 3, 0.0), TurnSpan(5, 9, 1.0)),
    ...                        termination="terminated", success=True, assistant_turns=2)
    >>> fields = result.to_extra_fields()
    >>> fields["turn_reward_positions"], fields["reward_extra_info"]["success"]
    ([2, 8], 1.0)
    >>> EpisodeResult.from_extra_fields(fields) == result
    True
    >>> EpisodeResult.from_extra_fields(None).failed, EpisodeResult.from_extra_fields({}).turns
    (False, ())
    """

    TURN_SCORES: ClassVar[str] = "turn_scores"
    TURN_REWARD_POSITIONS: ClassVar[str] = "turn_reward_positions"
    TURN_SPANS: ClassVar[str] = "turn_spans"
    TURN_ANCHORS: ClassVar[str] = "turn_anchors"
    ENV_ID: ClassVar[str] = "env_id"
    FAILED: ClassVar[str] = "turngym_failed"
    ERROR: ClassVar[str] = "turngym_error"
    TERMINATION: ClassVar[str] = "turngym_termination"
    HEALTH: ClassVar[str] = "turngym_health"
    BEHAVIOUR: ClassVar[str] = "turngym_behaviour"
    ENV_MOVES: ClassVar[str] = "turngym_env_moves"
    REPLAYED: ClassVar[str] = "turngym_replayed"
    FAILOVER: ClassVar[str] = "turngym_failover"
    REWARD_INFO: ClassVar[str] = "reward_extra_info"
    # reward_extra_info's columns (verl reports each validation column as val-aux/<source>/<column>/mean@N).
    SUCCESS: ClassVar[str] = "success"
    TURNS: ClassVar[str] = "turns"
    EPISODE_FAILED: ClassVar[str] = "episode_failed"
    OVERFLOW: ClassVar[str] = "overflow"
    TURNS_CUT: ClassVar[str] = "turns_cut"
    FORMAT_ERRORS: ClassVar[str] = "format_errors"
    BEHAVIOUR_PREFIX: ClassVar[str] = "behaviour_"

    env_id: str | None = None
    turns: tuple[TurnSpan, ...] = ()
    anchors: tuple[str | None, ...] = ()
    failed: bool = False
    error: str | None = None
    termination: str | None = None
    health: EpisodeHealth = field(default_factory=EpisodeHealth)
    behaviour: Mapping[str, int] | None = None
    success: bool | None = None
    assistant_turns: int | None = None
    overflow: bool = False
    turns_cut: int = 0
    format_errors: int = 0
    behaviour_columns: Mapping[str, float] = field(default_factory=dict)
    env_moves: int = 0
    replayed: bool = False
    failover: str = ""
    other: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def owned_keys(cls) -> frozenset[str]:
        """The top-level ``extra_fields`` keys this class writes and reads."""
        return frozenset(
            (
                cls.TURN_SCORES,
                cls.TURN_REWARD_POSITIONS,
                cls.TURN_SPANS,
                cls.TURN_ANCHORS,
                cls.ENV_ID,
                cls.FAILED,
                cls.ERROR,
                cls.TERMINATION,
                cls.HEALTH,
                cls.BEHAVIOUR,
                cls.ENV_MOVES,
                cls.REPLAYED,
                cls.FAILOVER,
                cls.REWARD_INFO,
            )
        )

    @property
    def rewards(self) -> list[float]:
        """Per-turn rewards, in turn order."""
        return [turn.reward for turn in self.turns]

    @property
    def reward_positions(self) -> list[int]:
        """Per turn, the response index its reward sits on."""
        return [turn.reward_position for turn in self.turns]

    def reward_info(self) -> dict[str, float]:
        """The ``reward_extra_info`` columns verl turns into per-episode non-tensor columns."""
        return {
            self.SUCCESS: float(bool(self.success)),
            self.TURNS: float(self.assistant_turns or 0),
            self.EPISODE_FAILED: float(self.failed),
            self.OVERFLOW: float(self.overflow),
            self.TURNS_CUT: float(self.turns_cut),
            self.FORMAT_ERRORS: float(self.format_errors),
            **{self.BEHAVIOUR_PREFIX + name: float(v) for name, v in self.behaviour_columns.items()},
        }

    def failover_fields(self) -> dict[str, Any]:
        """The env-server move keys alone: count, replayed or not, and each move's reason."""
        return {self.ENV_MOVES: self.env_moves, self.REPLAYED: self.replayed, self.FAILOVER: self.failover}

    @classmethod
    def from_trajectory(
        cls,
        traj: Any,
        *,
        anchors: Sequence[str] = (),
        health: EpisodeHealth | None = None,
        behaviour_columns: Mapping[str, float] | None = None,
        env_moves: int = 0,
        replayed: bool = False,
        failover: str = "",
    ) -> EpisodeResult:
        """The result of a played (or failed) ``rollout.trajectory.Trajectory``.

        Args:
            traj: the episode.
            anchors: per turn, the digest of the tokens before it (rollout/agent_loop.py).
            health: the episode's health numbers.
            behaviour_columns: the ``behaviour_<count>`` columns by count name.
            env_moves: how often it moved env server (rollout/env_servers.py `failover_moves`).
            replayed: it was replayed on another server.
            failover: each move, as text.

        Returns:
            The EpisodeResult; the trajectory's own ``extra_fields`` go into ``other``.
        """
        metrics = traj.metrics or {}
        behaviour = metrics.get("behaviour")
        return cls(
            env_id=traj.env_id,
            turns=tuple(TurnSpan(t.start, t.end, float(t.reward)) for t in traj.turns),
            anchors=tuple(anchors),
            failed=bool(traj.failed),
            error=traj.error,
            termination=traj.termination,
            health=health or EpisodeHealth(),
            behaviour=dict(behaviour) if isinstance(behaviour, Mapping) else None,
            success=bool(traj.success),
            assistant_turns=traj.assistant_turns,
            overflow=bool(metrics.get("overflow", False)),
            turns_cut=_count(metrics.get("turns_cut", 0)),
            format_errors=_count(metrics.get("format_errors", 0)),
            behaviour_columns=dict(behaviour_columns or {}),
            env_moves=int(env_moves),
            replayed=bool(replayed),
            failover=str(failover),
            other={k: v for k, v in (traj.extra_fields or {}).items() if k not in cls.owned_keys()},
        )

    def to_extra_fields(self) -> dict[str, Any]:
        """The result as verl's ``extra_fields`` (plain lists, dicts and scalars).

        Returns:
            A dict with every owned key (see the module docstring) over the keys in ``other``. verl
            wants a number in every ``reward_extra_info`` column, so an unreported ``success`` or
            ``assistant_turns`` is written as 0.0 (and reads back as False and 0).
        """
        return {
            **dict(self.other),
            self.TURN_SCORES: self.rewards,
            self.TURN_REWARD_POSITIONS: self.reward_positions,
            self.TURN_SPANS: [[turn.start, turn.end] for turn in self.turns],
            self.TURN_ANCHORS: list(self.anchors),
            self.FAILED: bool(self.failed),
            self.ERROR: self.error,
            self.TERMINATION: self.termination,
            self.ENV_ID: self.env_id,
            self.HEALTH: self.health.to_dict(),
            self.BEHAVIOUR: None if self.behaviour is None else dict(self.behaviour),
            **self.failover_fields(),
            self.REWARD_INFO: self.reward_info(),
        }

    @classmethod
    def from_extra_fields(
        cls, fields: Mapping[str, Any] | None, response_mask: Sequence[int] | None = None
    ) -> EpisodeResult:
        """Read an episode's ``extra_fields`` back, whoever wrote them and whenever.

        Args:
            fields: the episode's ``extra_fields``; None (or anything not a mapping) for a row that
                reports nothing.
            response_mask: the row's response mask. Rows written before ``turn_spans`` existed give
                only each turn's last token; with the mask a turn starts where the run of generated
                tokens ending there starts, without it a turn is that one token.

        Returns:
            The EpisodeResult; every missing or malformed value reads as the field's default.
        """
        if not isinstance(fields, Mapping):
            return cls()
        info = fields.get(cls.REWARD_INFO)
        info = info if isinstance(info, Mapping) else {}
        success = fields.get(cls.SUCCESS)  # a reward function may report it at the top level
        if success is None:
            success = info.get(cls.SUCCESS)
        turns_reported = _number(info.get(cls.TURNS))
        behaviour = fields.get(cls.BEHAVIOUR)
        error, termination = fields.get(cls.ERROR), fields.get(cls.TERMINATION)
        env_id = fields.get(cls.ENV_ID)
        anchors = _sequence(fields.get(cls.TURN_ANCHORS))
        return cls(
            env_id=str(env_id) if env_id is not None and str(env_id) else None,
            turns=_read_turns(fields, response_mask, cls),
            anchors=tuple(None if a is None else str(a) for a in anchors),
            failed=bool(fields.get(cls.FAILED)),
            error=error if isinstance(error, str) else None,
            termination=termination if isinstance(termination, str) and termination else None,
            health=EpisodeHealth.from_mapping(fields.get(cls.HEALTH)),
            behaviour={str(k): v for k, v in behaviour.items()} if isinstance(behaviour, Mapping) else None,
            success=None if success is None else bool(success),
            assistant_turns=None if turns_reported is None else _count(turns_reported),
            overflow=bool(info.get(cls.OVERFLOW)),
            turns_cut=_count(info.get(cls.TURNS_CUT)),
            format_errors=_count(info.get(cls.FORMAT_ERRORS)),
            behaviour_columns={
                str(k).removeprefix(cls.BEHAVIOUR_PREFIX): float(v)
                for k, v in info.items()
                if str(k).startswith(cls.BEHAVIOUR_PREFIX) and _number(v) is not None
            },
            env_moves=_count(fields.get(cls.ENV_MOVES)),
            replayed=bool(fields.get(cls.REPLAYED)),
            failover=str(fields.get(cls.FAILOVER) or ""),
            other={k: v for k, v in fields.items() if k not in cls.owned_keys()},
        )


def _read_turns(
    fields: Mapping[str, Any], mask: Sequence[int] | None, cls: type[EpisodeResult]
) -> tuple[TurnSpan, ...]:
    """The turns of stored extra_fields: from ``turn_spans`` when present, else from reward positions."""
    rewards = [_number(r) for r in _sequence(fields.get(cls.TURN_SCORES))]
    spans = _sequence(fields.get(cls.TURN_SPANS))
    if spans:
        out = []
        for k, span in enumerate(spans):
            pair = [_index(x) for x in _sequence(span)]
            if len(pair) != 2 or pair[0] is None or pair[1] is None:
                continue
            reward = rewards[k] if k < len(rewards) and rewards[k] is not None else 0.0
            out.append(TurnSpan(pair[0], pair[1], float(reward)))
        return tuple(out)
    # An older row: only each turn's last generated token is known.
    mask = None if mask is None else list(mask)
    out = []
    for stored, reward in zip(_sequence(fields.get(cls.TURN_REWARD_POSITIONS)), rewards, strict=False):
        position = _index(stored)
        if position is None or position < 0:
            continue
        if mask is not None and position >= len(mask):
            continue
        start = position
        while mask is not None and start > 0 and mask[start - 1]:
            start -= 1
        out.append(TurnSpan(start, position + 1, 0.0 if reward is None else float(reward)))
    return tuple(out)
