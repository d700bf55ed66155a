"""The health guards' hook into verl's v1 trainer: metrics each step, warnings, and a clean halt.

verl's loop has no way for a step to end training, so a halt is raised from ``on_step_begin`` (a
public hook of verl's ``PPOTrainer``) on the step after the one that crossed: by then verl has saved,
validated and logged the halting step (TensorBoard included). ``fit`` catches it, keeps the reason in
the run's folder (trainer/hooks/health/halt.py) and returns like a finished run, so verl's task runner and
Ray shut down as usual. A halt found on the last step is recorded the same way.

A lasting collapse with ``turngym.health.on_collapse=adapt`` raises the sampling temperature of the
next steps' training rollouts (bounded, one line each time). The rows carry it to the agent loop
(``turngym_temperature``) and the trainer's ``rollout.temperature`` follows, so the actor scores the
samples at the temperature that drew them. Validation keeps its own ``val_kwargs``. The temperature
is kept in each checkpoint folder (``health_adapt.json``) and resumed with it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from trainer.data.batch_field import batch_field
from trainer.data.sample_objects import sample_objects
from trainer.hooks.health.guards import HealthGuard
from trainer.hooks.health.halt import HealthHalt, clear_halt, write_halt
from trainer.hooks.health.metrics import SAMPLED_ENTROPY_KEY, step_health
from trainer.run_folder.files import RunFileError, read_run_file, write_run_file

HEALTH_SECONDS = "timing_s/turngym_health"
TEMPERATURE_METRIC = "health/sampling_temperature"
ADAPT_FILE = "health_adapt.json"


class HealthTrainerMixin:
    """Health metrics and guards for verl's v1 ``PPOTrainer`` (mix in before it); see the module docstring."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self.health_guard = HealthGuard.for_run(config)
        self._health_halt: HealthHalt | None = None
        self.base_temperature = float(config.actor_rollout_ref.rollout.temperature)
        self.sampling_temperature = self.base_temperature

    def _next_train_batch(self, num_prompts: int | None = None) -> Any:
        batch = super()._next_train_batch(num_prompts)
        if self.sampling_temperature != self.base_temperature:
            from verl.utils import tensordict_utils as tu

            from rollout.episode_row import EpisodeRow

            size = len(tu.get(batch, "extra_info"))
            tu.assign_non_tensor_stack(batch, EpisodeRow.TEMPERATURE, [self.sampling_temperature] * size)
        return batch

    def _set_sampling_temperature(self, value: float) -> None:
        """Training rollouts sample at `value`; the actor's log-probs use it too."""
        self.sampling_temperature = round(float(value), 4)
        self.config.actor_rollout_ref.rollout.temperature = self.sampling_temperature

    def _adapt_to_collapse(self, step: int, reading: str | None) -> None:
        """on_collapse=adapt: a step up on a lasting collapse, half a step back down on a healthy step."""
        policy = self.health_guard.collapse
        if policy.mode != "adapt":
            return
        now = self.sampling_temperature
        if reading is None:
            if now > self.base_temperature:
                self._set_sampling_temperature(max(self.base_temperature, now - policy.temperature_step / 2))
            return
        ceiling = max(policy.max_temperature, self.base_temperature)
        if now >= ceiling:
            print(
                f"[turngym] collapse at step {step}: the sampling temperature is at its bound {ceiling:g} "
                f"(turngym.health.adapt_max_temperature); nothing left to adapt: {reading}",
                flush=True,
            )
            return
        self._set_sampling_temperature(min(ceiling, now + policy.temperature_step))
        print(
            f"[turngym] collapse at step {step} (on_collapse=adapt): training samples at temperature "
            f"{now:g} -> {self.sampling_temperature:g} (bound {ceiling:g}) from the next step: {reading}",
            flush=True,
        )

    def fit(self, agent_loop_manager: Any) -> None:
        output_dir = str(self.config.turngym.output_dir)
        clear_halt(output_dir)
        try:
            super().fit(agent_loop_manager)
        except HealthHalt as halt:
            self._health_halt = halt
            shutdown = getattr(self, "_shutdown_dump_executor", None)
            if callable(shutdown):
                shutdown()
        if self._health_halt is not None:
            write_halt(output_dir, self._health_halt)
            print(f"[turngym] {self._health_halt.line()}", flush=True)

    def on_step_begin(self) -> None:
        if self._health_halt is not None:
            raise self._health_halt
        super().on_step_begin()

    def _health_metrics(self, batch: Any, metrics: dict) -> dict[str, float]:
        """The step's ``health/*`` metrics from its batch and verl's metrics so far; timed."""
        import transfer_queue as tq

        started = time.perf_counter()
        padding = np.array([bool(tag.get("is_padding", False)) for tag in batch.tags])
        keep = ~padding if padding.any() and not padding.all() else np.ones(len(padding), dtype=bool)
        rewards = batch_field(tq, batch, "rm_scores")
        if rewards is None:
            return {}
        scores = [float(t.sum()) for t in rewards.unbind(0)]
        extra = batch_field(tq, batch, "extra_fields")
        fields = sample_objects(extra) if extra is not None else [None] * len(scores)
        uid = batch_field(tq, batch, "uid")
        uids = sample_objects(uid) if uid is not None else None
        advantages = batch_field(tq, batch, "advantages")
        nonfinite = None
        if advantages is not None:
            import torch

            rows = np.array([not bool(torch.isfinite(t).all()) for t in advantages.unbind(0)])
            nonfinite = int(rows[keep].sum())
        index = np.flatnonzero(keep)
        sampled = sampled_entropy(
            batch_field(tq, batch, "rollout_log_probs"), batch_field(tq, batch, "response_mask"), keep
        )
        if sampled is not None:
            metrics[SAMPLED_ENTROPY_KEY] = sampled
        out = step_health(
            [fields[i] for i in index],
            [scores[i] for i in index],
            [uids[i] for i in index] if uids is not None else None,
            nonfinite,
            metrics,
        )
        out[TEMPERATURE_METRIC] = self.sampling_temperature
        out[HEALTH_SECONDS] = time.perf_counter() - started
        return out

    def _check_health(self, step: int, metrics: dict) -> None:
        """Print the guards' warning lines; on a halt, keep a checkpoint and stop before the next step."""
        lines, reason = self.health_guard.check(step, metrics)
        for line in lines:
            print(line, flush=True)
        self._adapt_to_collapse(step, self.health_guard.adapt_due)
        if reason is None or self._health_halt is not None:
            return
        self._health_halt = HealthHalt(step, reason, self._keep_checkpoint(step))

    def _keep_checkpoint(self, step: int) -> str | None:
        """The checkpoint folder of `step`, saved now unless verl saved it this step; None if saving failed."""
        folder = os.path.join(str(self.config.trainer.default_local_dir), f"global_step_{step}")
        if not os.path.isdir(folder):
            try:
                self._save_checkpoint()
            except Exception as exc:  # noqa: BLE001 - the halt must still happen, with the reason why
                print(f"[turngym] checkpoint at the halt failed: {type(exc).__name__}: {exc}", flush=True)
                return None
        return folder if os.path.isdir(folder) else None

    def _save_checkpoint(self) -> None:
        # Before verl's own save, as the curriculum's: a latest checkpoint holds its step's temperature.
        folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        folder.mkdir(parents=True, exist_ok=True)
        # run_files: a link or FIFO planted in a run folder is refused, not followed
        write_run_file(folder / ADAPT_FILE, json.dumps({"sampling_temperature": self.sampling_temperature}))
        super()._save_checkpoint()

    def _load_checkpoint(self) -> None:
        super()._load_checkpoint()
        if not self.global_steps:
            return
        if self.config.trainer.resume_mode == "resume_path":
            folder = Path(self.config.trainer.resume_from_path)
        else:
            folder = Path(self.config.trainer.default_local_dir) / f"global_step_{self.global_steps}"
        saved = adapted_temperature(folder)
        if saved is not None and saved != self.sampling_temperature:
            self._set_sampling_temperature(saved)
            print(f"[turngym] resumed at step {self.global_steps}: training samples at temperature {saved:g}")


