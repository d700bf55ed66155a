"""The curriculum by pass rate: moves toward the target, bounds, deterministic picks, checkpoint round trip,
the ladders of the text games, and the rows it rewrites."""

from __future__ import annotations

import pytest

from trainer.compose import compose_config, env_entries
from trainer.hooks.curriculum.pass_rate import STATE_FILE, PassRateConfig, PassRateCurriculum
from trainer.hooks.curriculum.rows import env_ladders, ladder_opening_rows
from trainer.hooks.curriculum.schedule import CurriculumConfig

LADDERS = {
    "maze-v0": [{"size": 2}, {"size": 3}, {"size": 4}, {"size": 5}, {}],
    "wordle-v0": [{"pool": 2}, {}],
}


def _curriculum(**settings) -> PassRateCurriculum:
    return PassRateCurriculum(PassRateConfig(**{"min_episodes": 4, **settings}), LADDERS)


def test_a_winning_env_moves_up_a_losing_one_down_and_one_near_target_holds():
    cur = _curriculum(start=0.5)
    assert cur.position("maze-v0") == 2.0 and cur.position("wordle-v0") == 0.5
    cur.update([("maze-v0", True)] * 4 + [("wordle-v0", False)] * 4)
    assert cur.position("maze-v0") == 3.0 and cur.position("wordle-v0") == 0.0
    cur.update([("maze-v0", True), ("maze-v0", False), ("maze-v0", True), ("maze-v0", False)])
    assert cur.position("maze-v0") == 3.0  # 50 %: within the band, no move


def test_moves_are_proportional_bounded_by_max_step_and_by_the_ladder():
    cur = _curriculum(gain=0.5, max_step=0.4)
    cur.update([("maze-v0", True)] * 3 + [("maze-v0", False)])  # 75 %: 0.5 x 2 x 0.25 = 0.25
    assert cur.position("maze-v0") == pytest.approx(0.25)
    for _ in range(20):
        cur.update([("maze-v0", True)] * 4)  # each move at most 0.4
    assert cur.position("maze-v0") == 4.0  # never past the top
    cur.update([("maze-v0", False)] * 4)
    assert cur.position("maze-v0") == pytest.approx(3.6)
    for _ in range(20):
        cur.update([("maze-v0", False)] * 4)
    assert cur.position("maze-v0") == 0.0


def test_outcomes_gather_across_steps_until_min_episodes():
    cur = _curriculum()
    assert cur.update([("maze-v0", True)] * 3) == []
    assert cur.update([("maze-v0", True)]) == ["maze-v0 level 0.00 -> 1.00 (pass rate 1.00)"]


def test_a_fractional_position_splits_rows_between_two_levels_by_seed():
    cur = _curriculum(start=0.0)
    cur.envs["maze-v0"].position = 1.3
    levels = [cur.level("maze-v0", seed) for seed in range(2000)]
    assert set(levels) == {1, 2}
    assert sum(levels) / len(levels) == pytest.approx(1.3, abs=0.03)  # the mean level is the position
    assert levels == [cur.level("maze-v0", seed) for seed in range(2000)]  # same state, same picks
    assert cur.level_kwargs("maze-v0", 0) in ({"size": 3}, {"size": 4})
    assert cur.level("guess-number-v0", 0) is None


def test_checkpoint_round_trip_continues_identically(tmp_path):
    cur = _curriculum()
    cur.update([("maze-v0", True)] * 4 + [("wordle-v0", True)] * 2)
    cur.save(tmp_path)
    assert (tmp_path / STATE_FILE).exists()
    again = _curriculum()
    assert again.load(tmp_path)
    assert again.state_dict() == cur.state_dict()
    assert [again.level("maze-v0", s) for s in range(50)] == [cur.level("maze-v0", s) for s in range(50)]
    assert not _curriculum().load(tmp_path / "nothing")


def test_metrics_report_position_top_pass_rate_and_level_played():
    cur = _curriculum()
    cur.update([("maze-v0", True)] * 4)
    metrics = cur.metrics([("maze-v0", 1), ("maze-v0", 0)])
    assert metrics["curriculum/maze-v0/level"] == 1.0
    assert metrics["curriculum/maze-v0/top_level"] == 4.0
    assert metrics["curriculum/maze-v0/pass_rate"] == 1.0
    assert metrics["curriculum/maze-v0/level_played"] == 0.5
    assert metrics["curriculum/wordle-v0/pass_rate"] == -1.0  # not judged yet


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"target": 1.0}, "target must be in (0, 1)"),
        ({"band": 0.6}, "band must be in"),
        ({"max_step": 0}, "max_step must be in"),
        ({"min_episodes": 0}, "min_episodes must be in"),
        ({"start": 2}, "start must be in [0, 1]"),
        ({"gain": float("nan")}, "gain=nan is not a finite number"),
        ({"targte": 0.5}, "unknown keys ['targte']"),
    ],
)
def test_bad_settings_are_refused_in_one_line(values, needle):
    with pytest.raises(ValueError, match="turngym.curriculum.pass_rate") as err:
        PassRateConfig.from_mapping(values)
    assert needle in str(err.value)


def test_schedule_is_checked():
    assert CurriculumConfig.from_mapping({"schedule": "pass_rate"}).schedule == "pass_rate"
    with pytest.raises(ValueError, match="schedule must be one of"):
        CurriculumConfig.from_mapping({"schedule": "fast"})


def test_the_text_games_ladders_end_at_the_runs_difficulty():
    cfg = compose_config(["env=text-game-curriculum"])
    ladders = env_ladders(env_entries(cfg))
    assert {e: len(lad) for e, lad in ladders.items()} == {
        "guess-number-v0": 5,
        "wordle-v0": 10,
        "maze-v0": 5,
        "tic-tac-toe-v0": 2,
    }
    assert all(ladder[-1] == {} for ladder in ladders.values())


def test_ladder_openings_cover_every_level_below_the_game():
    from rollout.episode_row import EpisodeRow

    row = EpisodeRow("wordle-v0", 3, {"difficulty": "easy", "action_tool": False}).to_row()
    copies = [
        EpisodeRow.from_row(r) for r in ladder_opening_rows([row], {"wordle-v0": [{"revealed": 2}, {}]})
    ]
    assert len(copies) == 1 and copies[0].env_kwargs["revealed"] == 2
    assert "A hint" in copies[0].prompt[-1]["content"]
