"""TextEnv behaviour on guess-number: formats, tool calls, wrappers, async stepping, rendering."""

import asyncio
from collections import Counter

import numpy as np
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
    assert "could not be used" in messages[0]["content"] and "guess tool" in messages[0]["content"]
    assert reward == -0.25 and info["format_error"] == "no number found in the reply"
    assert not terminated and not truncated


def test_out_of_range_guess_uses_no_try():
    env = envs.make("guess-number-v0", difficulty="easy")
    env.reset(seed=0)
    _, _, _, _, info = env.step("500")
    assert "outside" in info["format_error"]
    assert env.unwrapped.guesses == []


def test_one_number_in_text_counts_several_are_refused():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step("I think it is 10, no wait, 60")
    assert "several numbers" in info["format_error"] and env.unwrapped.guesses == []
    env.step("My guess: 60")
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


def test_step_after_the_end_is_refused_without_reward():
    env = envs.make("guess-number-v0")
    env.reset(seed=5)
    env.step(str(env.unwrapped.secret))
    messages, reward, terminated, _, info = env.step("3")
    assert terminated and "ended" in messages[0]["content"] and reward == 0.0  # no format penalty either
    assert info["episode_ended"] and len(env.unwrapped.guesses) == 1


def test_step_after_max_turns_refuses_and_reset_starts_over():
    env = envs.make("guess-number-v0", max_turns=1)
    env.reset(seed=5)
    assert env.step("1")[3] is True
    _, reward, _, truncated, info = env.step(str(env.unwrapped.secret))
    assert reward == 0.0 and truncated and info["episode_ended"]
    assert env.unwrapped.episode_over and env.unwrapped.guesses == [1]
    env.reset(seed=5)
    assert not env.unwrapped.episode_over and env.step(str(env.unwrapped.secret))[1] == 1.0


def test_step_before_reset_raises_reset_needed():
    from envs.core.errors import ResetNeeded

    with pytest.raises(ResetNeeded, match="reset"):
        envs.make("guess-number-v0").step("50")


def test_reset_options_are_validated():
    env = envs.make("guess-number-v0")
    with pytest.raises(ValueError, match="valid options: difficulty"):
        env.reset(options={"level": "easy"})
    with pytest.raises(ValueError, match="must be one of 'easy', 'medium', 'hard', got 'nightmare'"):
        env.reset(options={"difficulty": "nightmare"})
    with pytest.raises(TypeError, match="must be a dict"):
        env.reset(options=[("difficulty", "easy")])
    assert env.reset(seed=0, options={"difficulty": "easy"})[1]["difficulty"] == "easy"


def test_custom_env_without_declared_options_gets_them_unchecked():
    class Echo(envs.TextEnv):
        def _reset(self, options):
            return [{"role": "user", "content": repr(sorted(options))}], {}

    assert Echo().reset(options={"anything": 1})[0][0]["content"] == "['anything']"


def test_tool_call_cap_is_configurable_through_make():
    env = envs.make("guess-number-v0", max_tool_calls_per_turn=2)
    env.reset(seed=0)
    action = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"g{n}", "function": {"name": "guess", "arguments": {"number": n}}} for n in (1, 2, 3)
        ],
    }
    messages, *_, info = env.step(action)
    assert env.unwrapped.guesses == [1, 2]
    assert [m["role"] for m in messages] == ["tool", "tool", "tool", "user"]
    assert messages[2]["tool_call_id"] == "g3" and messages[2]["content"].startswith("Not run:")
    assert "at most 2 run per turn, so call 3 was not run" in messages[3]["content"]
    assert info["tool_calls_not_run"] == 1


def test_render_shows_the_conversation():
    env = envs.make("guess-number-v0", render_mode="ansi")
    env.reset(seed=0)
    env.step("50")
    text = env.render()
    assert "[system]" in text and "[assistant]\n50" in text and "50 is too" in text


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


# ----- issue 13: the fast path keeps every promise -------------------------------------------------


def test_plain_text_replies_never_build_the_tools():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step("50")
    env.step("I'd say 25")
    assert env.unwrapped.env_tools._registry is None  # nothing built for text without a call marker
    env.step('<tool_call>\n{"name": "guess", "arguments": {"number": 12}}\n</tool_call>')
    assert [t.name for t in env.unwrapped.env_tools._registry] == ["guess"]


def test_text_call_markers_are_plain_text_in_an_env_without_tools():
    env = envs.make("guess-number-v0")
    env.unwrapped.own_tools = lambda: []  # a game offered as text only
    env.reset(seed=0)
    _, _, _, _, info = env.step("<tool_call> 50 </tool_call>")
    assert info["format_error"] is None and env.unwrapped.guesses == [50]


