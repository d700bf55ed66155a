"""Turn-level credit: advantage estimators that see each turn's reward, registered in verl's registry.

verl's outcome estimators (GRPO, RLOO, ...) sum a row's token rewards into one episode return, so
every generated token of a multi-turn episode gets the same advantage. The estimators here read the
turn structure from what verl already hands every estimator (`compute_advantage` in
`verl/trainer/ppo/ray_trainer.py`, called by the v1 trainer's `_compute_advantage`, which fetches
`uid`, `response_mask` and `rm_scores` from TransferQueue and nothing else):

- a turn is a maximal run of generated tokens (`response_mask == 1`); the env/tool/user tokens
  between turns have mask 0 (rollout/episode.py). Under turngym's trainer the rollout's own turn
  spans (`EpisodeResult.turns`, rollout/episode_result.py) are handed over instead
  (`TurnAnchorsTrainerMixin`): a turn is then the generated tokens of its span. The two agree on
  every row the agent loop writes, since env tokens always follow a turn that is not the last; the
  spans stay exact where they would not (two turns with no token between them). Rewards are always
  read from `token_level_rewards`, which verl may have changed (a KL penalty in the reward), never
  from the spans;
- the rollout puts each turn's reward on that turn's last generated token of `rm_scores`
  (rollout/agent_loop.py `TurnRewardOutput`), so `token_level_rewards` holds per-turn rewards and
  its row sum is still the episode return that outcome estimators use.

`turn_grpo` (`algorithm=turn-grpo`): the discounted return-to-go of every turn,
``G[k] = sum_{j >= k} gamma^(j - k) r[j]`` with ``gamma = algorithm.gamma`` per turn, is normalised
with the mean and std of the GRPO group (same `uid`), each episode weighing 1 however many turns it
has, and placed on that turn's generated tokens (0 elsewhere). A group of single-turn episodes, or
``gamma = 1`` with only a final reward, gives exactly verl's GRPO advantages.

Both estimators keep trainer/estimators/valid_groups.py's rule: failed episodes and non-finite returns are left
out of the group statistics (and of GiGPO's step groups), and every row of a GRPO group with fewer
than two valid members gets advantage 0.

verl calls the estimator in the process that runs the trainer (turngym's task runner), so that
module imports this one; importing it twice is harmless (the registry accepts the same function).
"""

from __future__ import annotations

from collections import defaultdict
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import register_adv_est

from rollout.episode_result import EpisodeResult
from trainer.data.sample_objects import sample_objects
from trainer.estimators.valid_groups import grpo_over_valid, valid_grouping, valid_rows

TURN_GRPO = "turn_grpo"
EPSILON = 1e-6  # as verl's GRPO: a group whose returns are all equal gets advantage 0, not NaN

# Per-row turn spans for the advantage call under way, set by `TurnAnchorsTrainerMixin` (verl hands
# estimators tensors only); None: turns are read from the mask's runs.
_TURN_SPANS: ContextVar[list[list[tuple[int, int]] | None] | None] = ContextVar(
    "turngym_turn_spans", default=None
)


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


