"""Behaviour counts ride in reward_extra_info with the same keys on every row and come back as rates."""

import pytest

from rollout.agent_loop import behaviour_columns
from trainer.report.behaviour_metrics import batch_behaviour, validation_behaviour, validation_source_lines


def test_every_row_gets_the_same_behaviour_columns_whatever_its_env():
    guess = behaviour_columns({"guesses": 3, "followed": 1, "after_feedback": 2})
    other = behaviour_columns(None)  # wordle, a tool env, a failed episode: no counts
    assert guess.keys() == other.keys() and "behaviour_followed" in guess
    assert guess["behaviour_followed"] == 1.0 and set(other.values()) == {0.0}


def test_a_mixed_batch_pools_each_env_on_its_own():
    rows = [
        {
            "env_id": "guess-number-v0",
            "reward_extra_info": behaviour_columns({"followed": 3, "after_feedback": 4}),
        },
        {
            "env_id": "guess-number-v0",
            "reward_extra_info": behaviour_columns({"followed": 0, "after_feedback": 0}),
        },
        {"env_id": "wordle-v0", "reward_extra_info": behaviour_columns(None)},
        None,
    ]
    metrics = batch_behaviour(rows)
    assert metrics["turngym/behaviour/guess-number-v0/follow_rate"] == pytest.approx(0.75)
    assert not any("wordle" in k for k in metrics)  # no rates declared, nothing invented


def test_validation_rates_and_the_line_per_source():
    metrics = {
        "val-aux/guess-number-v0/success/mean@1": 0.5,
        "val-aux/guess-number-v0/behaviour_followed/mean@1": 2.0,
        "val-aux/guess-number-v0/behaviour_after_feedback/mean@1": 2.5,
        "val-aux/guess-number-v0/behaviour_repeats/mean@1": 0.3,
        "val-aux/guess-number-v0/behaviour_guesses/mean@1": 3.0,
        "val-aux/turngym/episodes": 64.0,
    }
    metrics.update(validation_behaviour(metrics))
    assert metrics["val-aux/guess-number-v0/behaviour/follow_rate"] == pytest.approx(0.8)
    assert metrics["val-aux/guess-number-v0/behaviour/repeat_rate"] == pytest.approx(0.1)
    (line,) = validation_source_lines(metrics)
    assert line.startswith("guess-number-v0: success 50.0% (95% 38%-62%)") and "follow 80%" in line


def test_the_games_behaviour_reaches_validation_metrics_and_the_final_table():
    import envs
    from trainer.report.behaviour_table import behaviour_table

    metrics, episodes = {}, {}
    for env_id, move in (("maze-v0", "up"), ("wordle-v0", "crane"), ("tic-tac-toe-v0", "5")):
        env = envs.make(env_id, difficulty="easy", action_tool=False)
        env.reset(seed=1)
        info = env.step(move)[4]
        for count, value in behaviour_columns(info["behaviour"]).items():
            metrics[f"val-aux/{env_id}/{count}/mean@1"] = value
        episodes[env_id] = [(env_id, 1, {"difficulty": "easy", "action_tool": False})]
    rates = validation_behaviour(metrics)
    assert rates["val-aux/wordle-v0/behaviour/legal_move_rate"] == 1.0
    assert rates["val-aux/wordle-v0/behaviour/repeat_rate"] == 0.0
    assert "val-aux/maze-v0/behaviour/legal_move_rate" in rates
    assert rates["val-aux/tic-tac-toe-v0/behaviour/legal_move_rate"] == 1.0
    table = behaviour_table([{"step": 0, **rates}], episodes, 6)
    lines = table.splitlines()
    assert lines[0].split() == ["env", "who", "legal_move", "repeat", "block"]
    assert [line.split()[1] for line in lines[1:4]] == ["step", "random", "expert"]
    assert sum(line.startswith("tic-tac-toe-v0") for line in lines) == 3  # step 0, random, expert
