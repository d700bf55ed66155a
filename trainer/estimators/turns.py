"""The turns of a row, as the turn-level estimators read them (`turn_grpo`, `turn_gigpo`).

verl's outcome estimators (GRPO, RLOO, ...) sum a row's token rewards into one episode return, so
every generated token of a multi-turn episode gets the same advantage. The turn estimators read the
turn structure from what verl already hands every estimator (`compute_advantage` in
`verl/trainer/ppo/ray_trainer.py`, called by the v1 trainer's `_compute_advantage`, which fetches
`uid`, `response_mask` and `rm_scores` from TransferQueue and nothing else):

- a turn is a maximal run of generated tokens (`response_mask == 1`); the env/tool/user tokens
  between turns have mask 0 (rollout/episode.py). Under turngym's trainer the rollout's own turn
  spans (`EpisodeResult.turns`, rollout/episode_result.py) are handed over instead
  (`known_turns`, set by trainer/hooks/advantage_inputs.py): a turn is then the generated tokens of
  its span. The two agree on every row the agent loop writes, since env tokens always follow a turn
  that is not the last; the spans stay exact where they would not (two turns with no token between
  them). Rewards are always read from `token_level_rewards`, which verl may have changed (a KL penalty
  in the reward), never from the spans;
- the rollout puts each turn's reward on that turn's last generated token of `rm_scores`
  (rollout/agent_loop.py `TurnRewardOutput`), so `token_level_rewards` holds per-turn rewards and
  its row sum is still the episode return that outcome estimators use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import torch

from rollout.episode_result import EpisodeResult

EPSILON = 1e-6  # as verl's GRPO: a group whose returns are all equal gets advantage 0, not NaN

# Per-row turn spans for the advantage call under way, set by `known_turns` (verl hands
# estimators tensors only); None: turns are read from the mask's runs.
_TURN_SPANS: ContextVar[list[list[tuple[int, int]] | None] | None] = ContextVar(
    "turngym_turn_spans", default=None
)
# Per-row turn anchors for the advantage call under way, set by `known_turns`: verl's
# `compute_advantage` passes registered estimators no non-tensor columns (ray_trainer.py ~250).
_TURN_ANCHORS: ContextVar[list[list[str]] | None] = ContextVar("turngym_turn_anchors", default=None)
# Where `turn_gigpo` reports its step-group sizes for the step's metrics (set by the same mixin).
_STEP_STATS: ContextVar[dict[str, float] | None] = ContextVar("turngym_step_stats", default=None)


def turn_index(
    response_mask: torch.Tensor, spans: list[list[tuple[int, int]] | None] | None = None
) -> torch.Tensor:
    """Turn number of every generated token; -1 on mask-0 tokens.

    Args:
        response_mask: (bs, response_length), 1 on generated tokens.
        spans: per row, each turn's ``(start, end)`` in the response (the rollout's `TurnSpan`s), or
            None for a row without them; None for all rows: every turn is a run of mask 1 (runs count
            0, 1, ...). A span with no generated token inside the response gets no number, as it
            would have no run.

    Returns:
        (bs, response_length) long tensor.
    """
    mask = response_mask.bool()
    starts = mask.clone()
    starts[:, 1:] &= ~mask[:, :-1]
    index = starts.long().cumsum(dim=-1) - 1
    index = torch.where(mask, index, torch.full_like(index, -1))
    if spans is None:
        return index
    if len(spans) != mask.shape[0]:
        raise ValueError(f"turn spans for {len(spans)} rows, the batch has {mask.shape[0]}")
    for i, row_spans in enumerate(spans):
        if row_spans is None:
            continue
        index[i] = -1
        k = 0
        for start, end in row_spans:
            inside = torch.zeros_like(mask[i])
            inside[max(start, 0) : max(end, 0)] = True
            inside &= mask[i]
            if inside.any():
                index[i, inside] = k
                k += 1
    return index


def turn_rewards(token_level_rewards: torch.Tensor, turns: torch.Tensor) -> list[torch.Tensor]:
    """Per row, the reward of each turn: token rewards summed by the turn they sit in.

    A reward on a mask-0 token (a turn cut by the budget, a placeholder row) belongs to the last
    turn before it, or to the first turn when none came before, so a row's turn rewards always sum
    to its token rewards. A row with no generated token gets one reward-only turn.
    """
    out = []
    for rewards, index in zip(token_level_rewards, turns, strict=True):
        count = int(index.max().item()) + 1
        if count == 0:
            out.append(rewards.sum().reshape(1).to(torch.float32))
            continue
        owner = torch.cummax(index, dim=0).values.clamp(min=0)
        per_turn = torch.zeros(count, dtype=torch.float32, device=rewards.device)
        per_turn.index_add_(0, owner, rewards.to(torch.float32))
        out.append(per_turn)
    return out


def discounted_returns(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    """Return-to-go of every turn: ``G[k] = r[k] + gamma * G[k + 1]``."""
    returns = torch.zeros_like(rewards)
    running = torch.zeros((), dtype=rewards.dtype, device=rewards.device)
    for k in range(len(rewards) - 1, -1, -1):
        running = rewards[k] + gamma * running
        returns[k] = running
    return returns


def group_stats(returns: list[torch.Tensor], rows: list[int]) -> tuple[float, float]:
    """Mean and std of a group's turn returns with each episode weighing 1 (its turns 1/K each).

    The variance gets the n/(n-1) correction of `torch.std` over n episodes, so single-turn groups
    match verl's GRPO exactly; a group of one episode gets mean 0 and std 1, as in verl's GRPO (the
    estimators here never ask: such a group gets advantage 0, trainer/estimators/valid_groups.py).
    """
    n = len(rows)
    if n == 1:
        return 0.0, 1.0
    mean = sum(float(returns[i].mean()) for i in rows) / n
    var = sum(float(((returns[i] - mean) ** 2).mean()) for i in rows) / (n - 1)
    return mean, var**0.5


def algorithm_setting(config: Any, key: str, default: Any) -> Any:
    """`config[key]` of the `config=algorithm` verl hands an estimator; `default` when unset or None."""
    if config is None:
        return default
    value = config.get(key, default) if hasattr(config, "get") else getattr(config, key, default)
    return default if value is None else value


def rollout_turns(
    extra_fields: list[Any],
) -> tuple[list[list[str | None]], list[list[tuple[int, int]] | None]]:
    """Per row, the rollout's turn anchors and turn spans, read as `EpisodeResult`s.

    Returns:
        ``(anchors, spans)``; a row's spans are None when its fields store none (a padding row, a
        row of an older rollout or of another agent loop): `turn_index` reads that row's turns from
        the mask's runs.
    """
    anchors: list[list[str | None]] = []
    spans: list[list[tuple[int, int]] | None] = []
    for extra in extra_fields:
        result = EpisodeResult.from_extra_fields(extra)
        anchors.append(list(result.anchors))
        stored = isinstance(extra, dict) and EpisodeResult.TURN_SPANS in extra
        spans.append([(t.start, t.end) for t in result.turns] if stored else None)
    return anchors, spans


@contextlib.contextmanager
def known_turns(
    anchors: list[list[str | None]],
    spans: list[list[tuple[int, int]] | None],
    stats: dict[str, float] | None = None,
) -> Iterator[None]:
    """Within the block, the turn estimators read these rows' turn anchors and spans (`rollout_turns`);
    `turn_gigpo` reports its step-group sizes into `stats`."""
    tokens = (_TURN_ANCHORS.set(anchors), _TURN_SPANS.set(spans), _STEP_STATS.set(stats))
    try:
        yield
    finally:
        _TURN_ANCHORS.reset(tokens[0])
        _TURN_SPANS.reset(tokens[1])
        _STEP_STATS.reset(tokens[2])
