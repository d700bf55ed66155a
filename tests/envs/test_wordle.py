"""wordle-v0: feedback rules, rewards, determinism, the expert, tool calls and bad replies."""

from __future__ import annotations

import json

import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envs
from envs.core.errors import InvalidAction
from envs.games.wordle import WordleEnv, feedback, load_words


def play_expert(env, seed: int, difficulty: str) -> tuple[dict, float]:
    env.reset(seed=seed, options={"difficulty": difficulty})
    total = 0.0
    for _ in range(20):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        total += reward
        if terminated or truncated:
            return info, total
    raise AssertionError("episode did not end")


def guess_call(word: str, call_id: str = "c0") -> dict:
    arguments = json.dumps({"word": word})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "guess", "arguments": arguments}}
        ],
    }


def test_word_list_is_bundled_and_clean():
    words = load_words()
    assert 400 <= len(words) <= 800
    assert len(set(words)) == len(words)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in words)
    assert max(p["pool"] for p in WordleEnv.difficulties.values()) <= len(words)


@pytest.mark.parametrize(
    ("guess", "answer", "pattern"),
    [
        ("crane", "crane", "GGGGG"),
        ("crane", "apple", "__Y_G"),
        ("speed", "abide", "__Y_Y"),  # one e in the answer: only the first e is yellow
        ("eerie", "there", "Y_Y_G"),  # the last e is green, one e is left for the first e
        ("allot", "llama", "YGY__"),  # the second l is green, the third is yellow for the remaining l
        ("lolly", "hello", "_YGG_"),  # both l of the answer are green: the first l is absent
        ("geese", "beige", "YG__G"),
    ],
)
def test_feedback_handles_duplicate_letters(guess, answer, pattern):
    assert feedback(guess, answer) == pattern


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_check_env_on_made_and_unwrapped():
    env = envs.make("wordle-v0")
    check_env(env.unwrapped)
    check_env(env)


def test_same_seed_same_episode():
    a, b = envs.make("wordle-v0"), envs.make("wordle-v0")
    assert a.reset(seed=7) == b.reset(seed=7)
    for word in ["crane", "qzxvk", "house", "water"]:
        assert a.step(word) == b.step(word)
    answers = set()
    for seed in range(10):
        a.reset(seed=seed)
        answers.add(a.unwrapped.answer)
    assert len(answers) > 5


