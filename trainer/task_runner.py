"""The Ray task that runs verl's v1 synchronous PPO trainer, with turngym's per-step reporting.

``TurngymTaskRunner`` is verl's own ``TaskRunnerV1`` (``verl/trainer/main_ppo.py``: TransferQueue
set-up and tear-down, ``agent_loop_manager_class``, tracking), not a copy of it: it only puts
``TurngymTrainer`` in verl's trainer registry (``trainer.v1.trainer_mode=sync``, the default of
``main_ppo`` in 0.9.1) inside its own Ray actor. verl compares ``trainer_mode`` with ``"sync"`` in
several places, so turngym's trainer is registered under that name rather than a new one.

``TurngymTrainer`` is verl's ``PPOTrainerSync`` with these additions: a success rate and the
assistant turns per episode computed from the episodes, a progress line and a JSONL record per step,
and the JSONL trimmed on resume so no step repeats. verl has no public hook that sees a step's or a
validation's metrics, so it overrides private methods; ``check_verl_extension_points`` (run when this
module is imported, in the driver before Ray starts and in every actor) fails loudly if verl renamed
or reshaped any of them.
"""

from __future__ import annotations

import inspect
import time

import numpy as np
import ray
from omegaconf import DictConfig
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from trainer.data.batch_field import batch_field
from trainer.data.sample_objects import sample_objects
from trainer.estimators.registry import register_estimators
from trainer.hooks.advantage_inputs import AdvantageInputsTrainerMixin
from trainer.hooks.curriculum.hook import CurriculumTrainerMixin
from trainer.hooks.episode_failures import (
    EPISODES_METRIC,
    FAILED_METRIC,
    EpisodeFailuresTrainerMixin,
    failed_segment,
    failure_counts,
)
from trainer.hooks.health.hook import HealthTrainerMixin
from trainer.hooks.mixture.hook import MixtureTrainerMixin
from trainer.hooks.phase_progress import PHASE_OVERRIDES, PhaseProgressTrainerMixin
from trainer.hooks.step_dump import StepDumpTrainerMixin
from trainer.report.behaviour_metrics import batch_behaviour, validation_behaviour, validation_source_lines
from trainer.report.progress import (
    SUCCESS_KEY,
    TURNS_KEY,
    MetricsLog,
    episode_successes,
    episode_turns,
    progress_line,
    validation_done_line,
    validation_start_line,
)


class TurngymTrainer(
    EpisodeFailuresTrainerMixin,
    HealthTrainerMixin,
    PhaseProgressTrainerMixin,
    AdvantageInputsTrainerMixin,
    CurriculumTrainerMixin,
    MixtureTrainerMixin,
    StepDumpTrainerMixin,
    PPOTrainerSync,
):
    """verl's synchronous trainer plus turngym's progress line, metrics JSONL, success rate, curriculum and
    adaptive mixture (the mixture picks a row's env before the curriculum picks its level)."""

    def __init__(self, config: DictConfig) -> None:
        # verl computes advantages in this process: turngym's estimators go into its registry here.
        register_estimators()
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
        self._report_placement(agent_loop_manager)
        first = "validating, then training" if self.config.trainer.get("val_before_train") else "training"
        print(f"[turngym] workers ready: {first} to step {self.total_training_steps}", flush=True)
        super().fit(agent_loop_manager)

    def _placement_roles(self, agent_loop_manager) -> list[tuple[str, object]]:
        """(role, actor handle) for every long-lived process of the run; None is this trainer itself."""
        roles: list[tuple[str, object]] = [("trainer", None)]
        roles += [(f"actor rank {i}", w) for i, w in enumerate(self.actor_rollout_wg.workers)]
        if getattr(self, "use_critic", False):
            roles += [(f"critic rank {i}", w) for i, w in enumerate(self.critic_wg.workers)]
        for i, replica in enumerate(self.llm_server_manager.get_replicas()):
            roles += [(f"rollout replica {i}", server) for server in replica.servers]
        roles += [(f"agent-loop worker {i}", w) for i, w in enumerate(agent_loop_manager.agent_loop_workers)]
        handles = getattr(self.reward_loop_manager, "reward_loop_worker_handles", None) or []
        roles += [(f"reward worker {i}", w) for i, w in enumerate(handles)]
        return roles

    def _report_placement(self, agent_loop_manager) -> None:
        """Print and save which node and pid each role runs on (see trainer/cluster/placement.py)."""
        from pathlib import Path

        from trainer.cluster.placement import placement_rows, placement_table, write_placement

        try:
            rows = placement_rows(self._placement_roles(agent_loop_manager))
        except Exception as exc:  # a report, never a reason to stop training; says why it is missing
            print(f"[turngym] placement not reported: {type(exc).__name__}: {exc}", flush=True)
            return
        path = write_placement(rows, Path(str(self.config.turngym.output_dir)) / "placement.json")
        nodes = len({r["node_id"] for r in rows})
        print(f"[turngym] placement over {nodes} node(s) ({path}):", flush=True)
        for line in placement_table(rows).splitlines():
            print(f"[turngym]   {line}", flush=True)

    def _validate(self) -> dict[str, float]:
        # A validation pass with a real model takes minutes: say when it starts and how long it took.
        dataset = getattr(self, "val_dataset", None)
        episodes = len(dataset) if dataset is not None else None
        print(validation_start_line(self.global_steps, episodes), flush=True)
        started = time.monotonic()
        metrics = super()._validate()
        if metrics:
            metrics.update(validation_behaviour(metrics))
            self.metrics_log.append(self.global_steps, metrics, kind="val")
        line = validation_done_line(self.global_steps, episodes, time.monotonic() - started, metrics or {})
        print(f"{line}; {failed_segment(*self.val_failures)} episodes", flush=True)
        for source_line in validation_source_lines(metrics or {}):
            print(f"[turngym]   {source_line}", flush=True)
        self.stop_if_validation_all_failed()
        return metrics

    def _episode_metrics(self, batch) -> dict[str, float]:
        """Success rate and mean assistant turns of the batch's real (non-padding) episodes."""
        import transfer_queue as tq

        data = batch_field(tq, batch, "rm_scores")
        if data is None:  # no per-token rewards in this batch: nothing to count successes from
            return {}
        scores = np.array([float(t.sum()) for t in data.unbind(0)])
        extra = batch_field(tq, batch, "extra_fields")
        extra_fields = sample_objects(extra) if extra is not None else [None] * len(scores)
        padding = np.array([bool(tag.get("is_padding", False)) for tag in batch.tags])
        success = episode_successes(extra_fields, scores, self.success_threshold)
        if padding.any() and not padding.all():
            success = success[~padding]
            extra_fields = [f for f, pad in zip(extra_fields, padding, strict=True) if not pad]
        metrics = {}
        if len(success):
            metrics[SUCCESS_KEY] = float(success.mean())
        metrics.update(failure_counts(extra_fields))
        metrics.update(batch_behaviour(extra_fields))
        turns = episode_turns(extra_fields)
        if turns:
            metrics[TURNS_KEY] = float(np.mean(turns))
        return metrics

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        metrics.update(self._episode_metrics(batch))
        metrics.update(self._health_metrics(batch, metrics))
        super()._compute_metrics(batch, metrics, timing_raw, global_steps=global_steps, epoch=epoch)
        self.metrics_log.append(global_steps, metrics, kind="train")
        # Failed episodes as a count on every line (health/episodes_failed, a share, stays in the metrics).
        shown = {k: v for k, v in metrics.items() if k != "health/episodes_failed"}
        line = progress_line(global_steps, self.total_training_steps, shown)
        failed = float(metrics.get(FAILED_METRIC, 0.0))
        print(f"[turngym] {line} | {failed_segment(failed, metrics.get(EPISODES_METRIC, 0.0))}", flush=True)
        self.show_first_traceback(failed)
        self._check_health(global_steps, metrics)


