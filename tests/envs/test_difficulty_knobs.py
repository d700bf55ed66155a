"""The games' difficulty knobs and ladders: bounds, the easiest level winnable by the expert, the random
player's success rising as the level falls, the default game unchanged, shaping that changes no text and
no success, and the behaviour counts (legal moves, repeats, tic-tac-toe blocks)."""

from __future__ import annotations

import pytest

import envs
from envs.baselines.baseline_players import play_baseline
from envs.games.maze import MazeEnv

GAMES = ("guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0")
TURNS = 6  # make train-real-games' turn cap
SEEDS = range(60)


def _ladder(env_id: str) -> list[dict]:
    return envs.spec(env_id).load().difficulty_ladder("easy")


def _success(env_id: str, player: str, level: dict) -> float:
    kwargs = {"difficulty": "easy", "action_tool": False, **level}
    return play_baseline(env_id, player, SEEDS, kwargs, max_turns=TURNS).success_rate


@pytest.mark.parametrize("env_id", GAMES)
def test_the_ladder_ends_at_the_game_itself_and_its_easiest_level_is_winnable(env_id):
    ladder = _ladder(env_id)
    assert len(ladder) >= 2 and ladder[-1] == {}
    assert _success(env_id, "expert", ladder[0]) == 1.0


@pytest.mark.parametrize("env_id", GAMES)
def test_random_success_rises_as_the_level_falls(env_id):
    ladder = _ladder(env_id)
    rates = [_success(env_id, "random", level) for level in ladder]
    assert rates[0] > rates[-1] + 0.1, rates
    # Allow sampling noise between neighbours (60 seeds), never a clear fall as levels get easier.
    assert all(easier >= harder - 0.1 for easier, harder in zip(rates, rates[1:], strict=False)), rates


@pytest.mark.parametrize(
    ("env_id", "kwargs", "needle"),
    [
        ("maze-v0", {"size": 1}, "size=1 is out of range"),
        ("maze-v0", {"wall_density": 1.5}, "wall_density=1.5 is out of range"),
        ("maze-v0", {"progress_reward": float("nan")}, "progress_reward=nan"),
        ("wordle-v0", {"revealed": 5}, "revealed=5 is out of range"),
        ("wordle-v0", {"pool": 0}, "pool=0 is out of range"),
        ("guess-number-v0", {"high": 1}, "high=1 is out of range"),
        ("tic-tac-toe-v0", {"blunder_rate": -0.1}, "blunder_rate=-0.1 is out of range"),
        ("tic-tac-toe-v0", {"opponent": "god"}, "opponent must be one of"),
    ],
)
def test_knobs_out_of_bounds_are_refused_in_one_line(env_id, kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        envs.make(env_id, **kwargs)


@pytest.mark.parametrize(
    ("env_id", "neutral"),
    [
        ("maze-v0", {"wall_density": 1.0}),
        ("wordle-v0", {"revealed": 0}),
        ("guess-number-v0", {"high": 20}),
        ("tic-tac-toe-v0", {"opponent": "random"}),
    ],
)
def test_a_knob_at_the_games_own_value_plays_the_same_episodes(env_id, neutral):
    for seed in range(5):
        plain = envs.make(env_id, difficulty="easy", action_tool=False)
        knob = envs.make(env_id, difficulty="easy", action_tool=False, **neutral)
        assert plain.reset(seed=seed)[0] == knob.reset(seed=seed)[0]
        game = plain.unwrapped
        for _ in range(TURNS):
            action = game.expert_action()
            a, b = plain.step(action), knob.step(action)
            assert a[:4] == b[:4]
            if a[2] or a[3]:
                break


def test_open_walls_shorten_the_maze_and_keep_the_grid():
    walled, opened = MazeEnv(difficulty="medium"), MazeEnv(difficulty="medium", wall_density=0.0)
    for seed in range(10):
        walled.reset(seed=seed)
        opened.reset(seed=seed)
        assert len(opened.grid) == len(walled.grid) == 11
        assert sum(row.count("#") for row in opened.grid) < sum(row.count("#") for row in walled.grid)
    small = MazeEnv(difficulty="medium", size=2)
    small.reset(seed=0)
    assert len(small.grid) == 5


@pytest.mark.parametrize("env_id", ["maze-v0", "wordle-v0"])
def test_progress_shaping_changes_no_text_and_no_success_and_a_win_collects_it(env_id):
    for seed in range(8):
        plain = envs.make(env_id, difficulty="easy", action_tool=False)
        shaped = envs.make(env_id, difficulty="easy", action_tool=False, progress_reward=0.25)
        plain.reset(seed=seed)
        shaped.reset(seed=seed)
        extra = 0.0
        for _ in range(30):
            action = plain.unwrapped.expert_action()
            a, b = plain.step(action), shaped.step(action)
            assert a[0] == b[0] and a[2:4] == b[2:4]
            assert a[4].get("success") == b[4].get("success")
            extra += b[1] - a[1]
            if a[2] or a[3]:
                break
        assert a[4]["success"] and extra == pytest.approx(0.25)


def test_maze_shaping_pays_only_a_new_closest_approach():
    env = envs.make("maze-v0", difficulty="easy", action_tool=False, progress_reward=0.25)
    env.reset(seed=3)
    game = env.unwrapped
    first = game.expert_action().split()[0]
    back = {"up": "down", "down": "up", "left": "right", "right": "left"}[first]
    paid = [env.step(move)[1] for move in (first, back, first)]
    assert paid[0] > 0 and paid[1] == 0 and paid[2] == 0


def test_wordle_revealed_letters_are_in_the_opening_and_the_expert_uses_them():
    env = envs.make("wordle-v0", difficulty="easy", action_tool=False, revealed=3, pool=25)
    messages, _ = env.reset(seed=4)
    game = env.unwrapped
    assert messages[-1]["content"].count(" is ") == 3 and "A hint" in messages[-1]["content"]
    assert all(game.answer[i] == c for i, c in game.hints.items()) and len(game.hints) == 3
    assert all(game.expert_action()[i] == c for i, c in game.hints.items())


def test_tic_tac_toe_counts_a_block_of_the_opponents_line():
    env = envs.make("tic-tac-toe-v0", difficulty="easy", agent_mark="X", action_tool=False)
    env.reset(seed=0)
    game = env.unwrapped
    game.board = "OO.X....X"  # O threatens cell 3; X (4 and 9) has no line to finish this move
    game._count_block(2)
    game._count_block(6)
    assert game.behaviour()["block_chances"] == 2 and game.behaviour()["blocks"] == 1


def test_tic_tac_toe_behaviour_reaches_the_baseline_rates():
    result = play_baseline(
        "tic-tac-toe-v0", "expert", range(20), {"difficulty": "medium", "action_tool": False}
    )
    assert result.behaviour["legal_move_rate"] == 1.0 and result.behaviour["repeat_rate"] == 0.0
    assert result.behaviour["block_rate"] == 1.0  # the perfect player always blocks


@pytest.mark.parametrize("env_id", ["maze-v0", "wordle-v0", "tic-tac-toe-v0"])
def test_random_players_show_illegal_or_repeated_moves(env_id):
    result = play_baseline(
        env_id, "random", range(20), {"difficulty": "easy", "action_tool": False}, max_turns=TURNS
    )
    assert set(result.behaviour) >= {"legal_move_rate", "repeat_rate"}
    assert 0.0 <= result.behaviour["legal_move_rate"] <= 1.0
