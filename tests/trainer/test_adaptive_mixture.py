"""The adaptive mixture: bounded weights, the teaching score, row picks, checkpoints, config checks, and
the per-env rates a step's outcomes give it."""

from __future__ import annotations

import pytest

from trainer.data.step_outcomes import StepOutcome, flat_group_rates, pass_rates
from trainer.hooks.mixture.adaptive import STATE_FILE, AdaptiveMixture, MixtureConfig, bounded_weights

BASE = {"guess-number-v0": 0.4, "wordle-v0": 0.2, "maze-v0": 0.2, "tic-tac-toe-v0": 0.2}


def test_bounded_weights_sum_to_one_within_floor_and_cap():
    for raw in (
        {"a": 100.0, "b": 1.0, "c": 0.0, "d": 0.0},
        {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0},
        {"a": 0.0},
    ):
        weights = bounded_weights(raw, floor=0.1, cap=0.5) if len(raw) > 1 else bounded_weights(raw, 0.0, 1.0)
        assert sum(weights.values()) == pytest.approx(1.0)
        if len(raw) > 1:
            assert all(0.1 - 1e-9 <= w <= 0.5 + 1e-9 for w in weights.values())


def test_an_env_that_teaches_gains_weight_from_flat_ones_within_the_bounds():
    mix = AdaptiveMixture(MixtureConfig(enable=True, smoothing=1.0), BASE)
    assert mix.weights() == pytest.approx(BASE)
    lines = mix.update(
        {
            "guess-number-v0": (0.5, 0.0),  # every group has a spread: teaches fully
            "wordle-v0": (0.0, 1.0),  # all lost, all flat: teaches nothing
            "maze-v0": (0.0, 1.0),
            "tic-tac-toe-v0": (0.25, 0.5),
        }
    )
    weights = mix.weights()
    assert lines and lines[0].startswith("mixture weights: ")
    assert weights["guess-number-v0"] == pytest.approx(0.5)  # capped
    assert weights["wordle-v0"] == weights["maze-v0"] == pytest.approx(0.1)  # the floor keeps them tried
    assert weights["tic-tac-toe-v0"] == pytest.approx(0.3)
    assert sum(weights.values()) == pytest.approx(1.0)


def test_smoothing_keeps_part_of_the_old_score_and_absent_envs_keep_theirs():
    mix = AdaptiveMixture(MixtureConfig(enable=True, smoothing=0.5), BASE)
    mix.update({"wordle-v0": (0.0, 1.0)})
    assert mix.scores["wordle-v0"] == pytest.approx(0.5)
    assert mix.scores["maze-v0"] == 1.0


def test_row_picks_follow_the_weights_and_are_deterministic():
    mix = AdaptiveMixture(MixtureConfig(enable=True), BASE)
    picks = [mix.env_for(seed) for seed in range(4000)]
    assert picks.count("guess-number-v0") / 4000 == pytest.approx(0.4, abs=0.03)
    assert picks == [mix.env_for(seed) for seed in range(4000)]


def test_checkpoint_round_trip(tmp_path):
    mix = AdaptiveMixture(MixtureConfig(enable=True, smoothing=1.0), BASE)
    mix.update({"wordle-v0": (0.0, 1.0), "maze-v0": (0.5, 0.0)})
    mix.save(tmp_path)
    assert (tmp_path / STATE_FILE).exists()
    again = AdaptiveMixture(MixtureConfig(enable=True, smoothing=1.0), BASE)
    assert again.load(tmp_path) and again.weights() == mix.weights()
    assert not again.load(tmp_path / "nothing")


def test_metrics_name_every_env():
    mix = AdaptiveMixture(MixtureConfig(enable=True), BASE)
    mix.update({"maze-v0": (0.5, None)})
    metrics = mix.metrics(["maze-v0", "maze-v0", "wordle-v0"])
    assert metrics["mixture/maze-v0/share"] == pytest.approx(2 / 3)
    assert metrics["mixture/maze-v0/flat_groups"] == -1.0  # no group of two
    assert set(k.rsplit("/", 1)[0] for k in metrics if k.endswith("/weight")) == {
        f"mixture/{e}" for e in BASE
    }


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"floor": 0.6, "cap": 0.5}, "need 0 <= floor < cap <= 1"),
        ({"smoothing": 0}, "smoothing must be in (0, 1]"),
        ({"pass_weight": 2}, "pass_weight must be in [0, 1]"),
        ({"cap": float("inf")}, "cap=inf is not a finite number"),
        ({"flor": 0.1}, "unknown keys ['flor']"),
    ],
)
def test_bad_settings_are_refused_in_one_line(values, needle):
    with pytest.raises(ValueError, match="turngym.mixture") as err:
        MixtureConfig.from_mapping(values)
    assert needle in str(err.value)


def test_bounds_no_mixture_can_meet_are_refused():
    with pytest.raises(ValueError, match="cannot hold 4 envs"):
        AdaptiveMixture(MixtureConfig(enable=True, floor=0.3, cap=0.5), BASE)
    with pytest.raises(ValueError, match="cannot hold 4 envs"):
        AdaptiveMixture(MixtureConfig(enable=True, floor=0.0, cap=0.2), BASE)


def test_config_check_refuses_before_anything_starts():
    from trainer.checks.config_error import ConfigError
    from trainer.compose import check_config, compose_config

    with pytest.raises(ConfigError, match="floor=0.3 and cap=0.5 cannot hold 4 envs"):
        check_config(
            compose_config(["env=text-game", "turngym.mixture.enable=true", "turngym.mixture.floor=0.3"])
        )


def test_step_outcomes_give_pass_and_flat_group_rates_per_env():
    outcomes = [
        StepOutcome("maze-v0", "u1", False, 0.0),
        StepOutcome("maze-v0", "u1", False, 0.0),
        StepOutcome("wordle-v0", "u2", True, 1.0),
        StepOutcome("wordle-v0", "u2", False, 0.1),
    ]
    assert pass_rates(outcomes) == {"maze-v0": 0.0, "wordle-v0": 0.5}
    assert flat_group_rates(outcomes) == {"maze-v0": 1.0, "wordle-v0": 0.0}
