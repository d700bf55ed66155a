"""TextEnv behaviour on guess-number: formats, tool calls, wrappers, async stepping, rendering."""

import asyncio

import pytest

import envs
from envs.wrappers import ActionFormat, MaxTurns, RewardShaping


def _guess_call(number, call_id="c0"):
    args = number if isinstance(number, str) else f'{{"number": {number}}}'
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "guess", "arguments": args}}],
    }


def test_opening_is_system_then_user():
    messages, info = envs.make("guess-number-v0").reset(seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert info["difficulty"] == "medium"


def test_format_error_is_explained_and_penalised():
    env = envs.make("guess-number-v0", format_penalty=0.25)
    env.reset(seed=0)
    messages, reward, terminated, truncated, info = env.step("no idea")
    assert "could not be used" in messages[0]["content"] and "whole number" in messages[0]["content"]
    assert reward == -0.25 and info["format_error"] == "no number found in the reply"
    assert not terminated and not truncated


def test_out_of_range_guess_uses_no_try():
    env = envs.make("guess-number-v0", difficulty="easy")
    env.reset(seed=0)
    _, _, _, _, info = env.step("500")
    assert "outside" in info["format_error"]
    assert env.unwrapped.guesses == []


def test_last_number_in_text_counts():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step("I think it is 10, no wait, 60")
    assert env.unwrapped.guesses == [60]


def test_tool_call_message_gets_tool_result():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    messages, reward, terminated, _, info = env.step(_guess_call(50, "abc"))
    assert messages[0]["role"] == "tool" and messages[0]["tool_call_id"] == "abc"
    assert messages[0]["name"] == "guess" and "50" in messages[0]["content"]
    assert info["tool_calls"] == 1 and info["tool_errors"] == 0


def test_tool_call_with_wrong_type_says_what_was_wrong():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    messages, _, _, _, info = env.step(_guess_call('{"number": "abc"}'))
    assert "number" in messages[0]["content"] and "abc" in messages[0]["content"]
    assert info["tool_errors"] == 1
    assert env.unwrapped.guesses == []


def test_unknown_tool_lists_available_ones():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "x", "function": {"name": "gues", "arguments": {}}}],
    }
    messages, *_ = env.step(call)
    assert "unknown tool `gues`" in messages[0]["content"] and "guess" in messages[0]["content"]


def test_winning_by_tool_call_terminates_with_reward():
    env = envs.make("guess-number-v0")
    env.reset(seed=5)
    secret = env.unwrapped.secret
    messages, reward, terminated, _, info = env.step(_guess_call(secret))
    assert terminated and reward == 1.0 and info["success"] is True


def test_astep_matches_step():
    a, b = envs.make("guess-number-v0"), envs.make("guess-number-v0")
    a.reset(seed=4)
    b.reset(seed=4)
    for move in ["50", "zz", "25"]:
        assert a.step(move) == asyncio.run(b.astep(move))


def test_step_works_inside_a_running_event_loop():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)

    async def inside():
        return env.step(_guess_call(50))

    messages, *_ = asyncio.run(inside())
    assert messages[0]["role"] == "tool"


def test_max_turns_truncates():
    env = envs.make("guess-number-v0", max_turns=2)
    env.reset(seed=0)
    assert env.step("1")[3] is False
    _, _, terminated, truncated, info = env.step("2")
    assert truncated and not terminated and info["truncated_reason"] == "max_turns"
    env.reset(seed=0)
    assert env.step("1")[3] is False  # the count restarts with the episode


def test_action_format_ends_after_consecutive_errors_and_custom_message():
    base = envs.make("guess-number-v0").unwrapped
    env = ActionFormat(base, penalty=0.5, message="Bad: {error}", max_consecutive=2)
    env.reset(seed=0)
    messages, reward, _, truncated, _ = env.step("?")
    assert messages[0]["content"].startswith("Bad: ") and reward == -0.5 and not truncated
    _, _, _, truncated, info = env.step("?")
    assert truncated and info["truncated_reason"] == "format_errors"
    env.reset(seed=0)
    assert env.step("?")[3] is False


def test_action_format_rejects_negative_penalty():
    with pytest.raises(ValueError):
        ActionFormat(envs.make("guess-number-v0").unwrapped, penalty=-1)


def test_reward_shaping_keeps_raw_reward():
    env = RewardShaping(envs.make("guess-number-v0").unwrapped, scale=2.0, turn_cost=0.1)
    env.reset(seed=5)
    _, reward, _, _, info = env.step(str(env.unwrapped.secret))
    assert reward == pytest.approx(1.9) and info["raw_reward"] == 1.0


def test_max_turns_rejects_zero():
    with pytest.raises(ValueError):
        MaxTurns(envs.make("guess-number-v0").unwrapped, 0)


def test_step_after_the_end_does_not_raise():
    env = envs.make("guess-number-v0")
    env.reset(seed=5)
    env.step(str(env.unwrapped.secret))
    messages, _, terminated, _, _ = env.step("3")
    assert terminated and "ended" in messages[0]["content"]


def test_render_shows_the_conversation():
    env = envs.make("guess-number-v0", render_mode="ansi")
    env.reset(seed=0)
    env.step("50")
    text = env.render()
    assert "[system]" in text and "[assistant]\n50" in text and "50 is wrong" in text


def test_huge_action_is_not_stored_whole():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step("9" * (1 << 20))
    assert len(env.unwrapped.transcript[-2]["content"]) < 1000


def test_extra_tools_by_list_are_offered_and_called():
    from tools import tool

    @tool
    def echo(text: str) -> str:
        """Repeat the text.

        Args:
            text: what to repeat.
        """
        return text

    env = envs.make("guess-number-v0", tools=[echo])
    assert [s["function"]["name"] for s in env.tool_schemas] == ["guess", "echo"]
    env.reset(seed=0)
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "e", "function": {"name": "echo", "arguments": {"text": "hi"}}}],
    }
    messages, *_ = env.step(call)
    assert messages[0]["content"] == "hi"
