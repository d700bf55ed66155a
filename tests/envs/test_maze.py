"""maze-v0: generation, moves, rewards, determinism, the expert, tool calls and bad replies."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envs
from envs.games.maze import MazeEnv, distances, generate_maze, shortest_path


def play_expert(env, seed: int, difficulty: str) -> tuple[dict, float, int]:
    env.reset(seed=seed, options={"difficulty": difficulty})
    total = 0.0
    for turn in range(1, 60):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return info, total, turn
    raise AssertionError("episode did not end")


def move_call(directions, call_id: str = "c0") -> dict:
    arguments = json.dumps({"directions": directions})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "move", "arguments": arguments}}
        ],
    }


def opened(seed: int = 0, difficulty: str = "easy"):
    env = envs.make("maze-v0", difficulty=difficulty)
    env.reset(seed=seed)
    return env, env.unwrapped


def open_direction(game) -> str:
    return shortest_path(game.grid, game.pos, game.goal)[0]


def wall_direction(game) -> str:
    return next(
        d
        for d, (dr, dc) in {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}.items()
        if game.grid[game.pos[0] + dr][game.pos[1] + dc] == "#"
    )


@pytest.mark.parametrize(("rows", "cols"), [(1, 2), (3, 3), (4, 7), (7, 7)])
def test_generated_maze_is_a_connected_tree(rows, cols):
    grid = generate_maze(np.random.default_rng(rows * cols), rows, cols)
    assert len(grid) == 2 * rows + 1 and all(len(r) == 2 * cols + 1 for r in grid)
    assert all(c == "#" for c in grid[0] + grid[-1] + [r[0] for r in grid] + [r[-1] for r in grid])
    floor = [(r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "."]
    assert len(distances(grid, (1, 1))) == len(floor)  # every floor square is reachable
    # A perfect maze: rooms - 1 openings between rooms, so exactly one path between any two rooms.
    assert len(floor) == rows * cols + rows * cols - 1


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_check_env_on_made_and_unwrapped():
    env = envs.make("maze-v0")
    check_env(env.unwrapped)
    check_env(env)


def test_same_seed_same_episode():
    a, b = envs.make("maze-v0"), envs.make("maze-v0")
    assert a.reset(seed=11) == b.reset(seed=11)
    for reply in ["up", "left left", "down, right", "hello", "s e"]:
        assert a.step(reply) == b.step(reply)
    maps = {envs.make("maze-v0").reset(seed=s)[0][1]["content"] for s in range(10)}
    assert len(maps) == 10


def test_opening_shows_the_map_and_the_format():
    messages, info = envs.make("maze-v0", difficulty="easy").reset(seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    grid = text.splitlines()[-7:]
    assert all(len(row) == 7 for row in grid)
    assert "".join(grid).count("A") == 1 and "".join(grid).count("G") == 1
    assert "up, down, left or right" in text and "30 moves" in text
    assert info["shortest"] >= 2 and info["difficulty"] == "easy"


@pytest.mark.parametrize("difficulty", sorted(MazeEnv.difficulties))
def test_expert_reaches_the_goal_on_a_shortest_path(difficulty):
    env = envs.make("maze-v0")
    for seed in range(30):
        info, total, turns = play_expert(env, seed, difficulty)
        assert info["success"] is True, (difficulty, seed)
        assert total == 1.0 and info["steps"] == info["shortest"]
        assert turns <= env.unwrapped.turngym_spec.max_turns


def test_moves_apply_in_order_and_stop_at_a_wall():
    env, game = opened(seed=3)
    start, used = game.pos, game.moves_used
    first = open_direction(game)
    game_after_one = None
    messages, reward, terminated, _, info = env.step(first)
    game_after_one = game.pos
    assert game_after_one != start and info["format_error"] is None
    wall = wall_direction(game)
    messages, *_ = env.step(f"{wall} {open_direction(game)}")
    assert game.pos == game_after_one  # stopped at the wall: the second move was not made
    assert messages[0]["content"].startswith(f"No move made. Wall {wall}; stopped.")
    assert game.moves_used == used + 2


def test_aliases_and_separators():
    game = MazeEnv()
    game.reset(seed=0)
    assert game.parse_action("u, d; l > r") == ["up", "down", "left", "right"]
    assert game.parse_action("N S E W north south East WEST") == [
        "up",
        "down",
        "right",
        "left",
        "up",
        "down",
        "right",
        "left",
    ]
    assert game.parse_action("I will go around.\nleft left up") == ["left", "left", "up"]


def test_extra_steps_lower_the_reward_to_a_floor():
    env, game = opened(seed=5)
    back = {"up": "down", "down": "up", "left": "right", "right": "left"}
    step = open_direction(game)
    env.step(f"{step} {back[step]}")  # 2 wasted steps
    rewards = []
    while not game.episode_over:
        rewards.append(env.step(env.unwrapped.expert_action())[1])
    assert game.won and game.steps_taken == game.shortest + 2
    assert rewards[-1] == pytest.approx(max(0.5, 1.0 - 0.5 * 2 / game.shortest))


def test_running_out_of_moves_gives_credit_for_progress():
    env, game = opened(seed=1)
    path = shortest_path(game.grid, game.pos, game.goal)
    half = path[: len(path) // 2]
    env.step(" ".join(half))
    wall = wall_direction(game)
    terminated = False
    while not terminated:
        messages, reward, terminated, truncated, info = env.step(wall)
    assert game.moves_used == game.max_moves and not truncated
    assert info["success"] is False and "No moves left" in messages[0]["content"]
    assert reward == pytest.approx(0.25 * (1 - (game.shortest - len(half)) / game.shortest))


def test_tool_call_gives_a_tool_message():
    env, game = opened(seed=2)
    assert [s["function"]["name"] for s in game.tool_schemas] == ["move"]
    assert game.tool_schemas[0]["function"]["parameters"]["properties"]["directions"]["items"]["enum"] == [
        "up",
        "down",
        "left",
        "right",
    ]
    start = game.pos
    messages, reward, terminated, truncated, info = env.step(move_call([open_direction(game)]))
    assert len(messages) == 1 and messages[0]["role"] == "tool" and messages[0]["tool_call_id"] == "c0"
    assert messages[0]["content"].startswith("Moved ") and "A" in messages[0]["content"]
    assert game.pos != start and info["format_error"] is None


def test_tool_call_can_win():
    env, game = opened(seed=2)
    messages, reward, terminated, _, info = env.step(move_call(shortest_path(game.grid, game.pos, game.goal)))
    assert terminated and info["success"] and reward == 1.0 and messages[0]["role"] == "tool"


def test_tool_call_accepts_one_direction_as_a_string():
    env, game = opened(seed=2)
    step = open_direction(game)
    messages, *_ = env.step(move_call(step))
    assert messages[0]["content"].startswith(f"Moved {step}.") and game.moves_used == 1


@pytest.mark.parametrize("directions", [[], ["upward"], "upward", [1, 2], {"up": 1}])
def test_bad_tool_arguments_move_nothing(directions):
    env, game = opened(seed=2)
    start = game.pos
    messages, reward, terminated, _, info = env.step(move_call(directions))
    assert messages[0]["role"] == "tool" and "direction" in messages[0]["content"]
    assert game.pos == start and game.moves_used == 0 and not terminated


def test_tool_call_written_as_text():
    env, game = opened(seed=2)
    step = open_direction(game)
    text = f'<tool_call>\n{{"name": "move", "arguments": {{"directions": ["{step}"]}}}}\n</tool_call>'
    messages, *_ = env.step(text)
    assert (
        messages[0]["role"] == "tool"
        and messages[0]["content"] == f"Moved {step}. 29 moves left.\n" + game.draw()
    )


@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        ("jump", "'jump' is not a move"),
        ("42 !", "no moves"),
        ("go up", "'go'"),
    ],
)
def test_unreadable_replies_move_nothing(reply, expect):
    env, game = opened(seed=4)
    start = game.pos
    messages, reward, terminated, truncated, info = env.step(reply)
    assert expect in messages[0]["content"] and expect in info["format_error"]
    assert reward == pytest.approx(-0.1) and not terminated and not truncated
    assert game.pos == start and game.moves_used == 0


@pytest.mark.parametrize("action", [None, 3.5, ["up"], {"role": "tool", "content": "up"}, "up " * 400_000])
def test_non_text_actions_never_raise(action):
    env, game = opened(seed=4)
    messages, _, terminated, _, info = env.step(action)
    assert info["format_error"] and messages[0]["role"] == "user" and not terminated
    assert game.moves_used == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replies=st.lists(
        st.text(max_size=40)
        | st.lists(st.sampled_from(["up", "d", "L", "east", "x", ",", "\n"])).map(" ".join),
        max_size=12,
    )
)
def test_random_replies_keep_the_episode_consistent(replies):
    env = envs.make("maze-v0", difficulty="easy", max_turns=100)
    env.reset(seed=0)
    game = env.unwrapped
    for reply in replies:
        before = game.moves_used
        messages, reward, terminated, truncated, info = env.step(reply)
        assert env.observation_space.contains(messages) and messages
        assert game.grid[game.pos[0]][game.pos[1]] == "."
        assert before <= game.moves_used <= game.max_moves
        if info["format_error"]:
            assert game.moves_used == before
        assert terminated == game.episode_over
