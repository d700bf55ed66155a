"""A run's dataset files: built and checked in a scratch folder, moved into the run folder only once all is well.

``stage_datasets`` writes the training and validation rows (from ``env.*``, or from the user's own
files, see ``trainer.data.user_rows``) and, with a curriculum, the openings at every level, all into a
scratch folder; trainer.run then checks the prompt budget on them. ``install`` copies them to their
places under the run folder. A bad argument therefore leaves an existing run's files as they were.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from trainer.compose import ConfigError
from trainer.data.user_rows import check_buildable, check_disjoint, read_episodes, user_files

CURRICULUM_FILE = "curriculum_levels.parquet"


@dataclass
class StagedData:
    """Files written to a scratch folder, each with the place it goes under the run folder."""

    moves: dict[Path, Path] = field(default_factory=dict)
    # The user's own files the rows were read from, by data key.
    sources: dict[str, Path] = field(default_factory=dict)
    # The scratch folder (removed by ``install`` or ``discard``).
    staging: Path | None = None
    # ``run_identity`` as the command gave it, for the run record.
    identity: dict = field(default_factory=dict)

    def files(self) -> list[Path]:
        """The staged files, for checks that read them (the prompt budget)."""
        return list(self.moves)


def run_data_path(cfg: DictConfig, key: str) -> Path:
    """Where the run keeps a split's rows: ``data.<key>`` as configured, or ``<run>/data/`` for user rows."""
    if key in user_files(cfg):
        name = "train.parquet" if key == "train_files" else "val.parquet"
        return Path(str(cfg.turngym.output_dir)).expanduser().resolve() / "data" / name
    return Path(str(cfg.data[key])).expanduser().resolve()


def stage_datasets(cfg: DictConfig, entries: list[dict], staging: Path) -> StagedData:
    """Write every dataset file of the run into ``staging``; ConfigError on any bad row or setting."""
    staged = StagedData(sources=user_files(cfg), staging=staging)
    try:
        return _stage(cfg, entries, staged)
    except BaseException:
        discard(staged)
        raise


def _stage(cfg: DictConfig, entries: list[dict], staged: StagedData) -> StagedData:
    from trainer.data.datasets import episodes_with_prompts, for_validation, mixture_episodes, write_episodes

    staging = staged.staging
    for key in ("train_files", "val_files"):
        if cfg.data.get(key) is None:
            raise ConfigError(
                f"data.{key} is null: give a parquet file of your own rows, or leave it unset for rows from env.*"
            )
    episodes = {}
    for key in ("train_files", "val_files"):
        source = staged.sources.get(key)
        if source is None:
            continue
        if source in {run_data_path(cfg, "train_files"), run_data_path(cfg, "val_files")}:
            raise ConfigError(
                f"data.{key}={source}: trainer.run writes the run's own rows there; keep your file elsewhere"
            )
        # A row picks only client-safe options; the operator's env.kwargs (remote, isolation, tools, ...)
        # then apply to every row, over the row's own, as they apply to env.id.
        operator = OmegaConf.to_container(cfg.env.kwargs) or {}
        episodes[key] = [(e, s, {**k, **operator}) for e, s, k in read_episodes(source, key)]
        check_buildable(episodes[key], source, key)
    if len(episodes) == 2:
        check_disjoint(episodes["train_files"], episodes["val_files"])
    elif not episodes:
        _check_seed_ranges(cfg)

    for key, split in (("train_files", "train"), ("val_files", "val")):
        if key in episodes:
            rows = episodes_with_prompts(episodes[key], split)
        elif split == "train":
            rows = mixture_episodes(entries, int(cfg.env.train_episodes), int(cfg.env.seed_base), split)
        else:
            rows = mixture_episodes(entries, int(cfg.env.val_episodes), int(cfg.env.val_seed_base), split)
        if split == "val":
            rows = for_validation(rows, bool(cfg.turngym.get("val_greedy", False)))
        # Each row becomes verl's dict once, here (EpisodeRow.to_row).
        staged.moves[write_episodes(rows, staging / f"{split}.parquet")] = run_data_path(cfg, key)
    if len(episodes) == 1:
        _check_mixed_disjoint(staging)

    levels = _curriculum_openings(cfg, entries, staging / "train.parquet", staging / CURRICULUM_FILE)
    if levels is not None:
        staged.moves[levels] = run_data_path(cfg, "train_files").parent / CURRICULUM_FILE
    return staged


def _check_seed_ranges(cfg: DictConfig) -> None:
    start, n = int(cfg.env.seed_base), int(cfg.env.train_episodes)
    val_start, val_n = int(cfg.env.val_seed_base), int(cfg.env.val_episodes)
    if start < val_start < start + n or val_start <= start < val_start + val_n:
        raise ConfigError(
            f"train seeds [{start}, {start + n}) overlap validation seeds [{val_start}, {val_start + val_n}); "
            "move env.val_seed_base or env.seed_base"
        )


def _check_mixed_disjoint(staging: Path) -> None:
    """One split from the user, one generated: they still must not share an episode."""
    import pandas as pd

    from rollout.episode_row import EpisodeRow

    def episodes(path: Path) -> list[tuple[str, int, dict]]:
        rows = pd.read_parquet(path, columns=[EpisodeRow.EXTRA_INFO]).to_dict("records")
        return [(e.env_id, int(e.seed), dict(e.env_kwargs)) for e in map(EpisodeRow.from_row, rows)]

    check_disjoint(episodes(staging / "train.parquet"), episodes(staging / "val.parquet"))


def _curriculum_openings(cfg: DictConfig, entries: list[dict], train: Path, out: Path) -> Path | None:
    """With ``turngym.curriculum`` on, the training rows' openings at every level (for the prompt budget)."""
    # A harder level can open with a longer prompt (a bigger maze) than the dataset's difficulty. The
    # curriculum moves the envs of the env group (trainer/hooks/curriculum/schedule.py), so those are measured.
    from trainer.hooks.curriculum.rows import (
        curriculum_env_ids,
        env_ladders,
        write_ladder_openings,
        write_level_openings,
    )
    from trainer.hooks.curriculum.schedule import CurriculumConfig

    try:
        settings = CurriculumConfig.from_mapping(cfg.turngym.get("curriculum"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
    if not settings.enable:
        return None
    if settings.schedule == "pass_rate":
        return write_ladder_openings(train, out, env_ladders(entries))
    return write_level_openings(train, out, curriculum_env_ids(e["id"] for e in entries))


def install(staged: StagedData) -> None:
    """Copy the staged files to their places under the run folder (each replaced in one rename)."""
    for source, target in staged.moves.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    discard(staged)


def discard(staged: StagedData) -> None:
    """Remove the scratch folder."""
    if staged.staging is not None:
        shutil.rmtree(staged.staging, ignore_errors=True)
