"""Did-you-mean for override keys, on a small config (no Hydra compose needed)."""

from __future__ import annotations

from omegaconf import OmegaConf

from trainer.checks.config_suggest import check_override_keys, close_keys, config_keys, unknown_key_message

CFG = OmegaConf.create(
    {
        "trainer": {"total_training_steps": 16, "total_epochs": 1, "save_freq": 8},
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-5}, "ppo_epochs": 1, "shuffle": False}},
        "env": {"mixture": [{"id": "x"}], "kwargs": {}},
        "critic": {"enable": None},
    }
)
KEYS = config_keys(CFG)
GROUPS = ("env", "algorithm")


def test_keys_are_every_dotted_path_but_list_items():
    assert {"trainer.total_training_steps", "actor_rollout_ref.actor.optim.lr", "critic.enable"} <= KEYS
    assert "env.mixture" in KEYS and not any(k.startswith("env.mixture.") for k in KEYS)


def test_close_keys_prefer_siblings_and_ignore_long_shared_prefixes():
    assert close_keys("trainer.total_training_step", KEYS) == ["trainer.total_training_steps"]
    assert close_keys("actor_rollout_ref.actor.no_such_key", KEYS) == []
    assert close_keys("actor_rollout_ref.actor.lr", KEYS) == ["actor_rollout_ref.actor.optim.lr"]


def test_messages_advise_plus_only_when_nothing_is_close():
    near = unknown_key_message("trainer.save_frq", KEYS)
    assert near == "unknown key 'trainer.save_frq'; did you mean trainer.save_freq?"
    far = unknown_key_message("trainer.zzz", KEYS)
    assert "+trainer.zzz=VALUE" in far and "under 'trainer'" in far


def test_override_checks():
    assert "did you mean" in check_override_keys(["trainer.total_training_step=2"], KEYS, GROUPS)
    assert "beside trainer.total_training_steps" in check_override_keys(
        ["+trainer.total_training_step=2"], KEYS, GROUPS
    )
    ok = [
        "env=text-game",
        "env.kwargs.anything=1",
        "+trainer.brand_new=1",
        "~critic.enable",
        "trainer.save_freq=2",
    ]
    assert check_override_keys(ok, KEYS, GROUPS) is None
    # After Hydra accepted them, only '+' keys are second-guessed (list items are not in KEYS).
    assert check_override_keys(["env.mixture.0.id=y"], KEYS, GROUPS, plus_only=True) is None
