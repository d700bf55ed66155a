"""A live line per phase of a training step, so a long step is never silent.

A real-model step spends minutes playing episodes, then computing old log-probs and updating the actor;
the step's summary line only comes at its end. Each phase now shows one line, rewritten in place on a
terminal (`trainer.report.progress.ConsoleFilter`) and logged as plain lines in train.log:

    [turngym] ~ step 3/20 episodes: 17/64 finished, 45 s
    [turngym] ~ step 3/20 old log-probs: 12 s so far
    [turngym] ~ step 3/20 old log-probs: done in 17 s
    [turngym] ~ step 3/20 update actor: done in 38 s

Episodes are counted where verl's replay buffer already looks: while it waits for a batch it reads the
TransferQueue's tags at every poll, in which every finished episode is a `{uid}_{session}_{index}` key, so
the count costs no extra request. Phases without inner progress (an RPC to the workers) show their running time every
`TICK_S` seconds from a thread, then their total.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from trainer.report.progress import LIVE_MARK

TICK_S = 30.0  # how often a phase without inner progress says it is still running
EPISODES_EVERY_S = 5.0  # at most one episodes line per this many seconds (and the last one)


def phase_line(step: int, total: int, phase: str, text: str) -> str:
    """``[turngym] ~ step 3/20 episodes: 17/64 finished, 45 s``

    >>> phase_line(3, 20, "update actor", "done in 38 s")
    '[turngym] ~ step 3/20 update actor: done in 38 s'
    """
    return f"[turngym]{LIVE_MARK}step {step}/{total} {phase}: {text}"


def episode_counts(buffer: Any, partition_id: str, n: int) -> tuple[int, int]:
    """(finished episodes, episodes in the batch) of `partition_id` from the buffer's last tag snapshot.

    Args:
        buffer: verl's replay buffer after `_sync_metadata_from_transfer_queue` (its prompt-group key sets
            and its `partitions` of trajectory tags).
        partition_id: "train" or "val".
        n: Episodes per prompt group (rollout.n, or val_kwargs.n in validation).

    Returns:
        The finished count and the total.
    """
    groups: set[str] = set()
    for name in ("pending_keys", "running_keys", "finished_keys", "failure_keys"):
        groups |= set((getattr(buffer, name, None) or {}).get(partition_id, ()))
    trajectories = (getattr(buffer, "partitions", None) or {}).get(partition_id, {})
    finished = sum(1 for key in trajectories if key.split("_")[0] in groups)
    return finished, len(groups) * n


def watch_episodes(
    buffer: Any, where: Callable[[str], tuple[int, int, int]], show: Callable[[str], None] = print
) -> None:
    """Wrap the buffer's TransferQueue read so that each read shows the finished episodes of each batch.

    Args:
        buffer: verl's replay buffer (its `_sync_metadata_from_transfer_queue()` is wrapped: it runs at
            every poll while the buffer waits, and once more when the batch is complete).
        where: partition id -> (step, total steps, episodes per group) at the time of the call.
        show: Where each line goes.
    """
    sync = buffer._sync_metadata_from_transfer_queue
    state: dict[str, dict[str, Any]] = {}

    def synced() -> Any:
        result = sync()
        with contextlib.suppress(Exception):  # progress must never break the sampling loop
            for partition_id in ("train", "val"):
                _show_count(buffer, partition_id, where, show, state.setdefault(partition_id, {}))
        return result

    buffer._sync_metadata_from_transfer_queue = synced


def _show_count(
    buffer: Any,
    partition_id: str,
    where: Callable[[str], tuple[int, int, int]],
    show: Callable[[str], None],
    state: dict[str, Any],
) -> None:
    step, total, n = where(partition_id)
    finished, episodes = episode_counts(buffer, partition_id, n)
    if not episodes:
        return
    key, now = (step, episodes), time.monotonic()
    if state.get("key") != key:  # a new batch: its clock starts now
        state.update(key=key, started=now, shown_at=None, last=None)
    if state["last"] == finished:
        return
    if state["shown_at"] is None or finished == episodes or now - state["shown_at"] >= EPISODES_EVERY_S:
        phase = "episodes" if partition_id == "train" else "validation episodes"
        elapsed = now - state["started"]
        show(phase_line(step, total, phase, f"{finished}/{episodes} finished, {elapsed:.0f} s"))
        state.update(shown_at=now, last=finished)


@contextlib.contextmanager
def phase(
    step: int, total: int, name: str, show: Callable[[str], None] = print, tick_s: float = TICK_S
) -> Iterator[None]:
    """Show `name`'s running time every `tick_s` seconds while the block runs, then its total.

    >>> with phase(1, 2, "update actor", show=lambda line: None):
    ...     pass
    """
    started = time.monotonic()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(tick_s):
            show(phase_line(step, total, name, f"{time.monotonic() - started:.0f} s so far"))

    show(phase_line(step, total, name, "started"))
    ticker = threading.Thread(target=tick, name=f"turngym-phase-{name}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join(timeout=1)
    show(phase_line(step, total, name, f"done in {time.monotonic() - started:.0f} s"))


def _flushed(line: str) -> None:
    print(line, flush=True)


class PhaseProgressTrainerMixin:
    """verl trainer mixin: live lines for the episodes, old log-probs, reference, values and updates."""

    def _build_replay_buffer(self) -> Any:
        buffer = super()._build_replay_buffer()
        rollout = self.config.actor_rollout_ref.rollout

        def where(partition_id: str) -> tuple[int, int, int]:
            n = rollout.n if partition_id == "train" else rollout.val_kwargs.n
            return self.global_steps, self.total_training_steps, int(n)

        watch_episodes(buffer, where, show=_flushed)
        return buffer

    def _timed(self, name: str, method: Callable[..., Any], *args: Any) -> Any:
        with phase(self.global_steps, self.total_training_steps, name, show=_flushed):
            return method(*args)

    def _compute_old_log_prob(self, batch: Any, metrics: dict) -> Any:
        return self._timed("old log-probs", super()._compute_old_log_prob, batch, metrics)

    def _compute_ref_log_prob(self, batch: Any, metrics: dict) -> Any:
        return self._timed("reference log-probs", super()._compute_ref_log_prob, batch, metrics)

    def _compute_values(self, batch: Any, metrics: dict) -> Any:
        return self._timed("values", super()._compute_values, batch, metrics)

    def _update_critic(self, batch: Any, metrics: dict) -> Any:
        return self._timed("update critic", super()._update_critic, batch, metrics)

    def _update_actor(self, batch: Any, metrics: dict) -> Any:
        return self._timed("update actor", super()._update_actor, batch, metrics)


# The verl trainer methods the mixin overrides (checked against verl with the others, task_runner.py).
PHASE_OVERRIDES = (
    "_compute_old_log_prob",
    "_compute_ref_log_prob",
    "_compute_values",
    "_update_critic",
    "_update_actor",
)
