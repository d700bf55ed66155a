"""Parquet datasets in verl's RLHFDataset layout, one row per episode (env id + seed), train/val seeds disjoint.

The row format (columns, ``env_kwargs`` encoding) is ``rollout.episode_row.EpisodeRow``, shared with
the agent loop that plays the rows. With ``val_greedy`` every validation seed is written twice: as is
(played with verl's ``val_kwargs``) and a greedy copy (``turngym_temperature: 0.0``) whose
``data_source`` is ``<env id>@greedy``, so one validation reports both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import AGENT_NAME, EpisodeRow

__all__ = [
    "AGENT_NAME",
    "assign_envs",
    "episode_rows",
    "episodes_with_prompts",
    "for_validation",
    "mixture_episodes",
    "opening_prompts",
    "rows_for_episodes",
    "validation_rows",
    "with_greedy_copies",
    "write_datasets",
    "write_episodes",
    "write_rows",
]


def assign_envs(entries: list[dict], n: int, seed: int) -> list[dict]:
    """Pick an env entry for each of n episodes, proportionally to the weights, reproducibly."""
    weights = np.array([e["weight"] for e in entries], dtype=float)
    counts = np.floor(weights / weights.sum() * n).astype(int)
    rng = np.random.default_rng(seed)
    for i in rng.choice(len(entries), size=n - counts.sum(), p=weights / weights.sum()):
        counts[i] += 1
    order = np.concatenate([np.full(c, i) for i, c in enumerate(counts)]) if n else np.array([], dtype=int)
    rng.shuffle(order)
    return [entries[i] for i in order]


def opening_prompts(episodes: Iterable[tuple[str, int, dict]]) -> list[list[dict[str, str]]]:
    """The opening conversation of each ``(env_id, seed, env_kwargs)``, reduced to role/content strings.

    The one place a row's prompt is rendered (the dataset rows and the curriculum's level openings).
    Each episode gets a fresh env, as in the agent loop, so the stored prompt is the one the episode
    opens with even for an env whose reset does not clear everything. Reusing one env per kind showed
    no clear gain (bench/dataset_build.py): the resets themselves are the cost.
    """
    import envs

    prompts = []
    for env_id, seed, kwargs in episodes:
        env = envs.make(env_id, **kwargs)
        try:
            messages, _ = env.reset(seed=seed)
        finally:
            env.close()
        prompts.append([{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages])
    return prompts


def mixture_episodes(entries: list[dict], n: int, seed_base: int, split: str) -> list[EpisodeRow]:
    """n episodes with seeds seed_base, seed_base+1, ...; envs drawn from the weighted mixture."""
    kinds = [EpisodeKind.from_entry(entry) for entry in assign_envs(entries, n, seed=seed_base)]
    episodes = [(kind.env_id, seed_base + index, dict(kind.kwargs)) for index, kind in enumerate(kinds)]
    return episodes_with_prompts(episodes, split)


def episode_rows(entries: list[dict], n: int, seed_base: int, split: str) -> list[dict[str, Any]]:
    """The rows of `mixture_episodes`."""
    return [episode.to_row() for episode in mixture_episodes(entries, n, seed_base, split)]


def episodes_with_prompts(episodes: list[tuple[str, int, dict]], split: str) -> list[EpisodeRow]:
    """One EpisodeRow per ``(env_id, seed, env_kwargs)``, in this order, each with its opening prompt."""
    import envs

    prompts = opening_prompts(episodes)
    return [
        EpisodeRow(
            env_id=env_id,
            seed=seed,
            env_kwargs=kwargs,
            prompt=prompt,
            ability=envs.spec(env_id).category,
            index=index,
            split=split,
        )
        for index, ((env_id, seed, kwargs), prompt) in enumerate(zip(episodes, prompts, strict=True))
    ]


def rows_for_episodes(episodes: list[tuple[str, int, dict]], split: str) -> list[dict[str, Any]]:
    """One row per ``(env_id, seed, env_kwargs)``, in this order (a user's own rows, or a mixture's)."""
    return [episode.to_row() for episode in episodes_with_prompts(episodes, split)]


def write_rows(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write dataset rows to a parquet file (its folder made when missing)."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


def write_episodes(episodes: list[EpisodeRow], path: str | Path) -> Path:
    """Write episodes as dataset rows (`EpisodeRow.to_row`, the one conversion) to a parquet file."""
    return write_rows([episode.to_row() for episode in episodes], path)


def for_validation(episodes: list[EpisodeRow], greedy: bool) -> list[EpisodeRow]:
    """Validation `episodes` with their sampling seeded by their env seed, plus greedy copies (played at
    temperature 0, reported under ``<env id>@greedy``) if `greedy`."""
    seeded = [replace(episode, sampling_seed=episode.seed) for episode in episodes]
    return seeded + [episode.greedy_copy() for episode in seeded] if greedy else seeded


def with_greedy_copies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` (sampled with verl's val_kwargs) followed by greedy copies under `<env id>@greedy`."""
    episodes = [EpisodeRow.from_row(row) for row in rows]
    return [e.to_row() for e in episodes] + [e.greedy_copy().to_row() for e in episodes]


def validation_rows(rows: list[dict[str, Any]], greedy: bool) -> list[dict[str, Any]]:
    """The rows of `for_validation`, for rows already written as dicts."""
    return [e.to_row() for e in for_validation([EpisodeRow.from_row(row) for row in rows], greedy)]


def write_datasets(
    entries: list[dict],
    train_path: str | Path,
    val_path: str | Path,
    train_episodes: int,
    val_episodes: int,
    seed_base: int = 0,
    val_seed_base: int = 1_000_000,
    val_greedy: bool = False,
) -> tuple[Path, Path]:
    """Write train and validation parquet files; their seed ranges must not overlap."""
    if (
        seed_base < val_seed_base < seed_base + train_episodes
        or val_seed_base <= seed_base < val_seed_base + val_episodes
    ):
        raise ValueError(
            f"train seeds [{seed_base}, {seed_base + train_episodes}) overlap validation seeds "
            f"[{val_seed_base}, {val_seed_base + val_episodes})"
        )
    out = []
    for path, n, base, split in (
        (train_path, train_episodes, seed_base, "train"),
        (val_path, val_episodes, val_seed_base, "val"),
    ):
        episodes = mixture_episodes(entries, n, base, split)
        if split == "val":
            episodes = for_validation(episodes, val_greedy)
        out.append(write_episodes(episodes, path))
    return out[0], out[1]
