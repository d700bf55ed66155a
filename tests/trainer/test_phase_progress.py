"""A live line per phase of a step: episodes finished out of the batch (counted from verl's replay-buffer
snapshot), then each worker phase's running time; on a terminal each phase's line is rewritten in place,
and the warm start is a tqdm bar, not one line per optimizer step."""

from __future__ import annotations

import inspect
import os
import pty
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from trainer.hooks.phase_progress import (
    PHASE_OVERRIDES,
    PhaseProgressTrainerMixin,
    episode_counts,
    phase,
    watch_episodes,
)
from trainer.report.progress import live_key

REPO = Path(__file__).resolve().parents[2]


class Snapshot:
    """The state verl's replay buffer holds after reading the TransferQueue's tags (its own field names)."""

    def __init__(self):
        self.pending_keys = {"train": {"b"}}
        self.running_keys = {"train": {"a"}}
        self.finished_keys = {"train": set()}
        self.failure_keys = {"train": set()}
        self.partitions = {"train": {}}
        self.polls = 0

    def _sync_metadata_from_transfer_queue(self):
        self.polls += 1


def test_the_buffer_fields_and_trainer_methods_used_are_verls():
    fields = inspect.getsource(ReplayBuffer._sync_metadata_from_transfer_queue)
    for name in ("pending_keys", "running_keys", "finished_keys", "failure_keys", "partitions"):
        assert f"self.{name}" in fields
    assert list(inspect.signature(ReplayBuffer._sync_metadata_from_transfer_queue).parameters) == ["self"]
    for name in PHASE_OVERRIDES:
        theirs = inspect.signature(getattr(PPOTrainerSync, name))
        assert list(theirs.parameters) == list(
            inspect.signature(getattr(PhaseProgressTrainerMixin, name)).parameters
        )


def test_episodes_finished_out_of_the_batch_are_shown_as_they_finish(monkeypatch):
    import trainer.hooks.phase_progress as phase_progress

    monkeypatch.setattr(phase_progress, "EPISODES_EVERY_S", 0.0)
    buffer, shown = Snapshot(), []
    watch_episodes(buffer, lambda partition: (3, 20, 4), show=shown.append)
    assert episode_counts(buffer, "train", 4) == (0, 8)
    buffer._sync_metadata_from_transfer_queue()
    buffer.partitions["train"].update(
        {"a_0_0": {}, "a_1_0": {}, "a_2_0": {}, "zz_0_0": {}}
    )  # zz: another batch
    buffer._sync_metadata_from_transfer_queue()
    buffer._sync_metadata_from_transfer_queue()  # nothing new: no line
    buffer.partitions["train"].update({f"b_{i}_0": {} for i in range(4)} | {"a_3_0": {}})
    buffer._sync_metadata_from_transfer_queue()
    assert buffer.polls == 4
    assert [line.split(", ")[0] for line in shown] == [
        "[turngym] ~ step 3/20 episodes: 0/8 finished",
        "[turngym] ~ step 3/20 episodes: 3/8 finished",
        "[turngym] ~ step 3/20 episodes: 8/8 finished",
    ]
    assert {live_key(line) for line in shown} == {"[turngym] ~ step 3/20 episodes"}


def test_the_first_and_the_last_count_are_always_shown(monkeypatch):
    import trainer.hooks.phase_progress as phase_progress

    monkeypatch.setattr(phase_progress, "EPISODES_EVERY_S", 3600.0)
    buffer, shown = Snapshot(), []
    watch_episodes(buffer, lambda partition: (1, 2, 1), show=shown.append)
    for done in (["a_0_0"], ["a_0_0", "b_0_0"]):
        buffer.partitions["train"] = dict.fromkeys(done, {})
        buffer._sync_metadata_from_transfer_queue()
    buffer._sync_metadata_from_transfer_queue()
    assert [line.split(", ")[0].split(": ")[1] for line in shown] == ["1/2 finished", "2/2 finished"]


def test_a_phase_shows_its_running_time_then_its_total():
    shown = []
    with phase(2, 5, "update actor", show=shown.append, tick_s=0.05):
        time.sleep(0.3)
    assert shown[0] == "[turngym] ~ step 2/5 update actor: started"
    assert any(line.endswith("s so far") for line in shown[1:-1])
    assert shown[-1].startswith("[turngym] ~ step 2/5 update actor: done in ")


def _on_a_terminal(code: str) -> str:
    """Run `code` with a pseudo-terminal as stdout and stderr; what the terminal received."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=follower, stderr=follower)
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return received.decode()


def test_a_terminal_shows_one_line_per_phase_rewritten_in_place(tmp_path):
    log = tmp_path / "train.log"
    code = textwrap.dedent(
        f"""
        from trainer.report.progress import ConsoleFilter
        with ConsoleFilter({str(log)!r}):
            for i in range(3):
                print(f"[turngym] ~ step 1/2 episodes: {{i}}/2 finished, {{i}} s", flush=True)
            print("[turngym] ~ step 1/2 update actor: started", flush=True)
            print("[turngym] ~ step 1/2 update actor: done in 4 s", flush=True)
            print("[turngym] step 1/2 | reward 0.5", flush=True)
        """
    )
    screen = _on_a_terminal(code).replace("\r\n", "\n")  # the pty turns each newline into CRLF
    assert screen == (
        "[turngym] ~ step 1/2 episodes: 0/2 finished, 0 s"
        "\r\x1b[K[turngym] ~ step 1/2 episodes: 1/2 finished, 1 s"
        "\r\x1b[K[turngym] ~ step 1/2 episodes: 2/2 finished, 2 s"
        "\n[turngym] ~ step 1/2 update actor: started"
        "\r\x1b[K[turngym] ~ step 1/2 update actor: done in 4 s"
        "\n[turngym] step 1/2 | reward 0.5\n"
    ), repr(screen)
    # The log keeps every line as a line.
    assert log.read_text().count("\n") == 6


def test_the_warm_start_is_a_bar_not_a_line_per_step(tmp_path):
    code = textwrap.dedent(
        """
        from trainer.warm_start.runner import LossBar
        bar = LossBar(192, mininterval=3600)
        for step in range(1, 193):
            bar(step, 192, 2.0 / step)
        bar.close()
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    lines = out.stdout.splitlines()
    assert len(lines) == 2, lines  # the start and the end: not 192 loss lines
    assert lines[-1].startswith("[warm start] ~ training: 100%|") and "192/192" in lines[-1], lines
    assert lines[-1].endswith("loss 0.010]")