# The PPOTrainer methods turngym's trainer classes override (TurngymTrainer and its mixins): the
# private ones, and the public hook the health halt is raised from.
VERL_PRIVATE_OVERRIDES = (
    "on_step_begin",
    "_build_replay_buffer",
    "_validate",
    "_val_metrics_update",
    "_balance_batch",
    "_compute_metrics",
    "_compute_advantage",
    "_next_train_batch",
    "_save_checkpoint",
    "_load_checkpoint",
    *PHASE_OVERRIDES,
)


class VerlIncompatibleError(RuntimeError):
    """The installed verl lacks (or has reshaped) something turngym's trainer plugs into."""


def _parameters(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind is not p.VAR_KEYWORD]


def check_verl_extension_points(
    base: type = PPOTrainerSync, ours: type | None = None, runner: type | None = None
) -> None:
    """Raise VerlIncompatibleError unless every verl method and registry turngym relies on is there.

    Each private method in ``VERL_PRIVATE_OVERRIDES`` must exist on verl's trainer with the same
    parameters as turngym's override (else the override would silently never run, or break a call);
    verl's task runner must still pick its trainer from ``TRAINER_REGISTRY`` by ``trainer_mode``.
    """
    ours = TurngymTrainer if ours is None else ours
    runner = TaskRunnerV1.__ray_actor_class__ if runner is None else runner
    problems = []
    for name in VERL_PRIVATE_OVERRIDES:
        theirs = getattr(base, name, None)
        if not callable(theirs):
            problems.append(f"{base.__name__}.{name} is missing")
            continue
        if _parameters(theirs) != _parameters(getattr(ours, name)):
            problems.append(
                f"{base.__name__}.{name}{inspect.signature(theirs)} no longer matches turngym's override "
                f"{name}{inspect.signature(getattr(ours, name))}"
            )
    for name in ("run", "init_agent_loop_manager"):
        if not callable(getattr(runner, name, None)):
            problems.append(f"verl's TaskRunnerV1.{name} is missing")
    if TRAINER_REGISTRY.get("sync") is None:
        problems.append("verl's TRAINER_REGISTRY has no 'sync' trainer")
    if problems:
        from trainer.checks.verl_version import SUPPORTED_VERL, installed_verl_version

        raise VerlIncompatibleError(
            f"verl {installed_verl_version()} does not offer what turngym's trainer plugs into "
            f"(written for verl {SUPPORTED_VERL}): " + "; ".join(problems)
        )


@ray.remote
class TurngymTaskRunner(TaskRunnerV1.__ray_actor_class__):
    """verl's TaskRunnerV1, training with ``TurngymTrainer`` as the ``sync`` trainer of this actor."""

    def run(self, config: DictConfig) -> int:
        """Train with verl's own task runner; return the last global step reached."""
        check_verl_extension_points()
        mode = str(config.trainer.v1.trainer_mode)
        if mode != "sync":  # also refused before Ray starts (trainer.checks.registry_checks)
            raise ValueError(
                f"turngym's trainer extends verl's sync trainer; trainer.v1.trainer_mode={mode!r}"
            )
        # Only in this actor's process, which runs this one job: verl's registry refuses re-registration.
        # Reached through the module, never a global of this class's methods: Ray pickles an actor
        # class by value, and a global dict would travel as a copy that verl never reads.
        from verl.trainer.ppo.v1 import trainer_base

        trainer_base.TRAINER_REGISTRY[mode] = TurngymTrainer
        super().run(config)
        return int(self.trainer.global_steps)


check_verl_extension_points()
