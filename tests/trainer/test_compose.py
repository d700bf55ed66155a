"""Config composition: every env group and algorithm composes; bad input fails before Ray, naming choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.compose import ConfigError, compose_config, env_entries, group_choices

ENV_GROUPS = ["text-game", "code-sandbox", "math-tutor", "tool-use"]


@pytest.mark.parametrize("group", ENV_GROUPS)
def test_every_env_group_composes(group):
    cfg = compose_config([f"env={group}", "trainer.device=cpu"])
    assert cfg.env.name == group
    entries = env_entries(cfg)
    assert entries and all(e["weight"] > 0 for e in entries)
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "turngym"


def test_groups_on_disk_are_the_documented_ones():
    assert set(ENV_GROUPS) <= set(group_choices("env"))
    assert group_choices("algorithm") == ["grpo", "positive-grpo", "ppo", "turn-gigpo", "turn-grpo"]


def test_text_game_is_a_weighted_mixture_of_the_games():
    ids = {e["id"] for e in env_entries(compose_config(["env=text-game", "trainer.device=cpu"]))}
    assert ids == {"guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0"}


def test_single_env_id_with_kwargs():
    cfg = compose_config(["env.id=guess-number-v0", "env.kwargs.difficulty=easy", "trainer.device=cpu"])
    assert env_entries(cfg) == [{"id": "guess-number-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}]
    assert cfg.env.name == "guess-number-v0"


def test_grpo_is_default_and_ppo_adds_a_critic():
    grpo = compose_config(["env=text-game", "trainer.device=cpu"])
    assert grpo.algorithm.adv_estimator == "grpo" and grpo.actor_rollout_ref.rollout.n > 1
    ppo = compose_config(["env=text-game", "algorithm=ppo", "trainer.device=cpu"])
    assert ppo.algorithm.adv_estimator == "gae" and ppo.critic.enable is True


def test_cpu_forces_the_cpu_platform():
    cfg = compose_config(["env=text-game", "trainer.device=cpu"])
    assert cfg.trainer.device == "cpu"
    assert cfg.actor_rollout_ref.rollout.name == "hf"
    assert cfg.actor_rollout_ref.actor.strategy == "fsdp2"
    assert cfg.ray_kwargs.ray_init.num_gpus == cfg.trainer.n_gpus_per_node


def test_verl_keys_stay_overridable():
    cfg = compose_config(
        ["env=text-game", "trainer.device=cpu", "data.train_batch_size=4", "trainer.save_freq=3"]
    )
    assert cfg.data.train_batch_size == 4 and cfg.trainer.save_freq == 3


def test_keys_the_platform_adds_are_overridable_and_their_typos_named():
    """fsdp_config.mixed_precision exists only through platform/cpu.yaml: it overrides like verl's own keys."""
    key = "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype"
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", f"{key}=bf16"])
    assert cfg.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype == "bf16"
    assert cfg.actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype == "fp32"
    with pytest.raises(ConfigError, match=f"did you mean {key}"):
        compose_config(
            ["env=guess-number", "trainer.device=cpu", f"{key.replace('precision', 'precison')}=bf16"]
        )


def test_model_shortcut():
    cfg = compose_config(["env=text-game", "trainer.device=cpu", "model=/models/x"])
    assert cfg.actor_rollout_ref.model.path == "/models/x"


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["env=nope"], "text-game"),
        (["algorithm=dpo"], "grpo, ppo"),
        (["env.id=guess-numbr-v0"], "guess-number-v0"),
        (["actor_rollout_ref.actor.no_such_key=1"], "no_such_key"),
        (["trainer.device=tpu"], "auto, cpu, cuda"),
        (["notakeyvalue"], "key=value"),
        (
            [
                "trainer.device=cpu",
                "turngym.warm_start.engine=verl",
                'turngym.warm_start.overrides=["optim.no_such_key=1"]',
            ],
            "no_such_key",
        ),
        (["trainer.device=cpu", "turngym.warm_start.episodes=4"], "batch_size (16)"),
        (
            ["trainer.device=cpu", "turngym.warm_start.expert_share=0"],
            "expert_share must be in (0, 1], got 0.0",
        ),
        (
            ["trainer.device=cpu", "turngym.warm_start.expert_noise=1"],
            "expert_noise must be in [0, 1), got 1.0",
        ),
        (
            ["trainer.device=cpu", "turngym.warm_start.other_player=chatty"],
            "other_player must be one of random, talk, got 'chatty'",
        ),
        (["trainer.total_training_step=2"], "did you mean trainer.total_training_steps?"),
        (["+trainer.total_training_step=2"], "did you mean trainer.total_training_steps?"),
        (["trainer.total_training_steps=abc"], "abc"),
    ],
)
def test_bad_input_is_a_config_error_naming_choices(overrides, needle):
    with pytest.raises(ConfigError) as info:
        compose_config(overrides)
    assert needle in str(info.value)


def test_warm_start_overrides_reach_verls_sft_config():
    from trainer.warm_start.runner import sft_config

    cfg = compose_config(
        [
            "env=text-game",
            "trainer.device=cpu",
            "turngym.warm_start.engine=verl",
            'turngym.warm_start.overrides=["optim.lr_warmup_steps=3"]',
        ]
    )
    assert list(cfg.turngym.warm_start.overrides) == ["optim.lr_warmup_steps=3"]
    ws = cfg.turngym.warm_start
    sft = sft_config("m", Path("d.parquet"), Path("w"), "cpu", 1, 1e-3, 4, 0, 512, list(ws.overrides))
    assert sft.optim.lr_warmup_steps == 3 and sft.engine.mixed_precision.param_dtype == "fp32"


def test_misspelled_key_gets_no_plus_advice_and_unknown_ones_one_line():
    with pytest.raises(ConfigError) as info:
        compose_config(["trainer.total_training_step=2"])
    assert "+" not in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError) as info:
        compose_config(["trainer.zzz_qqq=1"])
    assert "+trainer.zzz_qqq=VALUE" in str(info.value)


def test_episode_budgets_come_from_rollout_unless_set():
    from rollout.episode_budgets import DEFAULT_BUDGETS, EMBEDDED_MODEL_BUDGETS

    for overrides, budgets in (([], EMBEDDED_MODEL_BUDGETS), (["model=/models/x"], DEFAULT_BUDGETS)):
        cfg = compose_config(["env=guess-number", "trainer.device=cpu", *overrides])
        assert cfg.data.max_response_length == budgets.max_response_tokens
        assert cfg.actor_rollout_ref.rollout.multi_turn.max_assistant_turns == budgets.max_turns
        assert cfg.turngym.max_tokens_per_turn == budgets.max_new_tokens
    # An explicit null (one turn may use the whole budget) is the user's, not a gap to fill.
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", "turngym.max_tokens_per_turn=null"])
    assert cfg.turngym.max_tokens_per_turn is None
    cfg = compose_config(["env=guess-number", "trainer.device=cpu", "data.max_response_length=300"])
    assert cfg.data.max_response_length == 300 and cfg.actor_rollout_ref.rollout.response_length == 300
