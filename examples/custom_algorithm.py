"""A custom advantage estimator and policy loss, registered in verl's registries and trained with:

    python -m trainer.run env=text-game turngym.import_modules=[examples.custom_algorithm] \\
        algorithm.adv_estimator=mean_baseline actor_rollout_ref.actor.policy_loss.loss_mode=clipped_mean

`turngym.import_modules` imports this module in the launching process (where trainer.run checks the
names against verl's registries before Ray starts: a misspelled name is refused there, listing the
registered ones) and in every verl worker (through verl's external-module hook), so the registration
happens wherever verl looks the names up.

turngym's own estimators are built in the same shape, one per module in trainer/estimators/, and
registered by one call (trainer/estimators/registry.py).
"""

from __future__ import annotations

from collections import defaultdict

import torch
from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla, register_adv_est, register_policy_loss

ESTIMATOR = "mean_baseline"
LOSS = "clipped_mean"


@register_adv_est(ESTIMATOR)
def compute_mean_baseline_advantage(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index, **kwargs
) -> tuple[torch.Tensor, torch.Tensor]:
    """Episode return minus the mean return of its group (same ``uid``), unnormalised, on every token."""
    returns = token_level_rewards.sum(dim=-1)
    groups: dict[object, list[int]] = defaultdict(list)
    for row, uid in enumerate(index):
        groups[uid].append(row)
    baseline = torch.zeros_like(returns)
    for rows in groups.values():
        baseline[rows] = returns[rows].mean()
    advantages = (returns - baseline).unsqueeze(-1) * response_mask
    return advantages, advantages


@register_policy_loss(LOSS)
def compute_clipped_mean_loss(
    old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", **kw
):
    """PPO's clipped objective, averaged per sequence (each episode weighs the same however long)."""
    return compute_policy_loss_vanilla(
        old_log_prob, log_prob, advantages, response_mask, "seq-mean-token-mean", **kw
    )
