"""Checks before trainer.run writes anything: model paths, registry names, a run folder's own settings."""

from __future__ import annotations

import json

import pytest

from trainer.checks.run_checks import (
    RUN_RECORD,
    check_model_dir,
    check_run,
    check_run_folder,
    write_run_record,
)
from trainer.compose import ConfigError, compose_config

BASE = ["env.id=guess-number-v0", "trainer.device=cpu", "env.train_episodes=4", "env.val_episodes=2"]


def _cfg(tmp_path, *extra: str):
    return compose_config(BASE + [f"turngym.output_dir={tmp_path}", *extra])


def _checkpoint(tmp_path, step: int, critic: bool = False) -> None:
    ckpt = tmp_path / "checkpoints"
    (ckpt / f"global_step_{step}" / "actor").mkdir(parents=True)
    if critic:
        (ckpt / f"global_step_{step}" / "critic").mkdir()
    (ckpt / "latest_checkpointed_iteration.txt").write_text(str(step))


def test_missing_model_path_is_one_line_and_nothing_is_written(tmp_path, capsys, run_trainer):
    data = tmp_path / "data" / "train.parquet"
    data.parent.mkdir()
    data.write_bytes(b"rows of an earlier run")
    code = run_trainer(BASE + [f"turngym.output_dir={tmp_path}", "model=/nonexistent"])
    err = capsys.readouterr().err
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(
        "trainer.run: model=/nonexistent: the path does not exist and it is no model name; give a Hugging "
        "Face model directory"
    ), line
    assert "smollm2-135m-instruct (" in line and "embedded (the embedded tiny model)" in line, line
    assert data.read_bytes() == b"rows of an earlier run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_model_dir_needs_a_config_and_a_tokenizer(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        (tmp_path / "f").write_text("x")
        check_model_dir(str(tmp_path / "f"))
    with pytest.raises(ConfigError, match="no config.json"):
        check_model_dir(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="no tokenizer"):
        check_model_dir(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{}")
    check_model_dir(str(tmp_path))
    # A Hub id not in the local cache: turngym downloads nothing at run time, the line says how to fetch it.
    with pytest.raises(ConfigError, match="hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir"):
        check_model_dir("Qwen/Qwen2.5-0.5B-Instruct")


def test_a_verl_checkpoint_is_not_a_model_dir_and_the_message_says_how_to_evaluate_it(tmp_path):
    (tmp_path / "huggingface").mkdir()
    with pytest.raises(ConfigError, match="rollout.eval"):
        check_model_dir(str(tmp_path))


def test_resuming_with_another_algorithm_is_refused_naming_what_differs(tmp_path):
    write_run_record(_cfg(tmp_path))
    _checkpoint(tmp_path, 16)
    with pytest.raises(ConfigError) as info:
        check_run(_cfg(tmp_path, "algorithm=ppo", "trainer.total_training_steps=2"))
    message = str(info.value)
    assert "algorithm.adv_estimator grpo -> gae" in message and "critic False -> True" in message
    assert "turngym.output_dir=" in message and "trainer.resume_mode=disable" in message
    assert "\n" not in message
    # Same settings resume; disable starts afresh in the same folder.
    check_run(_cfg(tmp_path))
    check_run_folder(_cfg(tmp_path, "algorithm=ppo", "trainer.resume_mode=disable"))


def test_env_kwargs_and_model_are_part_of_the_run(tmp_path):
    write_run_record(_cfg(tmp_path, "env.kwargs.difficulty=hard"))
    _checkpoint(tmp_path, 2)
    with pytest.raises(ConfigError, match="'difficulty': 'hard'"):
        check_run_folder(_cfg(tmp_path))  # the embedded model's default is easy
    model = tmp_path / "m"
    model.mkdir()
    with pytest.raises(ConfigError, match="model embedded ->"):
        check_run_folder(_cfg(tmp_path, "env.kwargs.difficulty=hard", f"model={model}"))
    assert json.loads((tmp_path / RUN_RECORD).read_text())["algorithm.adv_estimator"] == "grpo"
    assert (tmp_path / "config.yaml").exists()


def test_a_folder_from_before_the_record_is_read_from_its_checkpoint(tmp_path):
    _checkpoint(tmp_path, 16, critic=False)
    with pytest.raises(ConfigError, match="critic False -> True"):
        check_run_folder(_cfg(tmp_path, "algorithm=ppo"))
    check_run_folder(_cfg(tmp_path))


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("algorithm.adv_estimator=my_est", "registered: gae"),
        ("actor_rollout_ref.actor.policy_loss.loss_mode=nope", "registered: "),
        ("reward.reward_manager.name=nope", "naive"),
    ],
)
def test_registry_names_are_checked_before_ray(override, needle):
    with pytest.raises(ConfigError, match=needle):
        compose_config(["env=text-game", "trainer.device=cpu", override])


def test_registered_estimators_pass_including_turngyms_own():
    from trainer.estimators.registry import ESTIMATORS

    for name in ("rloo", *ESTIMATORS):
        assert compose_config(["env=text-game", "trainer.device=cpu", f"algorithm.adv_estimator={name}"])
