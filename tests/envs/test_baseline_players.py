"""The trivial players a model is put beside: random and expert on the same seeds, and their behaviour."""

import pytest

from envs.baselines.baseline_players import play_baseline
from envs.baselines.behaviour import pool_behaviour


def test_random_and_expert_on_the_same_seeds_are_reproducible_and_ordered():
    seeds = range(1000, 1064)
    kwargs = {"difficulty": "easy", "action_tool": False}
    random_a = play_baseline("guess-number-v0", "random", seeds, kwargs, max_turns=6)
    random_b = play_baseline("guess-number-v0", "random", seeds, kwargs, max_turns=6)
    expert = play_baseline("guess-number-v0", "expert", seeds, kwargs, max_turns=6)
    assert random_a == random_b  # same seeds, same draws
    # 6 uniform guesses on 1..20 win about 26 %; binary search always wins within 5.
    assert 0.1 < random_a.success_rate < 0.45 and expert.success_rate == 1.0
    assert expert.behaviour["follow_rate"] == expert.behaviour["in_range_rate"] == 1.0
    assert expert.behaviour["repeat_rate"] == 0.0
    # A player that ignores the feedback follows it only by chance and repeats itself.
    assert 0.4 < random_a.behaviour["follow_rate"] < 0.85 and random_a.behaviour["repeat_rate"] > 0


def test_an_unknown_player_is_refused():
    with pytest.raises(ValueError, match="unknown player"):
        play_baseline("guess-number-v0", "oracle", [0])


def test_rates_are_pooled_over_episodes_not_averaged():
    rates = {"follow_rate": ("followed", "after_feedback")}
    pooled = pool_behaviour(
        [{"followed": 0, "after_feedback": 1}, {"followed": 9, "after_feedback": 9}, None], rates
    )
    assert pooled["follow_rate"] == pytest.approx(0.9)  # 9 of 10, not the mean of 0 and 1
    assert pool_behaviour([None, {}], rates) == {}


@pytest.mark.parametrize("env_id", ["guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0"])
def test_every_text_game_has_a_random_player_whose_moves_are_read(env_id):
    import random

    import envs

    env = envs.make(env_id)
    env.reset(seed=3)
    rng = random.Random(3)
    for _ in range(4):
        *_, terminated, truncated, info = env.step(env.unwrapped.random_action(rng))
        assert info.get("format_error") is None  # a legal-looking move, never a format error
        if terminated or truncated:
            break