def test_no_pydantic_class_is_made_per_env():
    import gc

    import pydantic

    def models() -> int:
        gc.collect()  # classes other tests made and dropped must not count
        seen, todo = set(), [pydantic.BaseModel]
        while todo:
            for sub in todo.pop().__subclasses__():
                if sub not in seen:
                    seen.add(sub)
                    todo.append(sub)
        return len(seen)

    first = envs.make("guess-number-v0")
    first.reset(seed=0)
    first.step(_guess_call(50))
    before = models()
    for seed in range(20):
        env = envs.make("guess-number-v0")
        env.reset(seed=seed)
        env.step(_guess_call(50))
        env.step("25")
        assert env.unwrapped.tools[0].args_model is first.unwrapped.tools[0].args_model
    assert models() == before


def test_a_tool_call_turn_is_read_once(monkeypatch):
    import envs.core.text_env

    reads = []
    real = envs.core.text_env.read_action
    monkeypatch.setattr(envs.core.text_env, "read_action", lambda *a, **k: reads.append(1) or real(*a, **k))
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step(_guess_call(50))
    env.step('<tool_call>\n{"name": "guess", "arguments": {"number": 25}}\n</tool_call>')
    assert len(reads) == 2


def test_seeded_generator_is_gymnasiums():
    from gymnasium.utils import seeding

    from envs.core.seeding import np_random

    seeds = [*range(64), 2**31 - 1, 2**32, 2**64 + 5, 2**130 + 7, 10**40]
    for seed in seeds:
        ours, our_seed = np_random(seed)
        theirs, their_seed = seeding.np_random(seed)
        assert our_seed == their_seed == seed
        assert ours.integers(0, 2**63, 16).tolist() == theirs.integers(0, 2**63, 16).tolist()
        assert ours.random() == theirs.random()
        assert [g.integers(0, 1000, 4).tolist() for g in ours.spawn(2)] == [
            g.integers(0, 1000, 4).tolist() for g in theirs.spawn(2)
        ]
    with pytest.raises(Exception, match="greater or equal to zero"):
        np_random(-1)
    assert np_random(None)[0] is not None


def test_reset_seed_builds_gymnasiums_generator_on_first_use():
    from gymnasium.utils import seeding

    env = envs.make("guess-number-v0").unwrapped
    env.reset(seed=11)
    assert env.np_random_seed == 11
    # Recorded at reset, built on first read: the stream Gymnasium's reset(seed=11) gives.
    theirs, _ = seeding.np_random(11)
    assert env.np_random.integers(0, 2**63, 8).tolist() == theirs.integers(0, 2**63, 8).tolist()
    env.reset()  # unseeded: the same generator goes on
    assert env.np_random.integers(0, 2**63, 8).tolist() == theirs.integers(0, 2**63, 8).tolist()
    env.np_random = np.random.default_rng(3)  # set by hand, as Gymnasium allows: seed unknown
    assert env.np_random_seed == -1
    env.reset(seed=11)
    assert env.np_random_seed == 11 and env.np_random.integers(0, 2**63) == seeding.np_random(11)[0].integers(
        0, 2**63
    )
    with pytest.raises(Exception, match="greater or equal to zero"):
        env.reset(seed=-1)


def test_quick_random_is_seeded_from_the_reset_seed():
    from envs.core.splitmix import SplitMix64

    assert SplitMix64(0).next_u64() == 0xE220A8397B1DCDAF  # the reference SplitMix64 stream
    env = envs.make("guess-number-v0").unwrapped
    reference = SplitMix64(5)
    secret = reference.integers(1, 101)
    env.reset(seed=5)
    assert env.secret == secret
    assert [env.quick_random.integers(0, 1000) for _ in range(4)] == [
        reference.integers(0, 1000) for _ in range(4)
    ]
    # Never seeded: seeded from np_random's seed, so np_random_seed says which episode it was.
    fresh = envs.make("guess-number-v0").unwrapped
    fresh.reset()
    assert fresh.secret == SplitMix64(fresh.np_random_seed).integers(1, 101)
    # A generator set by hand seeds it instead.
    hand = envs.make("guess-number-v0").unwrapped
    hand.np_random = np.random.default_rng(9)
    hand.reset()
    seed = int(np.random.default_rng(9).integers(0, 2**63))
    assert hand.secret == SplitMix64(seed).integers(1, 101)
    counts = Counter(SplitMix64(s).integers(1, 7) for s in range(6000))
    assert set(counts) == set(range(1, 7)) and min(counts.values()) > 800


def test_same_seed_same_episode_and_unseeded_reset_continues():
    a, b = envs.make("guess-number-v0"), envs.make("guess-number-v0")
    a.reset(seed=7)
    b.reset(seed=7)
    first = a.unwrapped.secret
    assert b.unwrapped.secret == first and a.unwrapped.np_random_seed == 7
    followers = []
    for env in (a, b):
        env.reset()  # no seed: the generator goes on, it is not reseeded
        followers.append(env.unwrapped.secret)
    assert followers[0] == followers[1] and a.unwrapped.np_random_seed == 7
    a.reset(seed=7)  # reseeding starts the same episode again
    assert a.unwrapped.secret == first
    assert [envs.make("guess-number-v0").reset(seed=s)[0] for s in (1, 2)] == [
        envs.make("guess-number-v0").reset(seed=s)[0] for s in (1, 2)
    ]


