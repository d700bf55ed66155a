"""End to end on CPU with the embedded model: a health guard in turngym.health.halt_on stops
`python -m trainer.run` cleanly (checkpoint of the step kept, reason in one line, exit code 3), and the
health metrics reach metrics.jsonl and the progress line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from small_run_args import QUIET, SMALL_RUN

from trainer.hooks.health.halt import HALT_EXIT_CODE

REPO = Path(__file__).resolve().parents[2]
SMALL = SMALL_RUN + QUIET


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_guard_in_halt_on_stops_the_run_with_a_checkpoint_and_exit_code_3(tmp_path):
    out = tmp_path / "run"
    # Injected collapse: any real entropy is below a threshold of 100 nats per token.
    cmd = [
        sys.executable,
        "-m",
        "trainer.run",
        "env=text-game",
        f"turngym.output_dir={out}",
        *SMALL,
        "trainer.total_training_steps=3",
        "turngym.health.entropy=100",
        "turngym.health.halt_on=[entropy]",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1100)
    log = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == HALT_EXIT_CODE, log
    reason = [line for line in proc.stderr.splitlines() if line.startswith("trainer.run: halted")]
    assert len(reason) == 1, log
    assert reason[0].startswith("trainer.run: halted by turngym.health.halt_on at step 1: health/entropy ")
    assert f"checkpoint kept: {out / 'checkpoints' / 'global_step_1'}" in reason[0]
    assert (out / "checkpoints" / "global_step_1" / "actor").is_dir()  # save_freq=-1: saved by the halt
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "train"] == [1]  # stopped before step 2
    train = records[0]
    for key in ("groups_all_equal", "format_error_rate", "episodes_cut", "response_tokens", "entropy"):
        assert f"health/{key}" in train, sorted(train)
    assert train["health/nonfinite_rewards"] == 0 and train["health/nonfinite_advantages"] == 0
    assert "turngym/groups/failed_left_out" in train
    assert "[turngym] step 1/3 | reward" in proc.stdout and "| entropy " in proc.stdout


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_on_collapse_adapt_raises_the_training_temperature_and_keeps_it_in_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    # Injected collapse: any real entropy is below 100 nats per token, on every step.
    cmd = [
        sys.executable,
        "-m",
        "trainer.run",
        "env=guess-number",
        f"turngym.output_dir={out}",
        *SMALL_RUN,
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=3",
        "turngym.warm_start.enable=false",
        "trainer.total_training_steps=3",
        "turngym.health.entropy=100",
        "turngym.health.on_collapse=adapt",
        "turngym.health.collapse_steps=1",
        "turngym.health.adapt_temperature_step=0.25",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1100)
    log = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, log
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    # each step reports the temperature its rollouts sampled at: raised after every collapsed step
    assert [r["health/sampling_temperature"] for r in train] == [1.0, 1.25, 1.5], log
    assert all(r["health/entropy"] < 100 for r in train)
    assert "collapse at step 1 (on_collapse=adapt): training samples at temperature 1 -> 1.25" in proc.stdout
    assert "is at its bound 1.5" in proc.stdout
    # warn lines repeat on every collapsed step
    assert [f"health warning at step {s}: health/entropy" in proc.stdout for s in (1, 2, 3)] == [True] * 3
    saved = json.loads((out / "checkpoints" / "global_step_3" / "health_adapt.json").read_text())
    assert saved == {"sampling_temperature": 1.5}
