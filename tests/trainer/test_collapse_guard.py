"""turngym.health.on_collapse: flat groups or a collapsed entropy that last collapse_steps steps get
what the user configured (warn every step, halt, or adapt the sampling temperature), with an injected
collapse; the adapt bookkeeping of the trainer hook runs on a real HealthTrainerMixin."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rollout.episode_result import EpisodeResult
from trainer.checks.config_error import ConfigError
from trainer.hooks.health.guards import HealthGuard
from trainer.hooks.health.hook import ADAPT_FILE, HealthTrainerMixin, adapted_temperature
from trainer.hooks.health.metrics import step_health

FLAT = {"health/groups_all_equal": 1.0}
HEALTHY = {"health/groups_all_equal": 0.25}


def _flat_step() -> dict[str, float]:
    """A real step's health metrics where every group of four got the same reward (injected collapse)."""
    fields = [EpisodeResult(termination="terminated", assistant_turns=2).to_extra_fields() for _ in range(8)]
    return step_health(fields, [0.0] * 4 + [1.0] * 4, [str(i // 4) for i in range(8)])


def test_warn_repeats_its_line_every_step_the_collapse_lasts():
    guard = HealthGuard.from_config({"on_collapse": "warn", "collapse_steps": 2})
    metrics = _flat_step()
    assert metrics["health/groups_all_equal"] == 1.0
    for step in (1, 2, 3, 4):
        lines, halt = guard.check(step, metrics)
        assert halt is None and guard.adapt_due is None
        assert len(lines) == 1 and f"at step {step}: health/groups_all_equal 1 > 0.9" in lines[0]
        assert f"{step} step(s) in a row (on_collapse=warn acts after 2)" in lines[0]
    # a healthy step ends the streak; the next collapse counts from one again
    assert guard.check(5, HEALTHY) == ([], None)
    assert "1 step(s) in a row" in guard.check(6, FLAT)[0][0]


def test_halt_stops_after_collapse_steps_in_a_row():
    guard = HealthGuard.from_config({"on_collapse": "halt", "collapse_steps": 3})
    assert guard.check(1, FLAT)[1] is None
    assert guard.check(2, FLAT)[1] is None
    lines, halt = guard.check(3, FLAT)
    assert lines == []
    assert halt.startswith("health/groups_all_equal 1 > 0.9") and halt.endswith(
        "3 steps in a row (on_collapse=halt)"
    )
    # entropy is a collapse metric too
    guard = HealthGuard.from_config({"on_collapse": "halt", "collapse_steps": 1})
    assert guard.check(1, {"health/entropy": 0.001})[1].startswith("health/entropy 0.001 < 0.05")


def test_adapt_is_due_only_once_the_collapse_lasted():
    guard = HealthGuard.from_config({"collapse_steps": 2})  # adapt is the default
    assert guard.collapse.mode == "adapt"
    guard.check(1, FLAT)
    assert guard.adapt_due is None
    guard.check(2, FLAT)
    assert guard.adapt_due.startswith("health/groups_all_equal 1 > 0.9")
    guard.check(3, HEALTHY)
    assert guard.adapt_due is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("on_collapse", "panic", "on_collapse='panic': give one of warn, halt, adapt"),
        ("collapse_steps", 0, "collapse_steps=0: give a whole number from 1 to 1000"),
        ("collapse_steps", 2.5, "collapse_steps=2.5"),
        ("adapt_temperature_step", float("nan"), "adapt_temperature_step=nan: give a number in"),
        ("adapt_max_temperature", 1e308, "adapt_max_temperature=1e\\+308: give a number in"),
    ],
)
def test_bad_collapse_settings_are_one_line_errors(key, value, message):
    with pytest.raises(ConfigError, match=message):
        HealthGuard.from_config({key: value})


class _Base:
    """The part of verl's PPOTrainer the hook calls (constructor only): the hook's own logic runs as is."""

    def __init__(self, config, **kwargs):
        self.config = config


class _Trainer(HealthTrainerMixin, _Base):
    pass


def _trainer(**health):
    config = OmegaConf.create(
        {
            "turngym": {"health": health, "output_dir": "unused"},
            "actor_rollout_ref": {"rollout": {"temperature": 1.0}},
        }
    )
    return _Trainer(config=config)


def test_adapt_raises_the_temperature_within_its_bound_and_says_so(capsys):
    trainer = _trainer(collapse_steps=1, adapt_temperature_step=0.2, adapt_max_temperature=1.5)
    seen = []
    for step in range(1, 6):
        trainer._check_health(step, FLAT)
        seen.append(trainer.sampling_temperature)
    assert seen == [1.2, 1.4, 1.5, 1.5, 1.5]
    # the actor scores the samples at the temperature that drew them
    assert trainer.config.actor_rollout_ref.rollout.temperature == 1.5
    out = capsys.readouterr().out
    assert "training samples at temperature 1 -> 1.2 (bound 1.5) from the next step" in out
    assert "is at its bound 1.5" in out and "nothing left to adapt" in out
    # healthy steps bring it back by half a step each, never below the configured temperature
    for step in range(6, 12):
        trainer._check_health(step, HEALTHY)
    assert trainer.sampling_temperature == 1.0
    assert trainer._health_halt is None


def test_warn_and_halt_leave_the_temperature_alone():
    for mode in ("warn", "halt"):
        trainer = _trainer(on_collapse=mode, collapse_steps=1)
        trainer._keep_checkpoint = lambda step: None  # no verl trainer here to save one
        for step in (1, 2, 3):
            trainer._check_health(step, FLAT)
        assert trainer.sampling_temperature == 1.0
        assert (trainer._health_halt is not None) == (mode == "halt")


def test_the_adapted_temperature_file_is_data(tmp_path):
    (tmp_path / ADAPT_FILE).write_text('{"sampling_temperature": 1.3}')
    assert adapted_temperature(tmp_path) == 1.3
    for hostile in ('{"sampling_temperature": 1e308}', '{"sampling_temperature": true}', "[]", "nan"):
        (tmp_path / ADAPT_FILE).write_text(hostile)
        assert adapted_temperature(tmp_path) is None
    assert adapted_temperature(tmp_path / "missing") is None


def test_the_sampled_entropy_is_minus_the_mean_log_prob_of_generated_tokens():
    import numpy as np
    import torch

    from trainer.hooks.health.hook import sampled_entropy
    from trainer.hooks.health.metrics import step_health

    logprobs = torch.tensor([[-1.0, -3.0, 0.0], [-0.5, 0.0, 0.0], [-9.0, -9.0, -9.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    keep = np.array([True, True, False])  # the third row is padding
    assert sampled_entropy(logprobs, mask, keep) == pytest.approx((1.0 + 3.0 + 0.5) / 3)
    assert sampled_entropy(None, mask, keep) is None
    assert sampled_entropy(logprobs, torch.zeros_like(mask), keep) is None
    # it feeds the entropy guard when verl computed no entropy of its own; verl's wins when it did
    fields = [EpisodeResult(termination="terminated", assistant_turns=2).to_extra_fields()] * 2
    assert (
        step_health(fields, [0.0, 1.0], None, 0, {"turngym/sampled_entropy": 0.01})["health/entropy"] == 0.01
    )
    both = {"turngym/sampled_entropy": 0.01, "actor/entropy_loss": 0.7}
    assert step_health(fields, [0.0, 1.0], None, 0, both)["health/entropy"] == 0.7


def test_a_linked_adapt_file_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text('{"sampling_temperature": 1.4}')
    (tmp_path / ADAPT_FILE).symlink_to(victim)
    assert adapted_temperature(tmp_path) is None
