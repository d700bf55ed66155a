"""Turn-level GRPO, registered as ``turn_grpo`` (trainer/estimators/registry.py).

`turn_grpo` (`algorithm=turn-grpo`): the discounted return-to-go of every turn,
``G[k] = sum_{j >= k} gamma^(j - k) r[j]`` with ``gamma = algorithm.gamma`` per turn, is normalised
with the mean and std of the GRPO group (same `uid`), each episode weighing 1 however many turns it
has, and placed on that turn's generated tokens (0 elsewhere). A group of single-turn episodes, or
``gamma = 1`` with only a final reward, gives exactly verl's GRPO advantages.

It keeps trainer/estimators/valid_groups.py's rule: failed episodes and non-finite returns are left
out of the group statistics, and every row of a GRPO group with fewer than two valid members gets
advantage 0. The turns are those of trainer/estimators/turns.py.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch

from trainer.estimators.turns import (
    _TURN_SPANS,
    EPSILON,
    algorithm_setting,
    discounted_returns,
    group_stats,
    turn_index,
    turn_rewards,
)
from trainer.estimators.valid_groups import valid_grouping

TURN_GRPO = "turn_grpo"


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
