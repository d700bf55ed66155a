"""The training examples of docs/trainer.md: a custom reward through RewardShaping, and your own dataset rows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import envs

REPO = Path(__file__).resolve().parents[2]


def test_reward_shaping_example_pays_the_envs_reward_minus_turn_cost_plus_win_bonus():
    from examples.reward_shaping import SHAPED_ID, TURN_COST, WIN_BONUS

    for seed in range(5):
        plain, shaped = (
            envs.make("guess-number-v0", difficulty="easy"),
            envs.make(SHAPED_ID, difficulty="easy"),
        )
        plain.reset(seed=seed)
        shaped.reset(seed=seed)
        done = False
        while not done:
            action = plain.unwrapped.expert_action()
            _, raw, terminated, truncated, plain_info = plain.step(action)
            _, reward, *_, info = shaped.step(action)
            bonus = WIN_BONUS if plain_info.get("success") else 0.0
            assert reward == pytest.approx(raw - TURN_COST + bonus)
            assert info["raw_reward"] == raw
            done = terminated or truncated
        assert plain_info["success"]
    # A reply the env cannot read: the format penalty still applies, after the shaping.
    shaped.reset(seed=0)
    _, reward, *_, info = shaped.step("no number here")
    assert info["format_error"] and reward == pytest.approx(-TURN_COST - envs.spec(SHAPED_ID).format_penalty)


def test_reward_shaping_example_prints_both_rewards():
    proc = subprocess.run(
        [sys.executable, "examples/reward_shaping.py", "--show"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("turn 1: guess") and "env reward 0.00  shaped -0.02" in first


def test_the_trainer_takes_the_shaped_env_only_with_its_module():
    from trainer.compose import ConfigError, compose_config, env_entries

    base = ["env.id=guess-number-shaped-v0", "trainer.device=cpu"]
    if "guess-number-shaped-v0" not in {s.id for s in envs.list_envs()}:  # another test may have imported it
        with pytest.raises(ConfigError, match="not registered"):
            compose_config(base)
    cfg = compose_config(base + ["turngym.import_modules=[examples.reward_shaping]"])
    # env.difficulty (easy in the embedded defaults) reaches the shaped id like the base env.
    assert env_entries(cfg) == [
        {"id": "guess-number-shaped-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}
    ]


def test_own_dataset_example_writes_rows_the_trainer_accepts(tmp_path):
    from trainer.checks.run_checks import apply_run_name, check_run
    from trainer.compose import compose_config
    from trainer.data.run_data import discard
    from trainer.run import stage_run

    proc = subprocess.run(
        [sys.executable, "examples/own_dataset.py", str(tmp_path / "my_rows")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.splitlines()[-1]
    assert command.startswith("python -m trainer.run data.train_files=")
    overrides = command.split()[3:]
    written = {p: p.read_bytes() for p in (tmp_path / "my_rows").iterdir()}

    cfg = compose_config(overrides + ["trainer.device=cpu", f"turngym.output_dir={tmp_path / 'out'}"])
    apply_run_name(cfg)
    assert cfg.turngym.output_dir == str(tmp_path / "out" / "runs" / "my-rows")
    check_run(cfg)
    staged = stage_run(cfg)
    try:
        by_name = {target.name: source for source, target in staged.moves.items()}
        train = pd.read_parquet(by_name["train.parquet"])
        kinds = [(i["env_id"], json.loads(i["env_kwargs"]).get("difficulty")) for i in train["extra_info"]]
        assert kinds.count(("guess-number-v0", "hard")) == 16 and kinds.count(("maze-v0", None)) == 8
    finally:
        discard(staged)
    assert {p: p.read_bytes() for p in (tmp_path / "my_rows").iterdir()} == written


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_named_run_trains_on_own_rows_of_the_shaped_env(tmp_path):
    """Both examples in one real run at the smallest size: own rows, a shaped env id, a run name."""
    rows = tmp_path / "rows.parquet"
    pd.DataFrame(
        {
            "env_id": ["guess-number-shaped-v0"] * 4 + ["maze-v0"] * 4,
            "seed": [0, 1, 2, 3, 0, 1, 2, 3],
            "env_kwargs": ['{"difficulty": "easy"}'] * 4 + ['{"difficulty": "easy"}'] * 4,
        }
    ).to_parquet(rows)
    val = tmp_path / "val.parquet"
    pd.DataFrame({"env_id": ["guess-number-shaped-v0", "maze-v0"], "seed": [100, 100]}).to_parquet(val)
    mine = rows.read_bytes()
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.run",
            f"data.train_files={rows}",
            f"data.val_files={val}",
            "turngym.import_modules=[examples.reward_shaping]",
            "turngym.run_name=shaped-rows",
            f"turngym.output_dir={out}",
            "trainer.total_training_steps=1",
            "trainer.test_freq=-1",
            "trainer.val_before_train=false",
            "turngym.warm_start.enable=false",
            "data.train_batch_size=4",
            "actor_rollout_ref.rollout.n=2",
            "actor_rollout_ref.actor.ppo_mini_batch_size=4",
            "data.max_response_length=128",
            "trainer.logger=[console]",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = out / "runs" / "shaped-rows"
    assert f"data.train_files: your rows from {rows}" in proc.stdout
    # Every episode was played (a row whose env the workers could not build fails with 0 turns): the
    # workers imported examples.reward_shaping through turngym.import_modules.
    found = re.search(r"num_turns/min:(?:np\.\w+\()?(\d+)", (run / "train.log").read_text(errors="replace"))
    assert found and int(found.group(1)) > 0
    assert (run / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    train = pd.read_parquet(run / "data" / "train.parquet")
    assert {i["env_id"] for i in train["extra_info"]} == {"guess-number-shaped-v0", "maze-v0"}
    assert rows.read_bytes() == mine
    assert not (out / "data").exists()  # the default run's folder was not used
    record = json.loads((run / "run.json").read_text())
    assert {e["id"] for e in record["env"]} == {"guess-number-shaped-v0", "maze-v0"}
