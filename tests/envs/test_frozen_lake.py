"""frozen-lake-v0: maps in the almost-sure winning set, the safe expert on every difficulty, slips, holes."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.games.frozen_lake import FrozenLakeEnv, outcomes, winning_policy


def play_expert(env, seed: int, difficulty: str) -> dict:
    env.reset(seed=seed, options={"difficulty": difficulty})
    for _ in range(200):
        _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        if terminated or truncated:
            return info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize(("difficulty", "seeds"), [("easy", 200), ("medium", 100), ("hard", 60)])
def test_expert_always_reaches_the_goal(difficulty, seeds):
    env = envs.make("frozen-lake-v0")
    for seed in range(seeds):
        assert play_expert(env, seed, difficulty)["success"] is True, (difficulty, seed)
    env.close()


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_the_policy_never_risks_a_hole(difficulty):
    game = FrozenLakeEnv(difficulty=difficulty)
    for seed in range(10):
        game.reset(seed=seed)
        assert game.start in game.policy and game.start not in game.holes and game.goal not in game.holes
        for cell, (move, expected) in game.policy.items():
            assert expected > 0
            for reached, p, _ in outcomes(game.size, cell, move, game.slip):
                assert (
                    p > 0 and reached not in game.holes and (reached in game.policy or reached == game.goal)
                )


def test_no_winning_set_when_the_goal_is_walled_off():
    holes = {(0, 1), (1, 0), (1, 1)}
    assert winning_policy(3, holes, (0, 0), 0.0) == {}
    # Without slips, any path around the hole is safe.
    assert (2, 0) in winning_policy(3, {(1, 1)}, (0, 0), 0.0)


def test_same_seed_same_lake_and_same_slips():
    a, b = envs.make("frozen-lake-v0", difficulty="hard"), envs.make("frozen-lake-v0", difficulty="hard")
    assert a.reset(seed=3) == b.reset(seed=3)
    for move in ["up", "left", "down", "right"] * 3:
        out = a.step(move)
        assert out == b.step(move)
        if out[2] or out[3]:
            break
    assert a.reset(seed=3)[0] != a.reset(seed=4)[0]


def test_falling_in_a_hole_ends_the_game_with_nothing():
    env = envs.make("frozen-lake-v0", difficulty="easy")
    for seed in range(50):
        env.reset(seed=seed)
        game = env.unwrapped
        into = [
            m
            for m in ("up", "down", "left", "right")
            if outcomes(game.size, game.pos, m, 0.0)[0][0] in game.holes
        ]
        if into:
            messages, reward, terminated, _, info = env.step(into[0])
            assert terminated and reward == 0.0 and info["success"] is False
            assert "hole" in messages[0]["content"] and "X" in messages[0]["content"]
            return
    raise AssertionError("no start next to a hole in 50 seeds")


def test_tool_call_moves_like_text():
    a, b = envs.make("frozen-lake-v0"), envs.make("frozen-lake-v0")
    a.reset(seed=9)
    b.reset(seed=9)
    move = a.unwrapped.expert_action().split()
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "move", "arguments": json.dumps({"directions": move})},
    }
    text = a.step(" ".join(move))
    tool = b.step({"role": "assistant", "content": "", "tool_calls": [call]})
    assert a.unwrapped.pos == b.unwrapped.pos and text[1] == tool[1]


@pytest.mark.parametrize(
    "reply",
    [
        "left\nor else\nright",
        "",
        "fly",
        "\x00\x1b[2J",
        "x" * 100_000,
        None,
        7,
        ["up"],
        {"role": "assistant", "content": 3},
    ],
)
def test_hostile_replies_move_nothing(reply):
    env = envs.make("frozen-lake-v0", difficulty="medium")
    env.reset(seed=1)
    game = env.unwrapped
    state = (game.pos, game.moves_used)
    _, reward, terminated, truncated, info = env.step(reply)
    assert (game.pos, game.moves_used) == state and reward <= 0 and not terminated and not truncated
    assert info["format_error"]


def test_check_env_and_options():
    env = envs.make("frozen-lake-v0")
    check_env(env.unwrapped, skip_render_check=False)
    with pytest.raises(envs.core.errors.InvalidOptions):
        env.reset(options={"slippery": True})
    _, info = env.reset(seed=0, options={"difficulty": "hard"})
    assert info["difficulty"] == "hard" and info["slip"] > 0
