"""Positive GRPO: verl's GRPO advantages with the negative ones scaled down (by default dropped).

An advantage estimator registered in verl as ``positive_grpo`` (trainer/estimators/registry.py;
`algorithm=positive-grpo`).
With ``algorithm.negative_advantage_scale = 0`` only episodes that beat their GRPO group's mean
are pushed up, weighted by GRPO's normalised advantage, through PPO's clipped ratio: the RAFT++ of
Xiong et al., "A Minimalist Approach to LLM Reasoning: from Rejection Sampling to Reinforce"
(arXiv:2504.11343), who found that training on positively rewarded samples alone keeps up with
GRPO and PPO. ``1`` is verl's GRPO exactly.

Why turngym has it: on the embedded 1M-parameter model a negative advantage on a sampled wrong guess
moves probability to whatever the tiny model ranks next, newlines and babble included, and held-out
success fell in most GRPO runs from the earlier plain 32-step warm start (docs/trainer.md, "Where the
limit is"). Dropping the negatives removes that push; it did not make those runs learn reliably, so
the default stays `grpo`. A large model, whose next-best tokens are sensible, is usually better served
by plain GRPO.

The GRPO part keeps trainer/estimators/valid_groups.py's rule: failed episodes and non-finite returns are left
out of the group statistics, and a group with fewer than two valid members gets advantage 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainer.estimators.turns import algorithm_setting
from trainer.estimators.valid_groups import grpo_over_valid

POSITIVE_GRPO = "positive_grpo"
NEGATIVE_SCALE_KEY = "negative_advantage_scale"


def is_negative_scale(value: Any) -> bool:
    """Whether `value` can be `negative_advantage_scale`: a number (not a bool) in [0, 1]."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0


def scale_negative_advantages(advantages: torch.Tensor, scale: float) -> torch.Tensor:
    """`advantages` with every negative entry multiplied by `scale` (in [0, 1]); positives unchanged."""
    if not is_negative_scale(scale):
        raise ValueError(f"algorithm.{NEGATIVE_SCALE_KEY} must be in [0, 1], got {scale!r}")
    return torch.where(advantages < 0, advantages * scale, advantages)


def compute_positive_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    negative_advantage_scale: float | None = None,
    norm_adv_by_std_in_grpo: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO ``(advantages, returns)`` over each group's valid members, negatives scaled by
    `negative_advantage_scale`.

    The two settings default to ``config.negative_advantage_scale`` (0.0) and
    ``config.norm_adv_by_std_in_grpo`` (true), read from the `config=algorithm` verl passes.
    """
    scale = float(
        algorithm_setting(config, NEGATIVE_SCALE_KEY, 0.0)
        if negative_advantage_scale is None
        else negative_advantage_scale
    )
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(algorithm_setting(config, "norm_adv_by_std_in_grpo", True))
    if index is None:
        index = np.arange(token_level_rewards.shape[0])
    advantages, returns = grpo_over_valid(token_level_rewards, response_mask, index, norm_adv_by_std_in_grpo)
    return scale_negative_advantages(advantages, scale), returns
