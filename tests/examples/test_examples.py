"""The examples a new user copies: the custom env and the YAML-registered tool work as documented."""

from __future__ import annotations

import asyncio

from gymnasium.utils.env_checker import check_env

import envs
import tools


def test_custom_env_registers_and_its_expert_solves_it():
    import examples.custom_env  # noqa: F401 - registers countdown-v0

    assert "countdown-v0" in [spec.id for spec in envs.list_envs()]
    env = envs.make("countdown-v0")
    check_env(env.unwrapped)
    _, _ = env.reset(seed=3)
    _, reward, terminated, _, info = env.step(env.unwrapped.expert_action())
    assert terminated and reward == 1.0 and info["success"]
    env.reset(seed=3)
    _, reward, terminated, truncated, _ = env.step("not a number")
    assert reward < 1.0 and not terminated and not truncated


def test_yaml_tool_is_offered_and_runs_inside_an_env():
    from examples.custom_tool import TOOLS_YAML

    (percent,) = tools.load_tools(TOOLS_YAML)
    assert percent.schema["function"]["name"] == "percent_of"
    assert set(percent.schema["function"]["parameters"]["properties"]) == {"percent", "value"}
    assert asyncio.run(percent.call({"percent": 15, "value": 200})).content == "30"

    env = envs.make("calculator-qa-v0", tools=str(TOOLS_YAML))
    assert "percent_of" in [s["function"]["name"] for s in env.unwrapped.tool_schemas]
    env.reset(seed=0)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "percent_of", "arguments": '{"percent": 50, "value": 8}'},
    }
    messages, _, _, _, info = env.step({"role": "assistant", "content": "", "tool_calls": [call]})
    assert messages[0]["role"] == "tool" and messages[0]["content"] == "4"
    assert info["tool_errors"] == 0


def test_a_custom_env_plays_from_the_command_line_with_import(capsys, monkeypatch):
    from envs.__main__ import main

    answers = iter(["23"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(answers))
    assert main(["play", "countdown-v0", "--import", "examples.custom_env", "--seed", "1"]) == 0
    assert "Episode over" in capsys.readouterr().out
    assert main(["list", "--import", "no_such_module_xyz"]) == 2
    assert "--import no_such_module_xyz" in capsys.readouterr().err


def test_evaluate_example_runs_a_runs_envs_from_its_folder(tmp_path, capsys):
    import json
    import shutil
    import sys
    from pathlib import Path

    from turngym.engines.checkpoint_export import COMPLETE, export_stamp, export_target
    from turngym.engines.embedded_model import build_embedded_model

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import evaluate
    finally:
        sys.path.pop(0)
    step = tmp_path / "checkpoints" / "global_step_2"
    (step / "actor").mkdir(parents=True)
    (step / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"")
    (tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("2")
    exported = export_target(step / "actor")
    shutil.copytree(build_embedded_model(), exported)  # as verl's merger leaves it
    (exported / COMPLETE).write_text(json.dumps(export_stamp(step / "actor")))
    (tmp_path / "run.json").write_text(
        json.dumps({"env": [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}]})
    )
    (tmp_path / "config.yaml").write_text("data:\n  max_response_length: 64\n")
    assert evaluate.main([str(tmp_path), "n=2"]) == 0
    out = capsys.readouterr().out
    assert f"exported {tmp_path} -> {tmp_path / 'export' / 'global_step_2'}" in out
    assert "max_response_tokens=64" in out and "reward_mean" in out


def test_custom_algorithm_registers_and_the_trainer_checks_it_before_ray():
    import numpy as np
    import pytest
    import torch

    from trainer.compose import ConfigError, compose_config

    overrides = [
        "env=text-game",
        "trainer.device=cpu",
        "algorithm.adv_estimator=mean_baseline",
        "actor_rollout_ref.actor.policy_loss.loss_mode=clipped_mean",
    ]
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    if "mean_baseline" not in ADV_ESTIMATOR_REGISTRY:  # another test may have imported it already
        with pytest.raises(ConfigError, match="mean_baseline"):
            compose_config(overrides)
    cfg = compose_config(overrides + ["turngym.import_modules=[examples.custom_algorithm]"])
    assert cfg.algorithm.adv_estimator == "mean_baseline"

    from examples.custom_algorithm import compute_clipped_mean_loss, compute_mean_baseline_advantage

    rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0], [0.0, 3.0]])
    mask = torch.ones(3, 2)
    adv, _ = compute_mean_baseline_advantage(rewards, mask, np.array(["a", "a", "b"]))
    assert torch.allclose(adv[:, 0], torch.tensor([0.5, -0.5, 0.0]))
    from omegaconf import OmegaConf

    actor = OmegaConf.create(
        {
            "clip_ratio": 0.2,
            "clip_ratio_low": None,
            "clip_ratio_high": None,
            "clip_ratio_c": 3.0,
            "global_batch_info": {},
        }
    )
    loss, _ = compute_clipped_mean_loss(torch.zeros(3, 2), torch.zeros(3, 2), adv, mask, config=actor)
    assert torch.isfinite(loss)
