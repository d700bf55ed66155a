"""Failed episodes in training: counted on every step and validation line, the first traceback shown
once, and a run whose every episode fails stopped with it (exit code 1).

A failed episode (an env or template that raised) enters the batch only as a masked-out placeholder
(loss mask 0, no gradient; see `rollout.agent_loop.trajectory_to_output`); a replayed one moved to a
live env server when its own died (`rollout.env_servers`) and trains like any other.

The first failing episode of a run writes its traceback to ``<run>/first_episode_failure.txt``
(`rollout.failure_trace`, through ``TURNGYM_FAILURE_FILE``); the trainer prints it on the console once,
after the first step or validation line that counts a failure. When every episode of a validation pass
or of a training step failed there is nothing to learn from (verl would stop later with "response_mask
must contain at least one valid token"): the trainer stops at once, records why in
``<run>/episodes_failed.json`` and ``trainer.run`` exits 1 with that reason in one line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollout.episode_result import EpisodeResult
from trainer.run_folder.files import RunFileError, read_run_file, remove_run_file, write_run_file

FAILED_METRIC = "turngym/episodes_failed"
REPLAYED_METRIC = "turngym/episodes_replayed"
EPISODES_METRIC = "turngym/episodes"
VAL_FAILED_METRIC = "val-aux/turngym/episodes_failed"
VAL_EPISODES_METRIC = "val-aux/turngym/episodes"
FAILURE_FILE = "first_episode_failure.txt"
STOP_FILE = "episodes_failed.json"
ALL_FAILED_EXIT_CODE = 1


def failure_counts(extra_fields: Sequence[dict[str, Any] | None]) -> dict[str, float]:
    """Counts of failed and replayed episodes among the batch's episodes' extra_fields.

    Args:
        extra_fields: one dict (or None) per episode of the batch.

    Returns:
        `{FAILED_METRIC: n, REPLAYED_METRIC: m, EPISODES_METRIC: len(extra_fields)}`.
    """
    results = [EpisodeResult.from_extra_fields(f) for f in extra_fields]
    return {
        FAILED_METRIC: float(sum(r.failed for r in results)),
        REPLAYED_METRIC: float(sum(r.replayed for r in results)),
        EPISODES_METRIC: float(len(results)),
    }


def first_error(extra_fields: Sequence[dict[str, Any] | None]) -> str | None:
    """The ``error`` of the first failed episode (``Type: message (at file:line in function)``)."""
    for fields in extra_fields:
        result = EpisodeResult.from_extra_fields(fields)
        if result.failed and result.error:
            return result.error
    return None


def failed_segment(failed: float, episodes: float) -> str:
    """``failed 3/32``: the count shown on every step and validation line."""
    return f"failed {int(failed)}/{int(episodes)}"


def failure_path(output_dir: str | Path) -> Path:
    """Where the run's first failed episode leaves its traceback."""
    return Path(output_dir).expanduser() / FAILURE_FILE


def stop_path(output_dir: str | Path) -> Path:
    """Where a run stopped because every episode failed records why."""
    return Path(output_dir).expanduser() / STOP_FILE


def traceback_lines(output_dir: str | Path) -> list[str]:
    """The first failed episode's traceback, one string per line ([] when no episode failed yet)."""
    try:
        return (read_run_file(failure_path(output_dir)) or "").splitlines()
    except (OSError, RunFileError):  # a link or FIFO there is nobody's traceback
        return []


def forget_failures(output_dir: str | Path) -> None:
    """A new command of the run starts: its first failure and its stop are its own."""
    remove_run_file(failure_path(output_dir))
    remove_run_file(stop_path(output_dir))


class AllEpisodesFailed(Exception):
    """Raised inside verl's loop when a validation pass or a step had no episode that did not fail."""

    def __init__(self, where: str, failed: int, error: str | None) -> None:
        super().__init__(where)
        self.where, self.failed, self.error = where, failed, error

    def line(self) -> str:
        """The reason in one line: where, how many, the first error with its place, what to do."""
        first = f"; the first: {self.error}" if self.error else ""
        return (
            f"every episode failed ({self.where}: {self.failed} of {self.failed}){first}; training stopped: "
            "fix the env (its traceback is above and in train.log) and run the same command again"
        )


