"""GiGPO over turns, registered as ``turn_gigpo`` (trainer/estimators/registry.py; after verl-agent's GiGPO).

GRPO's episode advantage on every token plus a step advantage per turn: the turn's discounted return
minus the mean over the turns that acted in the same state (the rollout's turn anchors, handed over by
`AdvantageInputsTrainerMixin`, trainer/hooks/advantage_inputs.py). It keeps
trainer/estimators/valid_groups.py's rule: failed episodes and non-finite returns are left out of
the group statistics and of the step groups. The turns are those of trainer/estimators/turns.py.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch

from trainer.estimators.turns import (
    _STEP_STATS,
    _TURN_ANCHORS,
    _TURN_SPANS,
    EPSILON,
    algorithm_setting,
    discounted_returns,
    turn_index,
    turn_rewards,
)
from trainer.estimators.valid_groups import grpo_over_valid, valid_grouping, valid_rows

TURN_GIGPO = "turn_gigpo"


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