def test_fast_number_reading_matches_the_general_reader():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    game = env.unwrapped

    def read(text):
        try:
            return game.parse_action(text)
        except envs.InvalidAction as e:
            return f"error: {e}"

    for digits in ["0", "00", "7", "042", "100", "0100", "101", "999", "0000000000050", "1" * 60]:
        # "guess: N" never takes the all-digits shortcut; the verdict must be the same.
        assert read(digits) == read(f"guess: {digits}") == read(f"  {digits}\n"), digits


def test_tool_call_format_follows_what_it_is_set_to():
    env = envs.make("guess-number-v0", tool_call_format="llama3")
    assert env.unwrapped.tool_call_format == "llama3"
    env.reset(seed=0)
    _, _, _, _, info = env.step('{"name": "guess", "parameters": {"number": 50')
    assert info["tool_errors"] == 1 and env.unwrapped.guesses == []  # unreadable call, not the text "50"
    env.unwrapped.set_tool_call_format("hermes")
    _, _, _, _, info = env.step('{"name": "guess", "parameters": {"number": 50')
    # Plain text now (no tool error), and a number inside other text is no guess either.
    assert not info.get("tool_errors") and "start the reply" in info["format_error"]
    with pytest.raises(ValueError, match="known formats"):
        env.unwrapped.set_tool_call_format("klingon")
    with pytest.raises(ValueError, match="known formats"):
        envs.make("guess-number-v0", tool_call_format="klingon")


def test_transcript_records_tool_calls_as_tools_calls_writes_them():
    from turngym.chat.calls import ToolCall, parse_tool_calls

    assert envs.ToolCallRequest is ToolCall
    text = '<tool_call>\n{"name": "guess", "arguments": {"number": 50}}\n</tool_call>'
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    env.step(text)
    recorded = env.unwrapped.transcript[2]
    expected = [c.to_openai() for c in parse_tool_calls(text, "hermes").tool_calls]
    assert recorded["tool_calls"] == expected
    assert recorded["tool_calls"][0]["function"]["arguments"] == {"number": 50}
    assert 'guess({"number": 50})' in env.unwrapped.render()


def test_tools_live_in_a_tool_registry_forked_per_episode_and_released_at_reset():
    """TextEnv uses tools.ToolRegistry: a stateful tool gets a fresh instance each episode, closed at reset."""
    from tools import Tool, ToolRegistry, ToolResult

    closed: list[int] = []

    class Counter(Tool):
        name = "count"
        description = "Count calls in this episode."
        stateful = True

        def init_state(self) -> None:
            self.calls = 0

        async def run(self, args, context):
            self.calls += 1
            return ToolResult(str(self.calls))

        async def aclose(self) -> None:
            closed.append(self.calls)

    counter = Counter()
    counter.init_state()
    env = envs.make("guess-number-v0", tools=[counter])
    registry = env.unwrapped.tool_registry
    assert isinstance(registry, ToolRegistry) and registry.names == ["guess", "count"]
    assert env.unwrapped.tools == list(registry) and env.unwrapped.tool_schemas == registry.schemas()
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c0", "name": "count", "arguments": {}}],
    }
    for episode in range(2):
        env.reset(seed=episode)
        assert env.step(call)[0][0]["content"] == "1"
        assert env.step(call)[0][0]["content"] == "2"  # state kept within the episode
    env.reset(seed=5)
    assert closed == [2, 2] and counter.calls == 0  # each episode's copy closed; the prototype untouched
    unknown = {**call, "tool_calls": [{"id": "c1", "name": "nope", "arguments": {}}]}
    assert "Available tools: guess, count" in env.step(unknown)[0][0]["content"]


def test_step_result_is_a_named_five_tuple():
    import pickle

    from envs import StepResult

    result = StepResult([{"role": "user", "content": "hi"}], 0.5, terminated=True)
    messages, reward, terminated, truncated, info = result
    assert (result.messages, result.reward, result.terminated, result.truncated) == (
        messages,
        0.5,
        True,
        False,
    )
    assert info == {} and StepResult([]).info is not StepResult([]).info  # a dict of its own each
    changed = result.replace(reward=1.0)
    assert changed.reward == 1.0 and result.reward == 0.5 and changed.messages is messages
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(TypeError, match="no field"):
        result.replace(score=1)


def test_a_game_overriding_respond_sees_every_text_reply():
    from envs.games.guess_number import GuessNumberEnv

    seen = []

    class Watched(GuessNumberEnv):
        def _respond(self, turn):
            seen.append(turn.content)
            return super()._respond(turn)

    env = Watched()
    env.reset(seed=0)
    env.step("50")
    assert seen == ["50"]
