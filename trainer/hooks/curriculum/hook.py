"""The curriculum's hook into verl's v1 trainer: a difficulty per training row, the update after each
step, the state in each checkpoint folder.

verl 0.9.1 has no public hook for per-row episode settings (its ``data.sampler`` hook was dropped), so
this overrides methods of verl's ``PPOTrainer``: ``_next_train_batch`` (every training prompt the
trainer sends to the rollout passes through it; validation does not), ``step`` (runs before the
checkpoint of the same step is saved), ``_save_checkpoint`` and ``_load_checkpoint``. The schedule it
drives is ``trainer.hooks.curriculum.schedule`` (``schedule: frontier``), whose pick reaches the agent loop in the
row's ``turngym_difficulty`` column (``rollout.episode_row.EpisodeRow``), or
``trainer.hooks.curriculum.pass_rate`` (``schedule: pass_rate``), whose level's kwargs are added to the row's
``env_kwargs`` (``trainer.data.batch_rows``) with the level in a ``turngym_level`` column for the metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rollout.episode_result import EpisodeResult
from rollout.episode_row import EpisodeRow
from trainer.data.step_outcomes import LEVEL_COLUMN
from trainer.hooks.curriculum.pass_rate import PassRateConfig, PassRateCurriculum
from trainer.hooks.curriculum.rows import curriculum_env_ids, env_ladders
from trainer.hooks.curriculum.schedule import LEVELS, STATE_FILE, Curriculum, CurriculumConfig


class CurriculumTrainerMixin:
    """Curriculum hooks for verl's v1 ``PPOTrainer`` (mix in before it); see the module docstring."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self.curriculum: Curriculum | None = None
        self.pass_rate_curriculum: PassRateCurriculum | None = None
        settings = CurriculumConfig.from_mapping(config.turngym.get("curriculum"))
        if settings.enable and settings.schedule == "pass_rate":
            from trainer.compose import env_entries

            ladders = env_ladders(env_entries(config))
            self.pass_rate_curriculum = PassRateCurriculum(
                PassRateConfig.from_mapping(settings.pass_rate), ladders
            )
            shown = ", ".join(f"{e} ({len(ladder)} levels)" for e, ladder in ladders.items())
            print(
                f"[turngym] curriculum by pass rate over {shown or 'no env (none has a ladder)'}", flush=True
            )
        elif settings.enable:
            from trainer.compose import env_entries

            env_ids = curriculum_env_ids(entry["id"] for entry in env_entries(config))
            self.curriculum = Curriculum(settings, env_ids)
            print(f"[turngym] curriculum over {', '.join(env_ids) or 'no env (none has levels)'}", flush=True)

    def _next_train_batch(self, num_prompts: int | None = None) -> Any:
        batch = super()._next_train_batch(num_prompts)
        if self.curriculum is not None:
            from verl.utils import tensordict_utils as tu

            episodes = [
                EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: extra}) for extra in tu.get(batch, "extra_info")
            ]
            picks = [self.curriculum.difficulty(e.env_id, int(e.seed or 0)) or "" for e in episodes]
            tu.assign_non_tensor_stack(batch, EpisodeRow.DIFFICULTY, picks)
        if self.pass_rate_curriculum is not None:
            self._pick_levels(batch)
        return batch

    def _pick_levels(self, batch: Any) -> None:
        """Add each row's ladder level's kwargs to its env_kwargs; the level goes in ``turngym_level``."""
        from verl.utils import tensordict_utils as tu

        from trainer.data.batch_rows import batch_extra_infos, with_episode, write_extra_infos

        infos, levels = [], []
        for extra in batch_extra_infos(batch):
            row = EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: extra})
            level = self.pass_rate_curriculum.level(row.env_id, int(row.seed or 0))
            levels.append(-1 if level is None else level)
            if level is not None:
                kwargs = {**row.env_kwargs, **self.pass_rate_curriculum.ladders[row.env_id][level]}
                extra = with_episode(extra, row.env_id, kwargs)
            infos.append(extra)
        write_extra_infos(batch, infos)
        tu.assign_non_tensor_stack(batch, LEVEL_COLUMN, levels)

    def step(self, metrics: dict, timing_raw: dict) -> Any:
        batch = super().step(metrics, timing_raw)
        if self.curriculum is not None:
            metrics.update(self._update_curriculum(batch))
        if self.pass_rate_curriculum is not None:
            metrics.update(self._update_pass_rate_curriculum(batch))
        return batch

    def _update_pass_rate_curriculum(self, batch: Any) -> dict[str, float]:
        """Feed the step's real episodes to the pass-rate curriculum; its metrics for this step."""
        from trainer.data.step_outcomes import read_step_outcomes

        outcomes = read_step_outcomes(batch, float(self.config.turngym.success_threshold))
        for move in self.pass_rate_curriculum.update((o.env_id, o.success) for o in outcomes):
            print(f"[turngym] curriculum: {move}", flush=True)
        return self.pass_rate_curriculum.metrics((o.env_id, o.level) for o in outcomes if o.level is not None)

    def _update_curriculum(self, batch: Any) -> dict[str, float]:
        """Feed the step's real episodes to the curriculum; its metrics for this step."""
        import numpy as np
        import transfer_queue as tq
        from verl.utils import tensordict_utils as tu

        from trainer.report.progress import episode_successes

        data = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=[EpisodeRow.EXTRA_INFO, EpisodeRow.DIFFICULTY, "extra_fields", "rm_scores"],
        )
        env_ids = [
            EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: extra}).env_id for extra in tu.get(data, "extra_info")
        ]
        picks = [str(d or "") for d in tu.get(data, EpisodeRow.DIFFICULTY)]
        extra_fields = list(tu.get(data, "extra_fields"))
        scores = np.array([float(t.sum()) for t in data["rm_scores"].unbind(0)])
        successes = episode_successes(extra_fields, scores, float(self.config.turngym.success_threshold))
        real = [
            i
            for i, tag in enumerate(batch.tags)
            if not tag.get("is_padding", False)
            and not EpisodeResult.from_extra_fields(extra_fields[i]).failed
        ]
        moves = self.curriculum.update((env_ids[i], picks[i] or None, bool(successes[i])) for i in real)
        for move in moves:
            print(f"[turngym] curriculum: {move}", flush=True)
        return self.curriculum.metrics(picks[i] for i in real)

    def _save_checkpoint(self) -> None:
        # Before verl's own save: verl marks the folder latest last, so a latest checkpoint always
        # holds the curriculum of its step.
        folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        if self.curriculum is not None:
            self.curriculum.save(folder)
        if self.pass_rate_curriculum is not None:
            self.pass_rate_curriculum.save(folder)
        super()._save_checkpoint()

    def _load_checkpoint(self) -> None:
        super()._load_checkpoint()
        if (self.curriculum is None and self.pass_rate_curriculum is None) or not self.global_steps:
            return
        if self.config.trainer.resume_mode == "resume_path":
            folder = Path(self.config.trainer.resume_from_path)
        else:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        if self.pass_rate_curriculum is not None:
            if self.pass_rate_curriculum.load(folder):
                levels = ", ".join(f"{e} {s.position:.2f}" for e, s in self.pass_rate_curriculum.envs.items())
                print(
                    f"[turngym] curriculum by pass rate resumed at step {self.global_steps}: {levels}",
                    flush=True,
                )
            else:
                print(f"[turngym] no pass-rate curriculum state in {folder}: it starts over", flush=True)
            return
        if self.curriculum.load(folder):
            levels = ", ".join(f"{e} {LEVELS[s.level]}" for e, s in self.curriculum.envs.items())
            print(f"[turngym] curriculum resumed at step {self.global_steps}: {levels}", flush=True)
        else:
            print(
                f"[turngym] no {STATE_FILE} in {folder}: the curriculum starts over at {self.curriculum.config.start}",
                flush=True,
            )