def write_stop(output_dir: str | Path, stop: AllEpisodesFailed) -> Path:
    """Record the stop in the run's folder for trainer.run, which reads it once Ray is down."""
    path = stop_path(output_dir)
    write_run_file(path, json.dumps({"where": stop.where, "failed": stop.failed, "line": stop.line()}) + "\n")
    return path


def stop_exit(output_dir: str | Path) -> tuple[int, str | None]:
    """``(1, reason line)`` when the last training of the run in `output_dir` stopped because every
    episode failed, else ``(0, None)``."""
    try:
        record = json.loads(read_run_file(stop_path(output_dir)) or "")
    except (OSError, ValueError):
        return 0, None
    if not isinstance(record, dict):
        return 0, None
    return ALL_FAILED_EXIT_CODE, str(record.get("line") or "every episode failed")


class EpisodeFailuresTrainerMixin:
    """For verl's v1 ``PPOTrainer`` (mix in before it): the failed-episode counts, the first traceback
    once, and the stop when every episode of a validation pass or a step failed."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        self._traceback_shown = False
        self.val_failures: tuple[int, int] = (0, 0)

    def fit(self, agent_loop_manager: Any) -> None:
        output_dir = str(self.config.turngym.output_dir)
        try:
            super().fit(agent_loop_manager)
        except AllEpisodesFailed as stop:
            shutdown = getattr(self, "_shutdown_dump_executor", None)
            if callable(shutdown):
                shutdown()
            write_stop(output_dir, stop)
            print(f"[turngym] {stop.line()}", flush=True)

    def show_first_traceback(self, failed: float) -> None:
        """Print the run's first failure's traceback on the console once, when this line counted one."""
        if failed <= 0 or self._traceback_shown:
            return
        lines = traceback_lines(str(self.config.turngym.output_dir))
        if not lines:
            return  # another node's worker kept it: its train.log has it
        self._traceback_shown = True
        for line in lines:
            print(f"[turngym] | {line}", flush=True)

    def _val_metrics_update(
        self,
        data_sources,
        sample_uids,
        reward_extra_infos_dict,
        sample_turns,
        expected_acc_counts=None,
    ) -> dict[str, float]:
        metrics = super()._val_metrics_update(
            data_sources,
            sample_uids,
            reward_extra_infos_dict,
            sample_turns,
            expected_acc_counts=expected_acc_counts,
        )
        flags = list(reward_extra_infos_dict.get(EpisodeResult.EPISODE_FAILED) or [])
        failed = sum(1 for f in flags if f is not None and float(f) > 0)
        episodes = len(reward_extra_infos_dict.get("reward") or flags)
        self.val_failures = (failed, episodes)
        metrics[VAL_FAILED_METRIC] = float(failed)
        metrics[VAL_EPISODES_METRIC] = float(episodes)
        return metrics

    def stop_if_validation_all_failed(self) -> None:
        """After the validation line: the traceback once, and the stop when no episode succeeded in running."""
        failed, episodes = self.val_failures
        self.show_first_traceback(failed)
        if episodes and failed == episodes:
            raise AllEpisodesFailed(f"validation at step {self.global_steps}", failed, None)

    def _balance_batch(
        self, batch: Any, metrics: dict, logging_prefix: str = "global_seqlen", keep_minibatch: bool = False
    ) -> Any:
        # The first point of a step after its rollout: stop before verl computes anything on a batch
        # that is nothing but masked-out placeholders.
        import transfer_queue as tq

        from trainer.data.batch_field import batch_field
        from trainer.data.sample_objects import sample_objects

        extra = batch_field(tq, batch, "extra_fields")
        if extra is not None:
            padding = [bool(tag.get("is_padding", False)) for tag in batch.tags]
            fields = [f for f, pad in zip(sample_objects(extra), padding, strict=True) if not pad]
            counts = failure_counts(fields)
            if fields and counts[FAILED_METRIC] == len(fields):
                step = f"step {self.global_steps}/{self.total_training_steps}"
                print(f"[turngym] {step} | {failed_segment(len(fields), len(fields))}", flush=True)
                self.show_first_traceback(len(fields))
                raise AllEpisodesFailed(step, len(fields), first_error(fields))
        return super()._balance_batch(
            batch, metrics=metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch
        )
