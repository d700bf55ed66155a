"""Reward forgeries against the text games: every one must be refused (format error) or earn nothing.

Each test plays the real env as an adversarial policy would: hedged replies with several candidate
moves, answers hidden in long lists, numbers in babble, unicode digits, repetition for partial credit,
moves after the end. A reply that holds several different moves is a format error: it uses no turn of
the game's budget and earns nothing (the format penalty makes it negative).
"""

from __future__ import annotations

import json

import pytest

import envs
from envs.games.maze import shortest_path
from envs.games.wordle import feedback, load_words


def call(name: str, **arguments) -> dict:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def calls(name: str, *argument_sets: dict, content: str = "") -> dict:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(a)}}
            for i, a in enumerate(argument_sets)
        ],
    }


def refused(step, game_counter) -> None:
    """The reply was a format error: no reward, no turn of the game used, the episode goes on."""
    messages, reward, terminated, truncated, info = step
    assert info["format_error"], messages
    assert reward <= 0 and not terminated and not truncated
    assert game_counter() == 0


# ----- guess-number -----------------------------------------------------------------------------------
def guess_env(seed: int = 0, difficulty: str = "medium"):
    env = envs.make("guess-number-v0", difficulty=difficulty)
    env.reset(seed=seed)
    return env, env.unwrapped


@pytest.mark.parametrize(
    "reply",
    [
        "{s} or {s1} or {s2}",
        "{s1} {s}",  # the right number hidden before another
        "{s}, {s1}",
        "Range 1 to 100, so I guess {s}",  # numbers in babble: which one is the guess?
        "\n".join(str(n) for n in range(1, 101)),  # every number, the secret among them
        " ".join(str(n) for n in range(1, 101)),
        "{s}-{s1}",
    ],
)
def test_guess_number_several_candidates_are_refused(reply):
    env, game = guess_env()
    s = game.secret
    others = [n for n in range(game.low, game.high + 1) if n != s]
    text = reply.format(s=s, s1=others[0], s2=others[1])
    refused(env.step(text), lambda: len(game.guesses))


@pytest.mark.parametrize("reply", ["{u}", "Guess: {u}"])
def test_guess_number_unicode_digits_are_refused(reply):
    env, game = guess_env()
    arabic = str(game.secret).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    refused(env.step(reply.format(u=arabic)), lambda: len(game.guesses))
    fullwidth = str(game.secret).translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    refused(env.step(reply.format(u=fullwidth)), lambda: len(game.guesses))


@pytest.mark.parametrize("form", ["{s}", " {s} ", "{s}.", "Guess: {s}", "**{s}**", "{s} ({s})", "0{s}"])
def test_guess_number_one_unambiguous_number_still_wins(form):
    env, game = guess_env()
    _, reward, terminated, _, info = env.step(form.format(s=game.secret))
    assert terminated and info["success"] and reward == 1.0


def test_guess_number_huge_numbers_are_refused_not_crashing():
    env, game = guess_env()
    refused(env.step("9" * 5000), lambda: len(game.guesses))
    refused(env.step("-" + "0" * 5000 + "7"), lambda: len(game.guesses))


def test_guess_number_decimal_is_not_a_whole_number():
    env, game = guess_env()
    refused(env.step(f"{game.secret}.5"), lambda: len(game.guesses))


def test_guess_number_partial_credit_stays_far_below_a_win_and_is_not_farmable():
    # The best a loser can do: every guess one away from the secret, repeated until the budget runs out.
    env, game = guess_env(seed=3)
    near = game.secret + 1 if game.secret < game.high else game.secret - 1
    total = 0.0
    for _ in range(game.max_guesses):
        _, reward, terminated, _, info = env.step(str(near))
        total += reward
    assert terminated and not info["success"]
    assert total <= 0.25 < 0.5  # 0.5 is the least a win pays


def test_guess_number_tool_guess_and_text_guess_count_once():
    env, game = guess_env()
    wrong = game.low if game.secret != game.low else game.high
    step = env.step({**call("guess", number=wrong), "content": str(game.secret)})
    assert step[1] == 0.0 and not step[2] and game.guesses == [wrong]


def test_guess_number_several_tool_guesses_each_use_the_budget():
    env, game = guess_env(difficulty="easy")
    spray = [{"number": n} for n in range(game.low, game.high + 1)]
    _, reward, terminated, _, info = env.step(calls("guess", *spray))
    assert terminated
    # Spraying every number is no shortcut: each call is a guess, and more guesses than the budget lose.
    assert len(game.guesses) <= game.max_guesses
    if info.get("success"):
        assert reward <= 1.0 - 0.1 * max(0, len(game.guesses) - game.optimal_guesses) + 1e-9
    else:
        assert reward <= 0.25


def test_guess_number_tool_rejects_non_integers():
    env, game = guess_env()
    for bad in ([game.secret, 1], {"n": game.secret}, f"{game.secret} or 1", game.secret + 0.5):
        _, reward, terminated, _, _ = env.step(call("guess", number=bad))
        assert reward <= 0 and not terminated and game.guesses == []


def test_guess_number_pays_nothing_after_the_end():
    env, game = guess_env()
    env.step(str(game.secret))
    for _ in range(3):
        _, reward, _, _, _ = env.step(str(game.secret))
        assert reward <= 0
    assert env.unwrapped.total_reward == 1.0


