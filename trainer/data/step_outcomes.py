"""What each training episode of a step was and how it ended, read back from the step's TransferQueue
batch: the schedules that follow training success (the curricula, the adaptive mixture) read it here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rollout.episode_result import EpisodeResult
from rollout.episode_row import EpisodeRow

#: The row column the pass-rate curriculum writes with the level it picked (-1: none).
LEVEL_COLUMN = "turngym_level"


@dataclass(frozen=True)
class StepOutcome:
    """One finished, not failed, training episode of a step."""

    env_id: str
    uid: Any
    success: bool
    score: float
    level: int | None = None
    difficulty: str | None = None


def flat_group_rates(outcomes: Sequence[StepOutcome]) -> dict[str, float | None]:
    """Per env, the share of its GRPO groups (same uid, 2+ episodes) whose scores are all equal.

    Returns:
        env id -> share, or None for an env with no group of two.

    >>> a = [StepOutcome("g", 1, True, 1.0), StepOutcome("g", 1, True, 1.0)]
    >>> b = [StepOutcome("g", 2, True, 1.0), StepOutcome("g", 2, False, 0.0), StepOutcome("m", 3, False, 0.0)]
    >>> flat_group_rates(a + b)
    {'g': 0.5, 'm': None}
    """
    groups: dict[tuple[str, Any], list[float]] = {}
    for o in outcomes:
        groups.setdefault((o.env_id, o.uid), []).append(o.score)
    counted: dict[str, list[bool]] = {}
    for (env_id, _), scores in groups.items():
        counted.setdefault(env_id, [])
        if len(scores) >= 2:
            counted[env_id].append(max(scores) - min(scores) < 1e-9)
    return {env_id: (sum(flags) / len(flags) if flags else None) for env_id, flags in counted.items()}


def pass_rates(outcomes: Sequence[StepOutcome]) -> dict[str, float]:
    """Per env, the share of its episodes that succeeded.

    >>> pass_rates([StepOutcome("g", 1, True, 1.0), StepOutcome("g", 2, False, 0.0)])
    {'g': 0.5}
    """
    won: dict[str, list[bool]] = {}
    for o in outcomes:
        won.setdefault(o.env_id, []).append(o.success)
    return {env_id: sum(flags) / len(flags) for env_id, flags in won.items()}


def read_step_outcomes(batch: Any, success_threshold: float) -> list[StepOutcome]:
    """The step's real episodes (no padding, no failed episode) from its TransferQueue batch.

    Args:
        batch: verl's ``KVBatchMeta`` of the step (``keys``, ``partition_id``, ``tags``).
        success_threshold: the total reward that counts as a success where the env reports no flag.

    Returns:
        One StepOutcome per real episode, in the batch's order.
    """
    import numpy as np
    import transfer_queue as tq

    from trainer.data.batch_field import batch_field
    from trainer.data.sample_objects import sample_objects
    from trainer.report.progress import episode_successes

    rewards = batch_field(tq, batch, "rm_scores")
    extra = batch_field(tq, batch, EpisodeRow.EXTRA_INFO)
    if rewards is None or extra is None:
        return []
    scores = np.array([float(t.sum()) for t in rewards.unbind(0)])
    infos = sample_objects(extra)
    fields_value = batch_field(tq, batch, "extra_fields")
    fields = sample_objects(fields_value) if fields_value is not None else [None] * len(scores)
    uid_value = batch_field(tq, batch, "uid")
    uids = sample_objects(uid_value) if uid_value is not None else list(range(len(scores)))
    level_value = batch_field(tq, batch, LEVEL_COLUMN)
    levels = sample_objects(level_value) if level_value is not None else [None] * len(scores)
    difficulty_value = batch_field(tq, batch, EpisodeRow.DIFFICULTY)
    difficulties = sample_objects(difficulty_value) if difficulty_value is not None else [None] * len(scores)
    successes = episode_successes(fields, scores, success_threshold)
    out = []
    for i, tag in enumerate(batch.tags):
        if tag.get("is_padding", False) or EpisodeResult.from_extra_fields(fields[i]).failed:
            continue
        level = levels[i]
        out.append(
            StepOutcome(
                env_id=EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: infos[i]}).env_id,
                uid=uids[i],
                success=bool(successes[i]),
                score=float(scores[i]),
                level=None if level is None or int(level) < 0 else int(level),
                difficulty=str(difficulties[i] or "") or None,
            )
        )
    return out
