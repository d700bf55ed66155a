"""The adaptive mixture's hook into verl's v1 trainer: each training row's env from the current
weights, the weights' update after each step, the state in each checkpoint folder.

As the curriculum's hook (``trainer.hooks.curriculum.hook``), this overrides ``PPOTrainer`` methods, since
verl 0.9.1 has no public hook for what a training row plays: ``_next_train_batch`` (every training
prompt passes through it; validation does not, so held-out numbers keep the dataset's mixture),
``step`` (before the same step's checkpoint), ``_save_checkpoint`` and ``_load_checkpoint``. The
schedule is ``trainer.hooks.mixture.adaptive``; a row's new env reaches the agent loop in its ``extra_info``
(``trainer.data.batch_rows``), with the kwargs the dataset gives that env.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import EpisodeRow
from trainer.hooks.mixture.adaptive import AdaptiveMixture, MixtureConfig


class MixtureTrainerMixin:
    """Adaptive-mixture hooks for verl's v1 ``PPOTrainer`` (mix in before it); see the module docstring."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self.mixture: AdaptiveMixture | None = None
        settings = MixtureConfig.from_mapping(config.turngym.get("mixture"))
        if not settings.enable:
            return
        from trainer.compose import env_entries

        entries = env_entries(config)
        if len(entries) < 2:
            print(
                "[turngym] turngym.mixture: one env, nothing to weigh; the mixture stays as it is", flush=True
            )
            return
        self.mixture_kwargs = {str(e["id"]): dict(EpisodeKind.from_entry(e).kwargs) for e in entries}
        self.mixture = AdaptiveMixture(settings, {str(e["id"]): float(e["weight"]) for e in entries})
        shown = ", ".join(f"{e} {w:.2f}" for e, w in self.mixture.weights().items())
        print(
            f"[turngym] adaptive mixture (floor {settings.floor}, cap {settings.cap}), starting at {shown}",
            flush=True,
        )

    def _next_train_batch(self, num_prompts: int | None = None) -> Any:
        batch = super()._next_train_batch(num_prompts)
        if self.mixture is not None:
            from trainer.data.batch_rows import batch_extra_infos, with_episode, write_extra_infos

            infos = []
            for extra in batch_extra_infos(batch):
                row = EpisodeRow.from_row({EpisodeRow.EXTRA_INFO: extra})
                if row.env_id in self.mixture_kwargs:  # a row of the mixture (not a user's own env)
                    env_id = self.mixture.env_for(int(row.seed or 0))
                    if env_id != row.env_id:
                        extra = with_episode(extra, env_id, self.mixture_kwargs[env_id])
                infos.append(extra)
            write_extra_infos(batch, infos)
        return batch

    def step(self, metrics: dict, timing_raw: dict) -> Any:
        batch = super().step(metrics, timing_raw)
        if self.mixture is not None:
            metrics.update(self._update_mixture(batch))
        return batch

    def _update_mixture(self, batch: Any) -> dict[str, float]:
        """Fold the step's per-env pass and flat-group rates into the weights; the step's metrics."""
        from trainer.data.step_outcomes import flat_group_rates, pass_rates, read_step_outcomes

        outcomes = read_step_outcomes(batch, float(self.config.turngym.success_threshold))
        rates, flat = pass_rates(outcomes), flat_group_rates(outcomes)
        for line in self.mixture.update({env_id: (rate, flat.get(env_id)) for env_id, rate in rates.items()}):
            print(f"[turngym] {line}", flush=True)
        return self.mixture.metrics(o.env_id for o in outcomes)

    def _save_checkpoint(self) -> None:
        if self.mixture is not None:
            # Before verl's own save, as the curriculum's: a latest checkpoint holds its step's weights.
            self.mixture.save(
                Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
            )
        super()._save_checkpoint()

    def _load_checkpoint(self) -> None:
        super()._load_checkpoint()
        if self.mixture is None or not self.global_steps:
            return
        if self.config.trainer.resume_mode == "resume_path":
            folder = Path(self.config.trainer.resume_from_path)
        else:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        if self.mixture.load(folder):
            shown = ", ".join(f"{e} {w:.2f}" for e, w in self.mixture.weights().items())
            print(f"[turngym] mixture resumed at step {self.global_steps}: {shown}", flush=True)
        else:
            print(f"[turngym] no mixture state in {folder}: the weights start over", flush=True)
