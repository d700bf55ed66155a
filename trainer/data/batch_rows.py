"""The episodes of a training batch before it reaches the rollout, read and written back as dataset rows.

The schedules that choose what a training row plays (the adaptive mixture's env, the pass-rate
curriculum's level) change a row's ``extra_info`` (env id, env kwargs) between verl's dataloader and the
rollout, the way the row would have been written had the dataset been drawn with them; the agent loop
reads the row as it arrives (``rollout.episode_row.EpisodeRow.from_row``) and knows nothing of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rollout.episode_row import EpisodeRow, encode_kwargs


def batch_extra_infos(batch: Any) -> list[dict[str, Any]]:
    """Each row's ``extra_info`` of a verl TensorDict batch, as plain dicts (copies)."""
    from verl.utils import tensordict_utils as tu

    out = []
    for extra in tu.get(batch, EpisodeRow.EXTRA_INFO):
        out.append(
            dict(extra)
            if isinstance(extra, Mapping)
            else dict(EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: extra}).to_row()[EpisodeRow.EXTRA_INFO])
        )
    return out


def with_episode(extra: Mapping[str, Any], env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A row's ``extra_info`` playing `env_id` with `env_kwargs` (seed, index and split kept).

    >>> with_episode({"env_id": "a-v0", "seed": 3, "env_kwargs": "{}", "index": 3, "split": "train"}, "b-v0", {"size": 2})
    {'env_id': 'b-v0', 'seed': 3, 'env_kwargs': '{"size": 2}', 'index': 3, 'split': 'train'}
    """
    return {**extra, "env_id": env_id, "env_kwargs": encode_kwargs(env_kwargs)}


def write_extra_infos(batch: Any, infos: Sequence[Mapping[str, Any]]) -> None:
    """Put the rows' ``extra_info`` back, and their ``data_source`` (the env id) where the batch has one."""
    from verl.utils import tensordict_utils as tu

    tu.assign_non_tensor_stack(batch, EpisodeRow.EXTRA_INFO, [dict(i) for i in infos])
    if EpisodeRow.DATA_SOURCE in batch.keys():  # noqa: SIM118 - a TensorDict refuses `in` on itself
        tu.assign_non_tensor_stack(batch, EpisodeRow.DATA_SOURCE, [str(i["env_id"]) for i in infos])
