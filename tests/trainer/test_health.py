"""Training health (trainer/hooks/health/metrics.py, guards.py, halt.py): each pathology injected into a
step's real metric inputs (the rollout's extra_fields, scores, uids, verl's step metrics) gives its
health metric, its one warning line or its halt."""

from __future__ import annotations

import math

import pytest

from rollout.episode_result import EpisodeHealth, EpisodeResult
from trainer.checks.config_error import ConfigError
from trainer.hooks.health.guards import GUARDS, HealthGuard
from trainer.hooks.health.halt import HALT_EXIT_CODE, HealthHalt, clear_halt, halt_exit_code, write_halt
from trainer.hooks.health.metrics import step_health
from trainer.report.progress import progress_line


def _episode(turns=3, format_errors=0, tool_env=False, valid_tool_turns=0, termination="terminated"):
    """One episode's extra_fields as rollout/agent_loop.py writes them (an `EpisodeResult`)."""
    health = EpisodeHealth(tool_env, valid_tool_turns, drifted_turns=0, generated_tokens=10 * turns)
    result = EpisodeResult(
        termination=termination, assistant_turns=turns, format_errors=format_errors, health=health
    )
    return result.to_extra_fields()


def _healthy_step(n=8):
    fields = [_episode(tool_env=True, valid_tool_turns=2) for _ in range(n)]
    scores = [float(i % 2) for i in range(n)]
    uids = [str(i // 4) for i in range(n)]
    return fields, scores, uids


def _check(metrics, step=1, guard=None):
    guard = guard or HealthGuard()
    return guard.check(step, metrics)


def test_a_healthy_step_reports_every_metric_and_warns_nothing():
    fields, scores, uids = _healthy_step()
    metrics = step_health(fields, scores, uids, 0, {"actor/entropy": 1.2, "actor/kl_loss": 0.01})
    assert metrics["health/groups_all_equal"] == 0.0
    assert metrics["health/valid_tool_call_rate"] == pytest.approx(2 / 3)
    assert metrics["health/format_error_rate"] == 0.0
    assert metrics["health/response_tokens"] == 30.0
    assert metrics["health/entropy"] == 1.2 and metrics["health/kl"] == 0.01
    assert metrics["health/nonfinite_rewards"] == 0 and metrics["health/nonfinite_advantages"] == 0
    assert _check(metrics) == ([], None)


def test_a_policy_that_never_calls_tools_on_a_tool_env_warns():
    fields = [_episode(tool_env=True, valid_tool_turns=0) for _ in range(8)]
    metrics = step_health(fields, [0.0, 1.0] * 4, [str(i // 4) for i in range(8)])
    assert metrics["health/valid_tool_call_rate"] == 0.0
    lines, halt = _check(metrics, step=4)
    assert halt is None and len(lines) == 1
    assert lines[0].startswith(
        "[turngym] health warning at step 4: health/valid_tool_call_rate 0 < 0.05 "
        "(share of turns on tool envs that made a valid tool call)"
    )
    assert "turngym.health.valid_tool_call_rate" in lines[0] and "\n" not in lines[0]
    # a text env without tools has no such metric: nothing to warn about
    text_only = step_health([_episode() for _ in range(4)], [0.0, 1.0, 0.0, 1.0], ["a", "a", "b", "b"])
    assert "health/valid_tool_call_rate" not in text_only


def test_constant_rewards_warn_that_groups_carry_no_signal():
    fields = [_episode() for _ in range(8)]
    metrics = step_health(fields, [1.0] * 8, [str(i // 4) for i in range(8)])
    assert metrics["health/groups_all_equal"] == 1.0
    lines, halt = _check(metrics)
    assert halt is None and len(lines) == 1
    assert (
        "health/groups_all_equal 1 > 0.9 (share of GRPO groups whose samples all got the same reward"
        in lines[0]
    )
    assert "progress_line" not in lines[0]
    assert "flat groups 100%" in progress_line(1, 2, metrics)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_nonfinite_reward_halts_by_default(bad):
    fields, scores, uids = _healthy_step()
    scores[3] = bad
    metrics = step_health(fields, scores, uids, 0)
    assert metrics["health/nonfinite_rewards"] == 1.0
    lines, halt = _check(metrics, step=2)
    assert lines == []
    assert (
        halt
        == "health/nonfinite_rewards 1 > 0 (episodes with a NaN or infinite reward (left out of their group))"
    )
    assert "non-finite rewards 1" in progress_line(2, 5, metrics)


def test_a_nonfinite_advantage_halts_by_default():
    fields, scores, uids = _healthy_step()
    _, halt = _check(step_health(fields, scores, uids, nonfinite_advantage_rows=2))
    assert halt.startswith("health/nonfinite_advantages 2 > 0")


def test_entropy_collapse_warns_and_halts_when_listed():
    fields, scores, uids = _healthy_step()
    metrics = step_health(fields, scores, uids, 0, {"actor/entropy": 0.003})
    lines, halt = _check(metrics, step=9)
    assert halt is None
    assert lines == [
        "[turngym] health warning at step 9: health/entropy 0.003 < 0.05 (token entropy of the policy: it is "
        "collapsing to fixed replies), 1 step(s) in a row (on_collapse=adapt acts after 2); lower "
        "actor_rollout_ref.actor.optim.lr or add "
        "actor_rollout_ref.actor.entropy_coeff (threshold turngym.health.entropy)"
    ]
    guard = HealthGuard.from_config({"halt_on": ["entropy"]})
    lines, halt = guard.check(9, metrics)
    assert lines == [] and halt.startswith("health/entropy 0.003 < 0.05")
    # a NaN entropy counts as crossed
    _, halt = guard.check(10, step_health(fields, scores, uids, 0, {"actor/entropy": math.nan}))
    assert halt.startswith("health/entropy nan")


def test_a_run_of_failed_episodes_warns_once_then_halts_when_listed():
    fields, scores, uids = _healthy_step()
    fields[:6] = [EpisodeResult(failed=True).to_extra_fields() for _ in range(6)]
    metrics = step_health(fields, scores, uids, 0)
    assert metrics["health/episodes_failed"] == 0.75
    guard = HealthGuard()
    first, _ = guard.check(1, metrics)
    again, _ = guard.check(2, metrics)  # still failing: no second line
    assert len(first) == 1 and again == []
    assert (
        "health/episodes_failed 0.75 > 0.2 (share of episodes that failed (left out of training))" in first[0]
    )
    assert "failed 75%" in progress_line(1, 2, metrics)
    guard.check(3, step_health(*_healthy_step(), 0))  # recovered ...
    third, _ = guard.check(4, metrics)  # ... and crossed anew: one line again
    assert len(third) == 1
    _, halt = HealthGuard.from_config({"halt_on": ["episodes_failed"]}).check(1, metrics)
    assert halt.startswith("health/episodes_failed 0.75 > 0.2")


def test_cut_episodes_and_format_errors_are_rates_over_episodes_that_did_not_fail():
    fields = [_episode(termination="budget", format_errors=3), _episode(), _episode(termination="max_turns")]
    fields.append(EpisodeResult(failed=True).to_extra_fields())
    metrics = step_health(fields, [0.0] * 4, ["a"] * 4)
    assert metrics["health/episodes_cut"] == pytest.approx(2 / 3)
    assert metrics["health/format_error_rate"] == pytest.approx(3 / 9)
    assert metrics["health/episodes_failed"] == 0.25


def test_thresholds_and_halts_are_configurable_and_checked():
    guard = HealthGuard.from_config({"entropy": None, "format_error_rate": 0.1, "halt_on": []})
    assert guard.thresholds["entropy"] is None and guard.thresholds["format_error_rate"] == 0.1
    assert guard.halt_on == ()
    with pytest.raises(
        ConfigError, match="turngym.health.halt_on names 'entropi'; valid metrics: groups_all_equal"
    ):
        HealthGuard.from_config({"halt_on": ["entropi"]})
    with pytest.raises(ConfigError, match="turngym.health.entropy='low': give a finite number, or null"):
        HealthGuard.from_config({"entropy": "low"})
    with pytest.raises(ConfigError, match="halt_on lists token_drift whose threshold is null"):
        HealthGuard.from_config({"halt_on": ["token_drift"]})
    assert HealthGuard.from_config({"enable": False}).check(1, {"health/nonfinite_rewards": 3.0}) == (
        [],
        None,
    )
    assert set(GUARDS) == set(HealthGuard().thresholds)


def test_the_config_check_runs_before_anything_starts():
    from trainer.compose import compose_config

    with pytest.raises(ConfigError, match="turngym.health.halt_on names 'entropi'"):
        compose_config(["env=text-game", "trainer.device=cpu", "turngym.health.halt_on=[entropi]"])
    cfg = compose_config(["env=text-game", "trainer.device=cpu", "turngym.health.halt_on=[entropy]"])
    assert list(cfg.turngym.health.halt_on) == ["entropy"]


def test_a_halt_is_recorded_for_the_exit_code_and_cleared_by_the_next_run(tmp_path):
    assert halt_exit_code(tmp_path) == (0, None)
    halt = HealthHalt(7, "health/entropy 0.003 < 0.05 (...)", str(tmp_path / "checkpoints" / "global_step_7"))
    write_halt(tmp_path, halt)
    code, line = halt_exit_code(tmp_path)
    assert code == HALT_EXIT_CODE == 3
    assert line == halt.line() and "\n" not in line
    assert line.startswith("halted by turngym.health.halt_on at step 7: health/entropy 0.003 < 0.05")
    assert "checkpoint kept: " in line and "global_step_7" in line and "exit code 3" in line
    clear_halt(tmp_path)
    assert halt_exit_code(tmp_path) == (0, None)