def test_opening_states_the_format():
    messages, info = envs.make("wordle-v0").reset(seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "5-letter" in messages[1]["content"] and "6 tries" in messages[1]["content"]
    assert info["difficulty"] == "medium" and info["max_tries"] == 6


def test_feedback_message_is_regular():
    env = envs.make("wordle-v0")
    env.reset(seed=0)
    env.unwrapped.answer = "apple"
    messages, reward, terminated, _, info = env.step("crane")
    assert messages == [
        {
            "role": "user",
            "content": "crane -> C:absent R:absent A:present N:absent E:correct (__Y_G). 5 tries left.",
        }
    ]
    assert (reward, terminated, info["format_error"]) == (0.0, False, None)


@pytest.mark.parametrize("difficulty", sorted(WordleEnv.difficulties))
def test_expert_wins_every_seed(difficulty):
    env = envs.make("wordle-v0")
    for seed in range(30):
        info, total = play_expert(env, seed, difficulty)
        assert info["success"] is True, (difficulty, seed)
        assert total >= 0.5


def test_win_reward_decays_with_tries_to_a_floor():
    env = WordleEnv(difficulty="easy")
    rewards = []
    for tries in range(1, 9):
        env.reset(seed=0)
        env.answer = "about"
        for word in ["house", "water", "light", "money", "grass", "chair", "truck"][: tries - 1]:
            assert env.step(word)[2] is False
        _, reward, terminated, _, info = env.step("about")
        assert terminated and info["success"]
        rewards.append(reward)
    assert rewards == pytest.approx([1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5])


def test_loss_gives_small_credit_for_the_best_guess():
    env = WordleEnv(difficulty="medium")
    env.reset(seed=0)
    env.answer = "apple"
    rewards = [env.step(w)[1] for w in ["dirty"] * 5]
    assert rewards == [0.0] * 5
    _, reward, terminated, _, info = env.step("maple")  # _YGGG: 3 greens + 1 yellow
    assert terminated and info["success"] is False
    assert reward == pytest.approx(0.25 * 3.5 / 5)
    assert "apple" in env.transcript[-1]["content"]


def test_tool_call_gives_a_tool_message():
    env = envs.make("wordle-v0")
    env.reset(seed=3)
    assert [s["function"]["name"] for s in env.unwrapped.tool_schemas] == ["guess"]
    messages, reward, terminated, truncated, info = env.step(guess_call("crane"))
    assert len(messages) == 1 and messages[0]["role"] == "tool"
    assert messages[0]["tool_call_id"] == "c0" and messages[0]["name"] == "guess"
    assert messages[0]["content"].startswith("crane -> C:")
    assert info["format_error"] is None and len(env.unwrapped.guesses) == 1


def test_tool_call_can_win():
    env = envs.make("wordle-v0")
    env.reset(seed=3)
    messages, reward, terminated, _, info = env.step(guess_call(env.unwrapped.answer))
    assert terminated and info["success"] and reward == 1.0
    assert "You won in 1 tries" in messages[0]["content"]


def test_tool_call_with_unknown_word_uses_no_try():
    env = envs.make("wordle-v0")
    env.reset(seed=3)
    messages, reward, terminated, _, info = env.step(guess_call("qzxvk"))
    assert messages[0]["role"] == "tool" and "not in the word list" in messages[0]["content"]
    assert info["format_error"] and reward < 0 and not terminated
    assert env.unwrapped.guesses == []


def test_tool_call_written_as_text():
    env = envs.make("wordle-v0")
    env.reset(seed=3)
    text = '<tool_call>\n{"name": "guess", "arguments": {"word": "crane"}}\n</tool_call>'
    messages, *_ = env.step(text)
    assert messages[0]["role"] == "tool" and messages[0]["content"].startswith("crane -> ")


@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("42", "no 5-letter word"),
        ("qzxvk", "not in the word list"),
        ("cranes", "no 5-letter word"),
    ],
)
def test_unreadable_replies_use_no_try(reply, expect):
    env = envs.make("wordle-v0")
    env.reset(seed=1)
    messages, reward, terminated, truncated, info = env.step(reply)
    assert expect in messages[0]["content"] and expect in info["format_error"]
    assert reward == pytest.approx(-0.1) and not terminated and not truncated
    assert env.unwrapped.guesses == []


def test_the_one_five_letter_word_counts_and_case_is_ignored():
    env = WordleEnv()
    env.reset(seed=1)
    assert env.parse_action("I pick CRANE.") == "crane"
    assert env.parse_action("Next:\n  Water  ") == "water"
    with pytest.raises(InvalidAction, match="several 5-letter words"):
        env.parse_action("My guess is CRANE.")  # "guess" is a 5-letter word too


@pytest.mark.parametrize(
    "action", [None, 5, ["crane"], {"role": "user", "content": "crane"}, "x" * 1_000_000]
)
def test_non_text_actions_never_raise(action):
    env = envs.make("wordle-v0")
    env.reset(seed=2)
    messages, _, terminated, _, info = env.step(action)
    assert info["format_error"] and messages[0]["role"] == "user" and not terminated


def test_actions_after_the_end_are_refused():
    env = envs.make("wordle-v0")
    env.reset(seed=2)
    env.step(env.unwrapped.answer)
    messages, reward, terminated, _, info = env.step("crane")
    assert terminated and info["format_error"] and len(env.unwrapped.guesses) == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replies=st.lists(
        st.text(max_size=60) | st.sampled_from(["crane", "apple", "zzzzz", "house\x00"]), max_size=10
    )
)
def test_random_replies_keep_the_episode_consistent(replies):
    env = envs.make("wordle-v0", max_turns=100)
    env.reset(seed=0)
    game = env.unwrapped
    for reply in replies:
        before = len(game.guesses)
        messages, reward, terminated, truncated, info = env.step(reply)
        assert env.observation_space.contains(messages) and messages
        assert len(game.guesses) == before + (info["format_error"] is None and before < game.max_tries)
        assert len(game.guesses) <= game.max_tries
        assert terminated == game.episode_over
        if terminated:
            assert "success" in info or info["format_error"]
