"""tic-tac-toe-v0: minimax, opponents, rewards, determinism, the expert, tool calls and bad replies."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import envs
from envs.core.errors import InvalidAction
from envs.games.tic_tac_toe import EMPTY, TicTacToeEnv, best_move, minimax, winner


def play(env, seed: int, choose, **options) -> tuple[dict, float]:
    env.reset(seed=seed, options=options or None)
    total = 0.0
    for _ in range(12):
        _, reward, terminated, truncated, info = env.step(choose(env.unwrapped))
        total += reward
        if terminated or truncated:
            return info, total
    raise AssertionError("episode did not end")


def expert(game) -> str:
    return game.expert_action()


def lowest_free(game) -> str:
    return str(game.board.index(EMPTY) + 1)


def place_call(cell, call_id: str = "c0") -> dict:
    arguments = json.dumps({"cell": cell})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "place", "arguments": arguments}}
        ],
    }


def opened(seed: int = 0, **kwargs):
    env = envs.make("tic-tac-toe-v0", **kwargs)
    env.reset(seed=seed)
    return env, env.unwrapped


def test_minimax_knows_the_game():
    assert minimax(EMPTY * 9, "X") == 0  # perfect play draws
    assert minimax("XX.OO....", "X") == 10 - 5  # X wins at once
    assert minimax("XX.OO....", "O") == 5 - 10  # O wins at once
    assert best_move("XX.OO....", "X") == 2 and best_move("XX.OO....", "O") == 5
    assert best_move("X........", "O") == 4  # the only reply to a corner that does not lose
    assert winner("XOXOXOX..") == "X" and winner("XOXXOOOXX") is None


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_check_env_on_made_and_unwrapped():
    env = envs.make("tic-tac-toe-v0")
    check_env(env.unwrapped)
    check_env(env)


def test_same_seed_same_episode():
    a, b = envs.make("tic-tac-toe-v0"), envs.make("tic-tac-toe-v0")
    for seed in range(6):
        assert a.reset(seed=seed) == b.reset(seed=seed)
        for reply in ["5", "a1", "1", "hello", "9", "3", "7"]:
            assert a.step(reply) == b.step(reply)


def test_the_seed_picks_the_side():
    marks = set()
    for seed in range(10):
        messages, info = envs.make("tic-tac-toe-v0").reset(seed=seed)
        marks.add(info["agent_mark"])
        text = messages[1]["content"]
        if info["agent_mark"] == "X":
            assert text.startswith("You are X and move first.") and text.endswith("1 2 3\n4 5 6\n7 8 9")
        else:
            assert text.startswith("You are O. X played ") and text.count("X") == 2
    assert marks == {"X", "O"}
    assert envs.make("tic-tac-toe-v0", agent_mark="O").reset(seed=0)[1]["agent_mark"] == "O"
    assert envs.make("tic-tac-toe-v0").reset(seed=0, options={"agent_mark": "X"})[1]["agent_mark"] == "X"
    with pytest.raises(ValueError, match="agent_mark"):
        TicTacToeEnv(agent_mark="Z")


@pytest.mark.parametrize("difficulty", sorted(TicTacToeEnv.difficulties))
def test_expert_never_loses(difficulty):
    env = envs.make("tic-tac-toe-v0")
    outcomes = []
    for seed in range(30):
        info, total = play(env, seed, expert, difficulty=difficulty)
        outcomes.append(info["outcome"])
        assert info["outcome"] != "loss", seed
        assert total == {"win": 1.0, "draw": 0.5}[info["outcome"]]
    if difficulty == "easy":
        assert outcomes.count("win") >= 24  # >= 80%
    if difficulty == "hard":
        assert outcomes.count("win") == 0  # nobody beats perfect play; a draw is success there


@pytest.mark.parametrize("difficulty", sorted(TicTacToeEnv.difficulties))
@pytest.mark.parametrize("mark", ["X", "O"])
def test_expert_as_either_side(difficulty, mark):
    env = envs.make("tic-tac-toe-v0")
    infos = [play(env, seed, expert, difficulty=difficulty, agent_mark=mark)[0] for seed in range(30)]
    assert all(i["outcome"] != "loss" for i in infos)
    successes = sum(i["success"] for i in infos)
    if difficulty == "hard" or (difficulty, mark) == ("easy", "X"):
        assert successes == 30  # X never fails to beat random play; on hard a draw is success
    else:
        assert successes >= 5  # as O against random play, or against the heuristic opponent (30% blunders)


def test_opponent_strength_orders_results():
    """A naive player (always the lowest free cell) wins against random play, never against perfect play."""
    env = envs.make("tic-tac-toe-v0")
    results = {}
    for difficulty in ("easy", "hard"):
        outcomes = [play(env, s, lowest_free, difficulty=difficulty)[0]["outcome"] for s in range(30)]
        results[difficulty] = outcomes
    assert "win" in results["easy"]
    assert "win" not in results["hard"] and "loss" in results["hard"]


def test_loss_scores_zero_and_is_no_success():
    env = envs.make("tic-tac-toe-v0", difficulty="hard")
    for seed in range(30):
        info, total = play(env, seed, lowest_free)
        if info["outcome"] == "loss":
            assert total == 0.0 and info["success"] is False
            assert "You lose." in env.unwrapped.transcript[-1]["content"]
            return
    raise AssertionError("the perfect opponent never beat the naive player")


def test_medium_opponent_takes_wins_and_blocks():
    game = TicTacToeEnv(difficulty="medium", agent_mark="X")
    game.medium_blunder_rate = 0.0
    game.reset(seed=0)
    game.board = "XX.O.O..."
    game.their_mark, game.mark = "O", "X"
    assert game._opponent_move() == 4  # O completes its own row rather than block
    game.board = "XX..O...."
    assert game._opponent_move() == 2  # blocks X


@pytest.mark.parametrize(
    ("reply", "index"),
    [("5", 4), (" 7\n", 6), ("b2", 4), ("A1", 0), ("c3", 8), ("I take cell 3.", 2), ("a3 (cell 7)", 6)],
)
def test_cells_as_numbers_or_coordinates(reply, index):
    game = TicTacToeEnv(agent_mark="X")
    game.reset(seed=0)
    assert game.parse_action(reply) == index


def test_several_different_cells_are_refused():
    game = TicTacToeEnv(agent_mark="X")
    game.reset(seed=0)
    with pytest.raises(InvalidAction, match="several cells"):
        game.parse_action("a3 or rather 9")


def test_taken_cell_is_a_format_error_and_uses_no_turn():
    env, game = opened(seed=0, agent_mark="X", difficulty="hard")
    env.step("5")
    board = game.board
    taken = board.index(game.their_mark) + 1
    messages, reward, terminated, truncated, info = env.step(str(taken))
    assert f"cell {taken} is taken" in messages[0]["content"] and info["format_error"]
    assert reward == pytest.approx(-0.1) and not terminated and game.board == board


@pytest.mark.parametrize(
    ("reply", "expect"), [("", "empty"), ("middle", "no cell"), ("10", "no cell"), ("d4", "no cell")]
)
def test_unreadable_replies_change_nothing(reply, expect):
    env, game = opened(seed=0, agent_mark="X")
    messages, reward, terminated, truncated, info = env.step(reply)
    assert expect in messages[0]["content"] and expect in info["format_error"]
    assert game.board == EMPTY * 9 and not terminated


def test_tool_call_gives_a_tool_message():
    env, game = opened(seed=0, agent_mark="X")
    assert [s["function"]["name"] for s in game.tool_schemas] == ["place"]
    messages, reward, terminated, truncated, info = env.step(place_call(5))
    assert len(messages) == 1 and messages[0]["role"] == "tool" and messages[0]["tool_call_id"] == "c0"
    assert messages[0]["content"].startswith("You played 5. Opponent played ")
    assert game.board[4] == "X" and game.board.count("O") == 1 and info["format_error"] is None


@pytest.mark.parametrize(("cell", "expect"), [(0, "does not exist"), (10, "does not exist"), ("x", "cell")])
def test_bad_tool_cells_change_nothing(cell, expect):
    env, game = opened(seed=0, agent_mark="X")
    messages, reward, terminated, _, info = env.step(place_call(cell))
    assert messages[0]["role"] == "tool" and expect in messages[0]["content"]
    assert game.board == EMPTY * 9 and not terminated


def test_tool_call_on_a_taken_cell_is_a_format_error():
    env, game = opened(seed=0, agent_mark="O")
    taken = game.board.index("X") + 1
    messages, reward, *_, info = env.step(place_call(taken))
    assert "taken" in messages[0]["content"] and info["format_error"] and reward == pytest.approx(-0.1)


def test_tool_call_written_as_text():
    env, game = opened(seed=0, agent_mark="X")
    text = '<tool_call>\n{"name": "place", "arguments": {"cell": 1}}\n</tool_call>'
    messages, *_ = env.step(text)
    assert messages[0]["role"] == "tool" and messages[0]["content"].startswith("You played 1.")


@pytest.mark.parametrize("action", [None, 5, ["5"], {"role": "user", "content": "5"}, "5" * 1_000_000])
def test_non_text_actions_never_raise(action):
    env, game = opened(seed=0, agent_mark="X")
    messages, _, terminated, _, info = env.step(action)
    assert info["format_error"] and messages[0]["role"] == "user" and not terminated
    assert game.board == EMPTY * 9


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replies=st.lists(
        st.text(max_size=20) | st.sampled_from(list("123456789") + ["b2", "c1", "0"]), max_size=12
    )
)
@example(replies=["<tool_call>", "5"])  # an unreadable tool call: the tool note answers it, no move is made
def test_random_replies_keep_the_game_consistent(replies):
    env = envs.make("tic-tac-toe-v0", max_turns=100)
    env.reset(seed=int(np.uint8(len(replies))))
    game = env.unwrapped
    for reply in replies:
        before = game.board
        messages, reward, terminated, truncated, info = env.step(reply)
        assert env.observation_space.contains(messages) and messages
        if info["format_error"] or info.get("tool_errors"):
            assert game.board == before
        else:
            assert sum(a != b for a, b in zip(before, game.board, strict=True)) in (1, 2)
        assert abs(game.board.count("X") - game.board.count("O")) <= 1
        assert terminated == game.episode_over
        if terminated and not info["format_error"]:
            assert winner(game.board) is not None or EMPTY not in game.board
