"""TextArena opponents the agent cannot steer, and each game's invalid-move rule kept (issue 24).

The degenerate-agent sweep and the steering battery run bench/textarena_degenerate.py's agents; the bench
prints the full table."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.textarena import adapted_games
from envs.textarena.generate_catalog import game_files
from envs.textarena.invalid_moves import ENDS_GAME, RULES, invalid_move_rule
from envs.textarena.legal_moves import LEGAL_MOVES
from envs.textarena.tactics import WINS_AT_ONCE, tactical_moves

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import textarena_degenerate as bench  # noqa: E402

TWO_PLAYER = [g.ta_id for g in adapted_games() if g.players == 2]
MARKER = "[zq9 steer]"


def _steer_with_marker(messages, rng, env):
    return bench.steering(messages, rng, env) + " " + MARKER + " play " + MARKER


@pytest.mark.slow
def test_steering_replies_win_no_more_than_plain_play_and_never_reach_the_opponent():
    """Every two-player game: the random player's moves, plain and with decoys, instructions and a marker.

    The opponent's move pool is the game's state or text, so the marker never appears in what it is shown,
    and steering wins no more than plain play beyond the noise of the episodes."""
    seeds = range(2)  # pooled over every two-player game: 118 episodes a side
    plain_wins = steer_wins = 0
    rows = []
    for ta_id in TWO_PLAYER:
        plain = sum(bench.play(ta_id, bench.random_player, s, 60)[1] for s in seeds)
        steer = 0
        for s in seeds:
            env = envs.make(f"textarena/{ta_id}", max_turns=10_000)
            rng = np.random.default_rng(10_000 + s)
            messages, _ = env.reset(seed=s)
            seen, info = list(messages), {}
            for _ in range(60):
                reply = _steer_with_marker(seen, rng, env)
                messages, _, terminated, truncated, info = env.step(reply)
                shown = env.unwrapped._opponent_messages
                assert not any("zq9" in str(m["content"]) for m in shown if m["role"] != "assistant"), ta_id
                seen += [{"role": "assistant", "content": reply}, *messages]
                if terminated or truncated:
                    break
            steer += bool(info.get("success"))
        rows.append((ta_id, plain, steer))
        plain_wins, steer_wins = plain_wins + plain, steer_wins + steer
    print(f"\n{'game':<34} plain steer (of {len(seeds)})")
    for ta_id, plain, steer in rows:
        print(f"{ta_id:<34} {plain:>5} {steer:>5}")
    n = len(TWO_PLAYER) * len(seeds)
    # Per game, a game may read the decoys itself (PublicGoodsGame takes a later bracket as the
    # contribution: 0 of 3 plain, 3 of 3 steering); what steering must not do is move the opponent.
    assert not bench.beats_random(steer_wins / n, plain_wins / n, n), (plain_wins, steer_wins)


@pytest.mark.slow
def test_no_degenerate_agent_wins_more_than_a_random_player_on_any_game():
    """The sweep over every adapted game: first, same, bracket junk and steering against the fair random player.

    Two screening seeds for every row (episodes cut at 100 replies); a row won more often than by the random
    player there is replayed on 6 more seeds and must not beat it beyond noise, unless `bench.EXPECTED`
    gives the game's reason."""
    rows = bench.sweep([g.ta_id for g in adapted_games()], range(2), confirm=range(2, 8), max_steps=100)
    replayed = [r for r in rows if r["episodes"] > 2]
    print(f"\n{len(rows)} rows, {len(replayed)} replayed on 8 seeds")
    failing = [
        (r["game"], r["agent"], r["win_rate"], r["random"])
        for r in rows
        if r["beats_random"] and not r["expected"]
    ]
    assert not failing, failing


@pytest.mark.parametrize("ta_id", ["ConnectFour-v0", "TicTacToe-v0", "TruthAndDeception-v0-extreme"])
def test_the_issue_attacks_win_exactly_as_often_as_plain_play(ta_id):
    """Decoys in brackets and the real move in a form a one-line pattern skips change no episode."""
    plain, attack = {
        "ConnectFour-v0": (bench.connectfour_plain, bench.connectfour_steer),
        "TicTacToe-v0": (bench.tictactoe_plain, bench.tictactoe_steer),
        "TruthAndDeception-v0-extreme": (bench.truth_plain, bench.truth_steer),
    }[ta_id]
    for seed in range(6):
        assert bench.play(ta_id, plain, seed) == bench.play(ta_id, attack, seed), seed


@pytest.mark.parametrize("ta_id", ["Minesweeper-v0-small", "Minesweeper-v0", "Minesweeper-v0-hard"])
def test_a_mine_ends_minesweeper(ta_id):
    """The clicker that cleared every board while mines were format errors now loses on its first mine."""
    hits = 0
    for seed in range(4):
        env = envs.make(f"textarena/{ta_id}", max_turns=10_000)
        rng = np.random.default_rng(seed)
        messages, _ = env.reset(seed=seed)
        seen = list(messages)
        for _ in range(400):
            reply = bench.mine_clicker(seen, rng, env)
            messages, reward, terminated, truncated, info = env.step(reply)
            seen += [{"role": "assistant", "content": reply}, *messages]
            if terminated or truncated:
                break
        assert terminated and not info["success"] and reward < 1.0
        hits += "mine" in info["textarena_reason"]
    assert hits == 4


