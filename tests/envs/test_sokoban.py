"""sokoban-v0: solvable generated levels, the solver expert on every difficulty, pushes, rewards, bad replies."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env

import envs
from envs.games.sokoban import SokobanEnv, apply_moves, live_squares, solve


def play_expert(env, seed: int, difficulty: str) -> tuple[dict, float]:
    env.reset(seed=seed, options={"difficulty": difficulty})
    total = 0.0
    for _ in range(60):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return info, total
    raise AssertionError("episode did not end")


def move_call(directions) -> dict:
    arguments = json.dumps({"directions": directions})
    call = {"id": "c0", "type": "function", "function": {"name": "move", "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


@pytest.mark.parametrize(("difficulty", "seeds"), [("easy", 60), ("medium", 40), ("hard", 20)])
def test_expert_solves_every_level(difficulty, seeds):
    env = envs.make("sokoban-v0")
    for seed in range(seeds):
        info, total = play_expert(env, seed, difficulty)
        assert info["success"] is True and total == 1.0, (difficulty, seed)
    env.close()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_levels_are_solvable_and_start_with_every_box_off_target(difficulty):
    game = SokobanEnv(difficulty=difficulty)
    params = SokobanEnv.difficulties[difficulty]
    for seed in range(8):
        game.reset(seed=seed)
        assert len(game.boxes) == params["boxes"] and not game.boxes & game.targets
        assert game.boxes <= game.floor and game.player in game.floor and game.player not in game.boxes
        boxes, _ = apply_moves(game.floor, game.boxes, game.player, game.solution)
        assert boxes == game.targets
        drawn = game.draw().splitlines()
        assert len(drawn) == params["rows"] and all(len(r) == params["cols"] for r in drawn)
        assert set(drawn[0]) == {"#"} and {r[0] for r in drawn} == {"#"}


def test_solver_on_a_hand_made_level():
    # #####
    # #P X O#  one box, one target two squares right of it
    floor = {(1, c) for c in range(1, 6)}
    assert solve(floor, {(1, 5)}, {(1, 3)}, (1, 1)) == ["right", "right", "right"]
    # A box in a corner that is not a target can never be moved again.
    assert solve(floor, {(1, 4)}, {(1, 5)}, (1, 1)) is None
    assert (1, 5) not in live_squares(floor, {(1, 4)})


def test_same_seed_same_level_and_seeds_differ():
    a, b = SokobanEnv(), SokobanEnv()
    assert a.reset(seed=11) == b.reset(seed=11)
    assert a.reset(seed=11)[0] != a.reset(seed=12)[0]


def test_pushes_walls_and_the_budget():
    env = envs.make("sokoban-v0", difficulty="easy")
    env.reset(seed=0)
    game = env.unwrapped
    blocked = next(
        d
        for d, (dr, dc) in {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}.items()
        if (game.player[0] + dr, game.player[1] + dc) not in game.floor
    )
    before = game.player
    messages, reward, terminated, _, info = env.step(f"{blocked} {blocked}")
    assert game.player == before and game.moves_used == 1 and "Wall" in messages[0]["content"]
    assert reward == 0 and not terminated and info["format_error"] is None
    # Spending the budget without solving ends the game with partial credit only.
    while True:
        _, reward, terminated, truncated, info = env.step(blocked)
        if terminated or truncated:
            break
    assert info.get("success") is not True and reward <= 0.25


def test_tool_call_moves_like_text():
    a, b = envs.make("sokoban-v0"), envs.make("sokoban-v0")
    a.reset(seed=4)
    b.reset(seed=4)
    plan = a.unwrapped.solution
    _, ra, ta, _, _ = a.step(" ".join(plan))
    msgs, rb, tb, _, info = b.step(move_call(plan))
    assert (ra, ta) == (rb, tb) == (1.0, True) and info["success"] is True
    assert msgs[0]["role"] == "tool"


@pytest.mark.parametrize(
    "reply",
    [
        "up\nor maybe\ndown",  # two plans split by prose: a hedge, not a move list
        "",
        "jump",
        "x" * 100_000,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "move", "arguments": "{}"}}],
        },
        move_call([]),
        move_call(["sideways"]),
        move_call("up" * 10_000),
    ],
)
def test_hostile_replies_move_nothing(reply):
    env = envs.make("sokoban-v0")
    env.reset(seed=2)
    game = env.unwrapped
    state = (game.player, game.boxes, game.moves_used)
    _, reward, terminated, truncated, info = env.step(reply)
    assert (game.player, game.boxes, game.moves_used) == state
    assert reward <= 0 and not terminated and not truncated
    assert info["format_error"] or info.get("tool_errors")


def test_check_env_and_options():
    env = envs.make("sokoban-v0")
    check_env(env.unwrapped, skip_render_check=False)
    with pytest.raises(envs.core.errors.InvalidOptions, match="difficulty"):
        env.reset(options={"difficulty": "extreme"})
    _, info = env.reset(seed=0, options={"difficulty": "hard"})
    assert info["difficulty"] == "hard" and info["boxes"] == 3