def sampled_entropy(logprobs: Any, mask: Any, keep: np.ndarray) -> float | None:
    """The policy's entropy per generated token, estimated from the tokens it sampled: mean of -log p.

    E[-log p(x)] over x drawn from p is p's entropy, so the rollout's own log-probs (at the sampling
    temperature) give it at no cost, where verl's exact entropy costs a pass over the whole vocabulary
    (``actor.calculate_entropy``). None when the batch has no log-probs or no generated token.
    """
    if logprobs is None or mask is None:
        return None
    total, count = 0.0, 0.0
    # unbind: the rows may be jagged (nested tensors) in verl's v1 batches
    for kept, row, row_mask in zip(keep, logprobs.unbind(0), mask.unbind(0), strict=False):
        if kept:
            m = row_mask.float()
            total += float(-(row.float() * m).sum())
            count += float(m.sum())
    return total / count if count else None


def adapted_temperature(folder: str | Path) -> float | None:
    """The sampling temperature on_collapse=adapt left in a checkpoint folder (None: none or unreadable)."""
    try:
        text = read_run_file(Path(folder) / ADAPT_FILE)
        value = json.loads(text)["sampling_temperature"] if text is not None else None
    except (OSError, ValueError, KeyError, TypeError, RunFileError):
        return None
    # A file in a folder someone else prepared is data: only a finite, bounded temperature is taken.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3:
        return None
    return float(value)
