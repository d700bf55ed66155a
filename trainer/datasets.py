"""Parquet datasets in verl's RLHFDataset layout, one row per episode (env id + seed), train/val seeds disjoint.

Row layout (read by the turngym agent loop, see docs/rollout.md):

    data_source   env id (verl groups validation metrics by it)
    prompt        the env's opening messages for that seed ([{role, content}], for length filters/logs)
    ability       the env's category
    reward_model  {"style": "env", "ground_truth": ""}  (rewards come from the env, not a reward fn)
    extra_info    {"env_id", "seed", "env_kwargs", "index", "split"}; env_kwargs is a JSON object string
    agent_name    "turngym"

With ``val_greedy`` every validation seed is written twice: as above (played with verl's
``val_kwargs``) and a copy with ``turngym_temperature: 0.0`` (greedy, read by the agent loop) whose
``data_source`` is ``<env id>@greedy``, so one validation reports both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

AGENT_NAME = "turngym"
# Column the agent loop reads as a per-row sampling temperature (rollout/agent_loop.py TEMPERATURE_KEY).
TEMPERATURE_COLUMN = "turngym_temperature"
GREEDY_SUFFIX = "@greedy"
# Column the agent loop reads as the episode's sampling seed (rollout/agent_loop.py SAMPLING_SEED_KEY):
# validation rows carry their env seed, so sampled validation of the same weights is the same episodes.
SAMPLING_SEED_COLUMN = "turngym_sampling_seed"


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


def opening_messages(env_id: str, env_kwargs: dict, seed: int) -> list[dict[str, str]]:
    """The conversation an episode starts from, reduced to role/content strings."""
    import envs

    env = envs.make(env_id, **env_kwargs)
    try:
        messages, _ = env.reset(seed=seed)
    finally:
        env.close()
    return [{"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages]


def episode_rows(entries: list[dict], n: int, seed_base: int, split: str) -> list[dict[str, Any]]:
    """n dataset rows with seeds seed_base, seed_base+1, ...; envs drawn from the weighted mixture."""
    episodes = [
        (entry["id"], seed_base + index, dict(entry.get("kwargs") or {}))
        for index, entry in enumerate(assign_envs(entries, n, seed=seed_base))
    ]
    return rows_for_episodes(episodes, split)


def rows_for_episodes(episodes: list[tuple[str, int, dict]], split: str) -> list[dict[str, Any]]:
    """One row per ``(env_id, seed, env_kwargs)``, in this order (a user's own rows, or a mixture's)."""
    import envs

    rows = []
    for index, (env_id, seed, kwargs) in enumerate(episodes):
        rows.append(
            {
                "data_source": env_id,
                "prompt": opening_messages(env_id, kwargs, seed),
                "ability": envs.spec(env_id).category,
                "reward_model": {"style": "env", "ground_truth": ""},
                "extra_info": {
                    "env_id": env_id,
                    "seed": seed,
                    "env_kwargs": json.dumps(kwargs, sort_keys=True),
                    "index": index,
                    "split": split,
                },
                "agent_name": AGENT_NAME,
            }
        )
    return rows


def write_rows(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write dataset rows to a parquet file (its folder made when missing)."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


def with_greedy_copies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` (sampled with verl's val_kwargs) followed by greedy copies under `<env id>@greedy`."""
    greedy = [
        {**row, "data_source": row["data_source"] + GREEDY_SUFFIX, TEMPERATURE_COLUMN: 0.0} for row in rows
    ]
    return [{**row, TEMPERATURE_COLUMN: None} for row in rows] + greedy


def validation_rows(rows: list[dict[str, Any]], greedy: bool) -> list[dict[str, Any]]:
    """Validation `rows` with their sampling seeded by their env seed, plus greedy copies if `greedy`."""
    seeded = [{**row, SAMPLING_SEED_COLUMN: row["extra_info"]["seed"]} for row in rows]
    return with_greedy_copies(seeded) if greedy else seeded


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
        rows = episode_rows(entries, n, base, split)
        if split == "val":
            rows = validation_rows(rows, val_greedy)
        out.append(write_rows(rows, path))
    return out[0], out[1]
