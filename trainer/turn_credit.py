"""Turn-level credit: advantage estimators that see each turn's reward, registered in verl's registry.

verl's outcome estimators (GRPO, RLOO, ...) sum a row's token rewards into one episode return, so
every generated token of a multi-turn episode gets the same advantage. The estimators here read the
turn structure from what verl already hands every estimator (`compute_advantage` in
`verl/trainer/ppo/ray_trainer.py`, called by the v1 trainer's `_compute_advantage`, which fetches
`uid`, `response_mask` and `rm_scores` from TransferQueue and nothing else):

- a turn is a maximal run of generated tokens (`response_mask == 1`); the env/tool/user tokens
  between turns have mask 0 (rollout/episode.py);
- the rollout puts each turn's reward on that turn's last generated token of `rm_scores`
  (rollout/agent_loop.py `TurnRewardOutput`), so `token_level_rewards` holds per-turn rewards and
  its row sum is still the episode return that outcome estimators use.

`turn_grpo` (`algorithm=turn-grpo`): the discounted return-to-go of every turn,
``G[k] = sum_{j >= k} gamma^(j - k) r[j]`` with ``gamma = algorithm.gamma`` per turn, is normalised
with the mean and std of the GRPO group (same `uid`), each episode weighing 1 however many turns it
has, and placed on that turn's generated tokens (0 elsewhere). A group of single-turn episodes, or
``gamma = 1`` with only a final reward, gives exactly verl's GRPO advantages.

verl calls the estimator in the process that runs the trainer (turngym's task runner), so that
module imports this one; importing it twice is harmless (the registry accepts the same function).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import register_adv_est

TURN_GRPO = "turn_grpo"
EPSILON = 1e-6  # as verl's GRPO: a group whose returns are all equal gets advantage 0, not NaN


def turn_index(response_mask: torch.Tensor) -> torch.Tensor:
    """Turn number of every generated token (runs of mask 1 count 0, 1, ...); -1 on mask-0 tokens."""
    mask = response_mask.bool()
    starts = mask.clone()
    starts[:, 1:] &= ~mask[:, :-1]
    index = starts.long().cumsum(dim=-1) - 1
    return torch.where(mask, index, torch.full_like(index, -1))


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
    match verl's GRPO exactly; a group of one episode gets mean 0 and std 1, as in GRPO.
    """
    n = len(rows)
    if n == 1:
        return 0.0, 1.0
    mean = sum(float(returns[i].mean()) for i in rows) / n
    var = sum(float(((returns[i] - mean) ** 2).mean()) for i in rows) / (n - 1)
    return mean, var**0.5


def _setting(config: Any, key: str, default: Any) -> Any:
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
    gamma = float(_setting(config, "gamma", 1.0) if gamma is None else gamma)
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(_setting(config, "norm_adv_by_std_in_grpo", True))
    bs = token_level_rewards.shape[0]
    if index is None:
        index = np.arange(bs)
    with torch.no_grad():
        turns = turn_index(response_mask)
        returns = [discounted_returns(r, gamma) for r in turn_rewards(token_level_rewards, turns)]
        groups: dict[Any, list[int]] = defaultdict(list)
        for i in range(bs):
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
