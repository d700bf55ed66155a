"""The Ray task that runs verl's v1 synchronous PPO trainer, with turngym's per-step reporting.

``TurngymTaskRunner.run`` mirrors verl's ``TaskRunnerV1.run`` (``verl/trainer/main_ppo.py``); the
trainer is verl's ``PPOTrainerSync`` (``trainer.v1.trainer_mode=sync``, the default of
``main_ppo`` in 0.9.1) with these additions: a success rate and the assistant turns per episode
computed from the episodes, a progress line and a JSONL record per step, and the JSONL trimmed on
resume so no step repeats.
"""

from __future__ import annotations

import numpy as np
import ray
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from trainer.curriculum import CurriculumTrainerMixin
from trainer.progress import (
    SUCCESS_KEY,
    TURNS_KEY,
    MetricsLog,
    episode_successes,
    episode_turns,
    progress_line,
)
from trainer.turn_credit import TurnAnchorsTrainerMixin  # also registers turngym's estimators in verl


class TurngymTrainer(TurnAnchorsTrainerMixin, CurriculumTrainerMixin, PPOTrainerSync):
    """verl's synchronous trainer plus turngym's progress line, metrics JSONL, success rate and curriculum."""

    def __init__(self, config: DictConfig) -> None:
        super().__init__(config=config)
        self.metrics_log = MetricsLog(config.turngym.metrics_file)
        self.success_threshold = float(config.turngym.success_threshold)

    # verl's replay buffer checks every 2 s whether a step's rollouts are done (v1/replay_buffer.py
    # ~144, ~409), so generation took a multiple of 2 s; a CPU rollout of a small batch takes ~1-2 s.
    REPLAY_POLL_SECONDS = 0.2

    def _build_replay_buffer(self):
        buffer = super()._build_replay_buffer()
        if getattr(buffer, "poll_interval", 0.0) > self.REPLAY_POLL_SECONDS:
            buffer.poll_interval = self.REPLAY_POLL_SECONDS
        return buffer

    def fit(self, agent_loop_manager) -> None:
        dropped = self.metrics_log.truncate_after(self.global_steps)
        if self.global_steps or dropped:
            print(
                f"[turngym] resuming after step {self.global_steps}; dropped {dropped} later metric records"
            )
        first = "validating, then training" if self.config.trainer.get("val_before_train") else "training"
        print(f"[turngym] workers ready: {first} to step {self.total_training_steps}", flush=True)
        super().fit(agent_loop_manager)

    def _validate(self) -> dict[str, float]:
        metrics = super()._validate()
        if metrics:
            self.metrics_log.append(self.global_steps, metrics, kind="val")
            val = {k: v for k, v in metrics.items() if k.startswith("val-core/")}
            print(
                f"[turngym] validation at step {self.global_steps}: "
                + ", ".join(f"{k}={float(v):.3f}" for k, v in val.items())
            )
        return metrics

    def _episode_metrics(self, batch) -> dict[str, float]:
        """Success rate and mean assistant turns of the batch's real (non-padding) episodes."""
        import transfer_queue as tq

        try:
            data = tq.kv_batch_get(
                keys=batch.keys, partition_id=batch.partition_id, select_fields=["rm_scores"]
            )
            scores = np.array([float(t.sum()) for t in data["rm_scores"].unbind(0)])
        except Exception:  # noqa: BLE001 - a metric must never stop training
            return {}
        try:
            extra = tq.kv_batch_get(
                keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"]
            )
            extra_fields = list(extra.pop("extra_fields").tolist())
        except Exception:  # noqa: BLE001 - older rollouts write no extra_fields
            extra_fields = [None] * len(scores)
        padding = np.array([bool(tag.get("is_padding", False)) for tag in batch.tags])
        success = episode_successes(extra_fields, scores, self.success_threshold)
        if padding.any() and not padding.all():
            success = success[~padding]
            extra_fields = [f for f, pad in zip(extra_fields, padding, strict=True) if not pad]
        metrics = {}
        if len(success):
            metrics[SUCCESS_KEY] = float(success.mean())
        turns = episode_turns(extra_fields)
        if turns:
            metrics[TURNS_KEY] = float(np.mean(turns))
        return metrics

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        metrics.update(self._episode_metrics(batch))
        super()._compute_metrics(batch, metrics, timing_raw, global_steps=global_steps, epoch=epoch)
        self.metrics_log.append(global_steps, metrics, kind="train")
        print(f"[turngym] {progress_line(global_steps, self.total_training_steps, metrics)}", flush=True)


@ray.remote
class TurngymTaskRunner:
    """Runs one training job inside Ray (as verl's TaskRunnerV1 does) with ``TurngymTrainer``."""

    def run(self, config: DictConfig) -> int:
        """Train; return the last global step reached."""
        import transfer_queue as tq
        from verl.trainer.ppo.v1 import AgentLoopManagerTQ
        from verl.utils.logging_utils import configure_verl_logging

        configure_verl_logging()
        config.transfer_queue.enable = True
        OmegaConf.resolve(config)
        tq.init(config.transfer_queue)
        trainer = None
        succeeded = False
        try:
            trainer = TurngymTrainer(config=config)
            trainer.init()
            manager = AgentLoopManagerTQ.create(
                config=config,
                llm_client=trainer.get_llm_client(),
                teacher_client=trainer.get_teacher_client(),
                reward_loop_worker_handles=trainer.get_reward_handles(),
            )
            trainer.fit(manager)
            succeeded = True
            return int(trainer.global_steps)
        finally:
            try:
                tracking = getattr(trainer, "logger", None)
                if tracking is not None:
                    tracking.finish(exit_code=0 if succeeded else 1)
            finally:
                tq.close()
