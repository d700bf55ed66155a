"""End to end on CPU: verl's trainer through `python -m trainer.run`, and resume after a kill."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from small_run_args import SMALL_RUN

REPO = Path(__file__).resolve().parents[2]
SMALL = SMALL_RUN


def _command(out: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "trainer.run",
        "env=text-game",
        f"turngym.output_dir={out}",
        *SMALL,
        *overrides,
    ]


def _train_steps(metrics: Path) -> list[int]:
    if not metrics.exists():
        return []
    steps = []
    for line in metrics.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("kind") == "train":
            steps.append(record["step"])
    return steps


def _session_pids(sid: int) -> list[int]:
    """Live processes of session `sid` (zombies are dead already: they wait only to be reaped)."""
    out = subprocess.run(["ps", "-eo", "pid=,sid=,stat="], capture_output=True, text=True).stdout
    rows = (line.split() for line in out.splitlines() if line.strip())
    return [int(p) for p, s, stat in rows if int(s) == sid and not stat.startswith("Z")]


def _checkpointed_step(ckpt: Path) -> int | None:
    """The step in verl's `latest_checkpointed_iteration.txt`, or None while it is missing or half written."""
    try:
        text = ckpt.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def _kill_session(sid: int) -> None:
    """SIGKILL every process left in session `sid` until none is left (no fixed sleep)."""
    deadline = time.time() + 60
    while (pids := _session_pids(sid)) and time.time() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    assert not _session_pids(sid), f"processes of the killed run outlived SIGKILL: {_session_pids(sid)}"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_two_steps_leave_checkpoint_metrics_and_plot(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        _command(out, "trainer.total_training_steps=2", "trainer.test_freq=2"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    assert (out / "checkpoints" / "global_step_2" / "actor").is_dir()
    assert _train_steps(out / "metrics.jsonl") == [1, 2]
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    validations = [r for r in records if r["kind"] == "val"]
    assert validations
    # The embedded defaults also play every held-out seed greedily (turngym.val_greedy), and the
    # rollout reports turns cut at turngym.max_tokens_per_turn.
    for record in validations:
        assert any(re.fullmatch(r"val-core/[\w-]+@greedy/reward/mean@1", k) for k in record), sorted(record)
        assert any(re.fullmatch(r"val-core/[\w-]+-v0/reward/mean@1", k) for k in record), sorted(record)
        assert any(k.endswith("/turns_cut/mean@1") for k in record), sorted(record)
    assert all(
        "critic/score/mean" in r and "turngym/success_rate" in r for r in records if r["kind"] == "train"
    )
    assert (out / "reward_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert "[turngym] step 2/2 | reward" in proc.stdout + proc.stderr
    # data.max_prompt_length defaults to auto: sized from the datasets' longest opening prompt.
    assert re.search(r"data\.max_prompt_length=\d+ \(auto\)", proc.stdout + proc.stderr)

    # examples/evaluate.py: verl's model merger exports the checkpoint, rollout.eval plays it.
    evaluation = subprocess.run(
        [sys.executable, "examples/evaluate.py", str(out), "guess-number-v0", "n=2", "env.difficulty=easy"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert evaluation.returncode == 0, evaluation.stdout[-3000:] + evaluation.stderr[-3000:]
    assert "reward_mean" in evaluation.stdout
    assert (out / "export" / "global_step_2" / "config.json").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_killed_run_resumes_without_losing_or_repeating_steps(tmp_path):
    out = tmp_path / "run"
    cmd = _command(out, "trainer.total_training_steps=4", "trainer.save_freq=1", "trainer.test_freq=-1")
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ckpt = out / "checkpoints" / "latest_checkpointed_iteration.txt"
    # Kill after any finished step whose checkpoint and metrics line are both written. Waiting for
    # one exact step raced: with a checkpoint every step the file can move past it between polls.
    deadline = time.time() + 1200
    while time.time() < deadline and first.poll() is None:
        saved = _checkpointed_step(ckpt)
        if saved is not None and saved in _train_steps(out / "metrics.jsonl"):
            break
        time.sleep(0.2)
    assert first.poll() is None, "the first run ended before it could be killed"
    assert _checkpointed_step(ckpt) is not None, "no checkpoint within the deadline"
    sid = os.getsid(first.pid)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and every Ray process it started
    first.wait(timeout=60)
    _kill_session(sid)  # stragglers that left the process group but not the session
    killed_at = _checkpointed_step(ckpt)
    assert killed_at is not None
    assert killed_at < 4

    second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"resuming after step {killed_at}" in second.stdout + second.stderr
    assert _train_steps(out / "metrics.jsonl") == [1, 2, 3, 4]
    assert ckpt.read_text().strip() == "4"
    # Only the latest checkpoint keeps the optimizer state (trainer/run_folder/checkpoint_pruning.py); the resume
    # above read it from the checkpoint that was latest when the first run was killed.
    latest, older = out / "checkpoints" / "global_step_4", out / "checkpoints" / "global_step_3"
    assert (latest / "actor" / "optim_world_size_1_rank_0.pt").is_file()
    assert not list(older.rglob("optim_world_size_*")) and (older / "optimizer_dropped.txt").is_file()
    assert (older / "actor" / "model_world_size_1_rank_0.pt").is_file()