@register_adv_est(TURN_GRPO)
def compute_turn_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    gamma: float | None = None,
    norm_adv_by_std_in_grpo: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn-level GRPO: group-normalised discounted turn returns on each turn's tokens.

    Returns ``(advantages, returns)``, both (bs, response_length); `returns` holds the raw
    discounted return-to-go of each token's turn. `gamma` and `norm_adv_by_std_in_grpo` default to
    ``config.gamma`` (1.0) and ``config.norm_adv_by_std_in_grpo`` (true), the keys verl's trainer
    passes as `config=algorithm`.
    """
    gamma = float(algorithm_setting(config, "gamma", 1.0) if gamma is None else gamma)
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(algorithm_setting(config, "norm_adv_by_std_in_grpo", True))
    bs = token_level_rewards.shape[0]
    if index is None:
        index = np.arange(bs)
    with torch.no_grad():
        _, kept = valid_grouping(token_level_rewards, index)
        turns = turn_index(response_mask, _TURN_SPANS.get())
        returns = [discounted_returns(r, gamma) for r in turn_rewards(token_level_rewards, turns)]
        groups: dict[Any, list[int]] = defaultdict(list)
        for i in range(bs):
            if kept[i]:
                groups[index[i]].append(i)
        advantages = torch.zeros_like(token_level_rewards, dtype=torch.float32)
        token_returns = torch.zeros_like(token_level_rewards, dtype=torch.float32)
        for rows in groups.values():
            mean, std = group_stats(returns, rows)
            scale = std + EPSILON if norm_adv_by_std_in_grpo else 1.0
            for i in rows:
                generated = turns[i] >= 0
                if not generated.any():
                    continue
                turn_of_token = turns[i][generated]
                token_returns[i, generated] = returns[i][turn_of_token]
                advantages[i, generated] = (returns[i][turn_of_token] - mean) / scale
    return advantages, token_returns


TURN_GIGPO = "turn_gigpo"

# Per-row turn anchors for the advantage call under way, set by `TurnAnchorsTrainerMixin`: verl's
# `compute_advantage` passes registered estimators no non-tensor columns (ray_trainer.py ~250).
_TURN_ANCHORS: ContextVar[list[list[str]] | None] = ContextVar("turngym_turn_anchors", default=None)
# Where `turn_gigpo` reports its step-group sizes for the step's metrics (set by the same mixin).
_STEP_STATS: ContextVar[dict[str, float] | None] = ContextVar("turngym_step_stats", default=None)


def step_group_stats(groups: dict[Any, list[tuple[int, int]]]) -> dict[str, float]:
    """Mean step-group size and the share of turns (and of turns after the first) that have peers."""
    sizes = [len(members) for members in groups.values()]
    pairs = [(k, len(members)) for members in groups.values() for _, k in members]
    later = [size for k, size in pairs if k > 0]
    return {
        "turn_credit/step_group_size/mean": float(np.mean(sizes)) if sizes else 0.0,
        "turn_credit/grouped_turn_share": float(np.mean([size > 1 for _, size in pairs])) if pairs else 0.0,
        "turn_credit/grouped_later_turn_share": float(np.mean([size > 1 for size in later]))
        if later
        else 0.0,
    }


STEP_SCOPES = ("group", "batch")


def step_groups(
    index: np.ndarray, anchors: list[list[str]], turn_counts: list[int], scope: str = "group"
) -> dict[Any, list[tuple[int, int]]]:
    """(row, turn) pairs grouped by identical anchor state, within a GRPO group or across the batch.

    ``group`` is GiGPO's step grouping. ``batch`` also pools equal anchors of different GRPO groups:
    an anchor is the whole token history the policy acted on, so rows whose hidden env state differs
    (a different secret) but whose history is equal are the same state to the policy, and the mean
    over them is an action-independent baseline with more samples behind it.
    """
    groups: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for i, count in enumerate(turn_counts):
        row_anchors = anchors[i] if i < len(anchors) else []
        for k in range(count):
            # A turn without an anchor (older rollout, cut record) only groups with itself.
            key = (
                row_anchors[k]
                if k < len(row_anchors) and row_anchors[k] is not None
                else ("unanchored", i, k)
            )
            groups[(index[i], key) if scope == "group" else key].append((i, k))
    return groups


@register_adv_est(TURN_GIGPO)
def compute_turn_gigpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    turn_anchors: list[list[str]] | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GiGPO over turns: GRPO's episode advantage on every token plus ``step_weight`` times a step
    advantage, each turn's discounted return minus the mean over the group's turns with the same anchor.

    `turn_anchors[i][k]` names the state turn k of row i acted in (the rollout's hash of the token
    prefix); taken from `TurnAnchorsTrainerMixin` when not given. Settings: ``config.gamma``,
    ``config.norm_adv_by_std_in_grpo`` (episode part), ``config.turn_credit.step_weight`` (1.0) and
    ``config.turn_credit.step_norm`` (``mean`` as GiGPO's default ``mean_norm``, or ``mean_std``) and
    ``config.turn_credit.step_group`` (``group``: GiGPO's grouping within a GRPO group; ``batch``:
    equal states across the whole batch, see `step_groups`).
    """
    anchors = turn_anchors if turn_anchors is not None else _TURN_ANCHORS.get()
    bs = token_level_rewards.shape[0]
    if anchors is None or len(anchors) != bs:
        raise ValueError(
            f"{TURN_GIGPO} needs the rollout's turn anchors for all {bs} rows (got "
            f"{'none' if anchors is None else len(anchors)}); the trainer must be turngym's TurngymTrainer"
        )
    gamma = float(algorithm_setting(config, "gamma", 1.0))
    norm = bool(algorithm_setting(config, "norm_adv_by_std_in_grpo", True))
    extra = algorithm_setting(config, "turn_credit", {}) or {}
    step_weight = float(algorithm_setting(extra, "step_weight", 1.0))
    step_norm = str(algorithm_setting(extra, "step_norm", "mean"))
    if step_norm not in ("mean", "mean_std"):
        raise ValueError(f"algorithm.turn_credit.step_norm={step_norm!r}; valid choices: mean, mean_std")
    step_group = str(algorithm_setting(extra, "step_group", "group"))
    if step_group not in STEP_SCOPES:
        raise ValueError(
            f"algorithm.turn_credit.step_group={step_group!r}; valid choices: {', '.join(STEP_SCOPES)}"
        )
    if index is None:
        index = np.arange(bs)
    with torch.no_grad():
        turns = turn_index(response_mask, _TURN_SPANS.get())
        per_turn = turn_rewards(token_level_rewards, turns)
        returns = [discounted_returns(r, gamma) for r in per_turn]
        advantages = torch.zeros_like(token_level_rewards, dtype=torch.float32)
        # Episode part: verl's own GRPO on the episode returns, over each group's valid members.
        episode, _ = grpo_over_valid(token_level_rewards, response_mask, index, norm)
        _, kept = valid_grouping(token_level_rewards, index)
        valid = valid_rows(token_level_rewards)
        step_adv = [torch.zeros_like(g) for g in returns]
        # A row of a too-small GRPO group still serves as a baseline for equal states elsewhere (its
        # returns are real); a failed or non-finite row has no place in any step group.
        counts = [int((turns[i].max() + 1).item()) if valid[i] else 0 for i in range(bs)]
        groups = step_groups(index, anchors, counts, step_group)
        stats = _STEP_STATS.get()
        if stats is not None:
            stats.update(step_group_stats(groups))
        for members in groups.values():
            values = torch.stack([returns[i][k] for i, k in members])
            centred = values - values.mean()
            if step_norm == "mean_std" and len(members) > 1:
                centred = centred / (values.std() + EPSILON)
            for (i, k), a in zip(members, centred, strict=True):
                step_adv[i][k] = a
        for i in range(bs):
            generated = turns[i] >= 0
            if kept[i] and generated.any():
                advantages[i, generated] = step_weight * step_adv[i][turns[i][generated]]
        advantages = episode.to(torch.float32) + advantages
        token_returns = torch.zeros_like(advantages)
        for i in range(bs):
            generated = turns[i] >= 0
            if valid[i] and generated.any():
                token_returns[i, generated] = returns[i][turns[i][generated]]
    return advantages, token_returns


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


class TurnAnchorsTrainerMixin:
    """Mix into verl's v1 trainer: hands the rollout's turns to `turn_grpo` and `turn_gigpo`.

    verl's `_compute_advantage` fetches a fixed list of fields from TransferQueue; this reads the
    rows' `extra_fields` for the same keys (same row order) as `EpisodeResult`s and makes their turn
    spans (both estimators) and anchors (`turn_gigpo`) visible to the estimator for the duration of
    verl's own call; the step-group sizes go to the metrics.
    """

    def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
        if str(self.config.algorithm.adv_estimator) not in (TURN_GRPO, TURN_GIGPO):
            return super()._compute_advantage(batch, metrics)
        import transfer_queue as tq

        data = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"]
        )
        anchors, spans = rollout_turns(sample_objects(data.pop("extra_fields")))
        stats: dict[str, float] = {}
        token, stats_token = _TURN_ANCHORS.set(anchors), _STEP_STATS.set(stats)
        spans_token = _TURN_SPANS.set(spans)
        try:
            result = super()._compute_advantage(batch, metrics)
        finally:
            _TURN_ANCHORS.reset(token)
            _STEP_STATS.reset(stats_token)
            _TURN_SPANS.reset(spans_token)
        metrics.update(stats)
        return result
