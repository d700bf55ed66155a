"""GRPO over each group's valid members, registered as ``grpo_valid`` (trainer/estimators/registry.py).

verl's ``compute_advantage`` calls its own GRPO for the name ``grpo`` without the registry, so
turngym's trainer runs ``grpo`` under this name (``ESTIMATOR_FOR``, applied by
trainer/hooks/advantage_inputs.py). The rule is trainer/estimators/valid_groups.py's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainer.estimators.valid_groups import grpo_over_valid

VALID_GRPO = "grpo_valid"
# verl's name -> the registered estimator turngym's trainer runs under it.
ESTIMATOR_FOR = {"grpo": VALID_GRPO}


def compute_valid_grpo_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    config: Any = None,
    norm_adv_by_std_in_grpo: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO with failed and non-finite members left out of group statistics (the module's rule).

    ``norm_adv_by_std_in_grpo`` defaults to ``config.norm_adv_by_std_in_grpo`` (true).
    """
    if norm_adv_by_std_in_grpo is None:
        value = config.get("norm_adv_by_std_in_grpo", True) if config is not None else True
        norm_adv_by_std_in_grpo = True if value is None else bool(value)
    if index is None:
        index = np.arange(token_level_rewards.shape[0])
    return grpo_over_valid(token_level_rewards, response_mask, index, norm_adv_by_std_in_grpo)
