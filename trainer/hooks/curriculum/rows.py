"""The curriculum's rows: which envs it moves, and the training rows' openings at every level.

The curriculum (``trainer.hooks.curriculum.schedule``) moves envs whose constructor takes ``difficulty`` with all
of easy, medium and hard. A harder level can open with a longer prompt (a bigger maze) than the
dataset's difficulty, and a prompt over budget trains on nothing, so trainer.run measures the prompt
budget on the rows' openings at every level too (``write_level_openings``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rollout.episode_row import EpisodeRow
from trainer.hooks.curriculum.schedule import LEVELS


def has_levels(env_id: str) -> bool:
    """True when the env's constructor takes ``difficulty`` with all of easy, medium and hard."""
    import envs

    try:
        cls = envs.spec(env_id).load()
    except Exception:  # noqa: BLE001 - unknown ids are reported by the config check
        return False
    declared = getattr(cls, "difficulties", None) or (getattr(cls, "reset_options", None) or {}).get(
        "difficulty"
    )
    return bool(declared) and all(level in declared for level in LEVELS)


def curriculum_env_ids(env_ids: Iterable[str]) -> list[str]:
    """The env ids (of a run's mixture) that have the three levels the curriculum moves through."""
    return sorted(env_id for env_id in set(env_ids) if has_levels(env_id))


def env_ladders(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each mixture env's difficulty ladder up to the difficulty its rows play (``difficulty_ladder``);
    envs with one level only (no knobs) are left out.

    Args:
        entries: the run's env mixture (``trainer.compose.env_entries``).

    Returns:
        env id -> kwargs per level, easiest first, ``{}`` (the game itself) last.
    """
    import envs

    ladders = {}
    for entry in entries:
        try:
            cls = envs.spec(entry["id"]).load()
        except Exception:  # noqa: BLE001 - unknown ids are reported by the config check
            continue
        make_ladder = getattr(cls, "difficulty_ladder", None)
        if make_ladder is None:
            continue
        ladder = make_ladder(dict(entry.get("kwargs") or {}).get("difficulty"))
        if len(ladder) > 1:
            ladders[str(entry["id"])] = [dict(level) for level in ladder]
    return ladders


def ladder_opening_rows(
    rows: Iterable[Mapping[str, Any]], ladders: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Copies of the training rows at every level of their env's ladder, with that level's opening prompt
    (a hint of wordle's or another maze size opens with another prompt length), for the prompt budget."""
    from trainer.data.datasets import opening_prompts

    copies = []
    for row in rows:
        episode = EpisodeRow.from_row(row)
        for level in ladders.get(episode.env_id, [])[:-1]:
            copies.append(replace(episode, env_kwargs={**episode.env_kwargs, **level}))
    prompts = opening_prompts((c.env_id, c.seed, dict(c.env_kwargs)) for c in copies)
    return [replace(c, prompt=p).to_row() for c, p in zip(copies, prompts, strict=True)]


def level_opening_rows(rows: Iterable[Mapping[str, Any]], env_ids: Iterable[str]) -> list[dict[str, Any]]:
    """Copies of the curriculum envs' rows at every other level, each with that level's opening prompt."""
    from trainer.data.datasets import opening_prompts

    managed = set(env_ids)
    copies = []
    for row in rows:
        episode = EpisodeRow.from_row(row)
        if episode.env_id not in managed:
            continue
        for level in LEVELS:
            if episode.env_kwargs.get("difficulty") != level:
                copies.append(replace(episode, env_kwargs={**episode.env_kwargs, "difficulty": level}))
    prompts = opening_prompts((c.env_id, c.seed, dict(c.env_kwargs)) for c in copies)
    return [replace(c, prompt=p).to_row() for c, p in zip(copies, prompts, strict=True)]


def write_level_openings(train_path: str | Path, out_path: str | Path, env_ids: Iterable[str]) -> Path:
    """Write ``level_opening_rows`` of the training rows to ``out_path`` (parquet) for the prompt budget."""
    import pandas as pd

    rows = pd.read_parquet(train_path).to_dict("records")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(level_opening_rows(rows, env_ids)).to_parquet(out_path)
    return out_path


def write_ladder_openings(
    train_path: str | Path,
    out_path: str | Path,
    ladders: Mapping[str, list[dict[str, Any]]],
    per_env: int = 8,
) -> Path:
    """Write ``ladder_opening_rows`` of the first `per_env` training rows of each env to ``out_path``.

    A level's opening differs from the game's by its settings, not by the seed (a maze's size, a
    wordle hint), so a few rows per env measure every level's prompt length.
    """
    import pandas as pd

    taken: dict[str, int] = {}
    rows = []
    for row in pd.read_parquet(train_path).to_dict("records"):
        env_id = EpisodeRow.from_row(row).env_id
        if env_id in ladders and taken.get(env_id, 0) < per_env:
            taken[env_id] = taken.get(env_id, 0) + 1
            rows.append(row)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(ladder_opening_rows(rows, ladders)).to_parquet(out_path)
    return out_path
