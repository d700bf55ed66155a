"""Group statistics over valid members: which episodes of a GRPO group count for its mean and std.

The rule, for every group-relative estimator turngym runs (``grpo``, ``turn_grpo``, ``turn_gigpo``,
``positive_grpo``):

- a failed episode (the rollout's failed flag, `EpisodeResult.failed`: it enters the batch as a masked-out
  placeholder with score 0, rollout/agent_loop.py) and an episode whose return is not finite are left
  out of their group's mean and std, and get advantage 0;
- a group with fewer than two valid members gets advantage 0 on every row: one sample has nothing to
  be compared with;
- the counts go into the step's metrics (``GROUP_METRICS``).

What verl 0.9.1 does itself (``compute_grpo_outcome_advantage`` in ``trainer/ppo/core_algos.py``): it
groups every row by ``uid`` and knows nothing of failures, so a placeholder's score 0 enters its
group's mean and std and pulls the other members' advantages (three wins and one failure give the
wins +0.5 each instead of 0); a group of one gets mean 0 and std 1, i.e. its raw score as advantage;
one non-finite score makes every advantage of its group NaN. verl's ``compute_advantage``
(``trainer/ppo/ray_trainer.py`` ~235) calls that function for the name ``grpo`` directly, without its
registry, so turngym's trainer runs ``grpo`` as the registered ``grpo_valid`` (trainer/estimators/grpo_valid.py):
verl's own GRPO over an index in which every invalid row is a group of its own, with the rule's zeros
applied afterwards. No part of verl's estimator is copied.

The trainer knows which rows failed from the rows' ``extra_fields``; estimators receive only tensors
and ``uid`` from verl, so ``AdvantageInputsTrainerMixin`` (trainer/hooks/advantage_inputs.py) hands the flags over for the duration of verl's
call (``known_failures``). Called without them (a test, another trainer), no row counts as failed and
only non-finite returns are left out.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import get_adv_estimator_fn

from rollout.episode_result import EpisodeResult

FAILED_LEFT_OUT = "turngym/groups/failed_left_out"
NONFINITE_LEFT_OUT = "turngym/groups/nonfinite_left_out"
UNDER_TWO_VALID = "turngym/groups/under_two_valid"
GROUPS = "turngym/groups/count"
GROUP_METRICS = (FAILED_LEFT_OUT, NONFINITE_LEFT_OUT, UNDER_TWO_VALID, GROUPS)

_FAILED: ContextVar[np.ndarray | None] = ContextVar("turngym_failed_rows", default=None)
_COUNTS: ContextVar[dict[str, float] | None] = ContextVar("turngym_group_counts", default=None)


@contextlib.contextmanager
def known_failures(failed: Sequence[bool], counts: dict[str, float] | None = None) -> Iterator[None]:
    """Within the block, estimators treat row i as failed when ``failed[i]``; counts go into `counts`."""
    token, counts_token = _FAILED.set(np.asarray(failed, dtype=bool)), _COUNTS.set(counts)
    try:
        yield
    finally:
        _FAILED.reset(token)
        _COUNTS.reset(counts_token)


def failed_flags(extra_fields: Sequence[dict[str, Any] | None]) -> np.ndarray:
    """Per row, the rollout's failed flag (`EpisodeResult.failed`; False for a row without one)."""
    return np.array([EpisodeResult.from_extra_fields(f).failed for f in extra_fields], dtype=bool)


def valid_rows(token_level_rewards: torch.Tensor, failed: Sequence[bool] | None = None) -> np.ndarray:
    """Per row: counts in its group's statistics (not failed, finite return).

    `failed` defaults to the flags `known_failures` set (none when unset).
    """
    bs = token_level_rewards.shape[0]
    if failed is None:
        failed = _FAILED.get()
    failed = np.zeros(bs, dtype=bool) if failed is None else np.asarray(failed, dtype=bool)
    if len(failed) != bs:
        raise ValueError(f"failure flags for {len(failed)} rows, the batch has {bs}; pass one per row")
    finite = torch.isfinite(token_level_rewards.detach().sum(dim=-1)).cpu().numpy()
    return finite & ~failed


def regroup(index: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """The index with every invalid row in a group of its own; which rows keep an advantage; counts.

    Returns ``(index, kept, counts)``: ``kept[i]`` is False for an invalid row and for every row of a
    group with fewer than two valid members; ``counts`` are the ``GROUP_METRICS`` of this batch
    (``FAILED_LEFT_OUT`` counts invalid rows with a finite return, i.e. the flagged failures).
    """
    members: dict[Any, list[int]] = defaultdict(list)
    for i, key in enumerate(index):
        members[key].append(i)
    new_index = np.empty(len(index), dtype=object)
    kept = np.zeros(len(index), dtype=bool)
    too_small = 0
    for key, rows in members.items():
        good = [i for i in rows if valid[i]]
        if len(good) < 2:
            too_small += 1
        for i in rows:
            new_index[i] = key if valid[i] else ("turngym_left_out", i)
            kept[i] = bool(valid[i]) and len(good) >= 2
    return new_index, kept, {UNDER_TWO_VALID: float(too_small), GROUPS: float(len(members))}


def valid_grouping(
    token_level_rewards: torch.Tensor, index: np.ndarray, failed: Sequence[bool] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`regroup` of the batch's valid rows; adds the counts to the ones `known_failures` collects."""
    valid = valid_rows(token_level_rewards, failed)
    new_index, kept, counts = regroup(index, valid)
    finite = torch.isfinite(token_level_rewards.detach().sum(dim=-1)).cpu().numpy()
    counts[NONFINITE_LEFT_OUT] = float((~finite).sum())
    counts[FAILED_LEFT_OUT] = float((finite & ~valid).sum())
    collected = _COUNTS.get()
    if collected is not None:
        collected.update(counts)
    return new_index, kept


def grpo_over_valid(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray,
    norm_adv_by_std_in_grpo: bool = True,
    failed: Sequence[bool] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO ``(advantages, returns)`` under the rule: group statistics over valid members only."""
    new_index, kept = valid_grouping(token_level_rewards, index, failed)
    rewards = torch.nan_to_num(token_level_rewards, nan=0.0, posinf=0.0, neginf=0.0)
    advantages, returns = get_adv_estimator_fn("grpo")(
        token_level_rewards=rewards,
        response_mask=response_mask,
        index=new_index,
        norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
    )
    keep = torch.as_tensor(kept, device=advantages.device).unsqueeze(-1)
    return torch.where(keep, advantages, 0.0), torch.where(keep, returns, 0.0)