def test_a_refused_move_is_retried_within_the_games_allowance_then_loses():
    """TicTacToe (allowance 1): one occupied cell is refused and may be retried; a second in a row loses."""
    env = envs.make("textarena/TicTacToe-v0", opponent=lambda m: "[0]")
    env.reset(seed=0)
    env.step("[4]")
    messages, reward, terminated, _, info = env.step("[0]")
    assert not terminated and "occupied" in info["invalid_move"] and info["format_error"] is None
    assert "refused" in messages[-1]["content"] and reward == 0.0
    messages, reward, terminated, _, info = env.step("[4]")
    assert terminated and reward == -1.0 and not info["success"]


def test_a_refusal_followed_by_a_legal_move_resets_the_count():
    moves = iter(["[0]", "[1]", "[2]"])
    env = envs.make("textarena/TicTacToe-v0", opponent=lambda m: next(moves))
    env.reset(seed=0)
    env.step("[4]")
    assert not env.step("[4]")[2]  # refused
    assert not env.step("[8]")[2]  # legal: the count starts again
    _, _, terminated, _, info = env.step("[8]")
    assert not terminated and info["invalid_move"]


def test_unreadable_replies_are_format_errors_that_never_count():
    env = envs.make("textarena/TicTacToe-v0")
    env.reset(seed=0)
    for reply in ["I think the centre", "[", "] [", "[   ]"] * 3:
        messages, reward, terminated, _, info = env.step(reply)
        assert not terminated and info["format_error"].startswith("no move found"), reply
    assert not env.step("[4]")[2]


def test_free_talk_is_a_move_not_a_format_error():
    env = envs.make("textarena/TruthAndDeception-v0-extreme")
    env.reset(seed=0)
    _, _, terminated, _, info = env.step("Fact 1 is surely true, everyone knows it.")
    assert not terminated and info["format_error"] is None and "invalid_move" not in info


def test_games_json_records_each_games_rule_as_its_source_says():
    """The table's invalid-move rule and opponent move source, re-derived from TextArena's source."""
    games = adapted_games()
    assert len(games) == 138
    for g in games:
        module = g.entry_point.partition(":")[0]
        source = "\n".join(p.read_text(errors="replace") for p in game_files(module))
        assert g.invalid_move in RULES and g.invalid_move == invalid_move_rule(g.name, source), g.ta_id
        assert isinstance(g.error_allowance, int) and g.error_allowance >= 1, g.ta_id
        expected = None if g.players == 1 else ("legal_moves" if g.name in LEGAL_MOVES else "game_text")
        expected = "legal_moves_tactics" if g.name in WINS_AT_ONCE else expected
        assert g.opponent_moves == expected, g.ta_id
    assert {g.ta_id for g in games if g.invalid_move == ENDS_GAME} >= {
        "Minesweeper-v0-small",
        "Minesweeper-v0",
        "Minesweeper-v0-hard",
    }


@pytest.mark.parametrize("ta_id", sorted({g.ta_id for g in adapted_games() if g.name in LEGAL_MOVES}))
def test_the_opponent_plays_only_legal_moves_where_the_state_lists_them(ta_id):
    tries = []
    env = envs.make(f"textarena/{ta_id}")
    messages, _ = env.reset(seed=1)
    rng = np.random.default_rng(1)
    seen = list(messages)
    for _ in range(30):
        reply = bench.random_player(seen, rng, env)
        messages, _, terminated, truncated, _ = env.step(reply)
        seen += [{"role": "assistant", "content": reply}, *messages]
        tries.append(env.unwrapped._opponent_messages)
        if terminated or truncated:
            break
    # A finished turn keeps what the opponent was shown and the move taken: one try per turn, none refused.
    assert all(not any("invalid" in str(m["content"]).lower() for m in t) for t in tries)


def _raw(ta_id: str):
    env = envs.make(f"textarena/{ta_id}")
    env.reset(seed=0)
    return env.unwrapped


def test_one_ply_tactics_take_a_win_before_blocking_one_in_connect_four():
    """Player 1 (O) to move; X threatens column 3, O itself can win in column 5 and must take it."""
    env = _raw("ConnectFour-v0")
    ta = env._ta
    board = ta.state.game_state["board"]
    for row in (5, 4, 3):
        board[row][3] = "X"
    ta.state.current_player_id = 1
    assert tactical_moves("ConnectFour", ta) == ["[col 3]"]  # nothing to win: block X's column
    for row in (5, 4, 3):
        board[row][5] = "O"
    assert tactical_moves("ConnectFour", ta) == ["[col 5]"]  # its own win comes first
    assert board[2][3] == board[2][5] == "."  # the trial stones are taken back


def test_one_ply_tactics_block_a_tic_tac_toe_line_and_a_simple_tak_path():
    env = _raw("TicTacToe-v0")
    board = env._ta.state.game_state["board"]
    board[0][0] = board[1][1] = "O"
    board[0][1] = "X"
    env._ta.state.current_player_id = 1
    assert tactical_moves("TicTacToe", env._ta) == ["[8]"]
    env = _raw("SimpleTak-v0")  # 4x4: O holds three cells of row 1, X must take the fourth
    board = env._ta.state.game_state["board"]
    board[1][0] = board[1][1] = board[1][3] = "O"
    env._ta.state.current_player_id = 1
    assert tactical_moves("SimpleTak", env._ta) == ["[6]"]
    board[1][2] = "X"
    assert tactical_moves("SimpleTak", env._ta) is None  # no win, no threat: a uniform legal move


def test_the_default_opponent_uses_its_tactics_in_play():
    """Stacking column 3 won 6 of 6 ConnectFour games against the uniform opponent; it now blocks the stack."""
    for seed in range(4):
        env = envs.make("textarena/ConnectFour-v0", max_turns=10_000)
        env.reset(seed=seed)
        for _ in range(21):
            _, reward, terminated, truncated, info = env.step("[col 3]")
            if terminated or truncated:
                break
        assert not info.get("success"), seed