# ----- wordle -------------------------------------------------------------------------------------
def wordle_env(seed: int = 0):
    env = envs.make("wordle-v0", difficulty="medium")
    env.reset(seed=seed)
    return env, env.unwrapped


def _other_word(answer: str) -> str:
    return next(w for w in load_words() if w != answer)


@pytest.mark.parametrize(
    "reply",
    [
        "{o} {a}",
        "{a} or {o}",
        "{o}\n{a}",
        "My guess: {a}",  # two 5-letter words: "guess" and the answer
        "LIST",  # the answer hidden among a hundred words
    ],
)
def test_wordle_several_candidate_words_are_refused(reply):
    env, game = wordle_env()
    if reply == "LIST":
        words = [w for w in load_words()[:100] if w != game.answer] + [game.answer]
        text = " ".join(words)
    else:
        text = reply.format(a=game.answer, o=_other_word(game.answer))
    refused(env.step(text), lambda: len(game.guesses))


@pytest.mark.parametrize("form", ["{a}", "{A}", "  {a}.  ", '"{a}"', "**{A}**", "{a} {a}"])
def test_wordle_one_word_still_wins(form):
    env, game = wordle_env()
    _, reward, terminated, _, info = env.step(form.format(a=game.answer, A=game.answer.upper()))
    assert terminated and info["success"] and reward == 1.0


def test_wordle_partial_credit_stays_far_below_a_win():
    env, game = wordle_env(seed=5)
    # The best-scoring wrong word (most greens and yellows), repeated until the tries run out.
    best = max(
        (w for w in load_words() if w != game.answer),
        key=lambda w: feedback(w, game.answer).count("G") + 0.5 * feedback(w, game.answer).count("Y"),
    )
    total = 0.0
    for _ in range(game.max_tries):
        _, reward, terminated, _, info = env.step(best)
        total += reward
    assert terminated and not info["success"] and total < 0.25 < 0.5


# ----- maze ---------------------------------------------------------------------------------------
def maze_env(seed: int = 0):
    env = envs.make("maze-v0", difficulty="easy")
    env.reset(seed=seed)
    return env, env.unwrapped


def test_maze_two_move_plans_in_one_reply_are_refused():
    env, game = maze_env()
    plan = game.expert_action()
    other = " ".join({"up": "down", "down": "up", "left": "right", "right": "left"}[m] for m in plan.split())
    refused(env.step(f"{other}\nor maybe\n{plan}"), lambda: game.moves_used)
    refused(env.step(f"Either\n{plan}\nor\n{other}"), lambda: game.moves_used)


def test_maze_one_plan_with_prose_still_moves():
    env, game = maze_env()
    plan = game.expert_action()
    _, _, _, _, info = env.step(f"Let me head for G.\n{plan}")
    assert info["format_error"] is None and game.moves_used == len(plan.split())


def test_maze_moves_on_consecutive_lines_are_one_plan():
    env, game = maze_env()
    plan = game.expert_action().split()
    _, _, _, _, info = env.step("Here goes:\n" + "\n".join(plan))
    assert info["format_error"] is None and game.moves_used == len(plan)


def test_maze_partial_credit_stays_far_below_a_win():
    env, game = maze_env(seed=2)
    total, terminated = 0.0, False
    while not terminated:
        # Walk the shortest path but stop one square short, then shuffle in place until the budget ends.
        path = shortest_path(game.grid, game.pos, game.goal)
        move = (
            path[0]
            if len(path) > 1
            else {"up": "down", "down": "up", "left": "right", "right": "left"}[path[0]]
        )
        _, reward, terminated, truncated, info = env.step(move)
        total += reward
        terminated = terminated or truncated
    assert not info.get("success") and total < 0.25 < 0.5


# ----- tic-tac-toe --------------------------------------------------------------------------------
def ttt_env(seed: int = 0):
    env = envs.make("tic-tac-toe-v0", difficulty="easy", agent_mark="X")
    env.reset(seed=seed)
    return env, env.unwrapped


def _moves(game) -> int:
    return game.board.count(game.mark)


@pytest.mark.parametrize("reply", ["5 or 1", "1 5", "1 2 3 4 5 6 7 8 9", "b2 a1", "I take 5, then 9"])
def test_tic_tac_toe_several_cells_are_refused(reply):
    env, game = ttt_env()
    refused(env.step(reply), lambda: _moves(game))


def test_tic_tac_toe_board_copied_into_the_reply_is_refused():
    env, game = ttt_env()
    board = "1 2 3\n4 5 6\n7 8 9"
    refused(env.step(f"{board}\nI play 5"), lambda: _moves(game))


@pytest.mark.parametrize("reply", ["5", "b2", "B2", "Cell 5.", "b2 (cell 5)", "5 5"])
def test_tic_tac_toe_one_cell_however_written_is_played(reply):
    env, game = ttt_env()
    _, _, _, _, info = env.step(reply)
    assert info["format_error"] is None and game.board[4] == game.mark


def test_tic_tac_toe_no_reward_after_the_end():
    env, game = ttt_env(seed=1)
    terminated = False
    while not terminated:
        _, _, terminated, truncated, _ = env.step(game.expert_action())
        terminated = terminated or truncated
    paid = game.total_reward
    for cell in "123456789":
        _, reward, _, _, _ = env.step(cell)
        assert reward <= 0
    assert game.total_reward <= paid and paid <= 1.0
