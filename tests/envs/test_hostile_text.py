"""Hostile model text against every registered env: any nesting, size or number of tool calls becomes a
message in the observation, tool time per turn is bounded, and an ended episode pays nothing."""

from __future__ import annotations

import asyncio
import json
import sys

import gymnasium
import pytest

import envs
from envs.core.errors import InvalidOptions, ResetNeeded

# TextArena's games have no scripted expert; tests/envs/test_textarena.py runs the battery on them.
ALL_IDS = [s.id for s in envs.list_envs() if not s.category.startswith("textarena")]
FORMATS = ["hermes", "llama3", "mistral"]


def _deep_dict(depth: int) -> dict:
    # Built iteratively: the test itself must not recurse.
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _wrap(fmt: str, name: str, args_text: str) -> str:
    if fmt == "hermes":
        return f'<tool_call>\n{{"name": "{name}", "arguments": {args_text}}}\n</tool_call>'
    if fmt == "llama3":
        return f'<|python_tag|>{{"name": "{name}", "parameters": {args_text}}}'
    return f'[TOOL_CALLS] [{{"name": "{name}", "arguments": {args_text}}}]'


def _hostile_texts(fmt: str, name: str) -> list[str]:
    limit = 32768 - 200  # stays under the default reply limit, so the parser (not the size check) answers
    depth = sys.getrecursionlimit() + 10
    texts = [
        _wrap(fmt, name, "[" * 1000),
        _wrap(fmt, name, "[" * 1000 + "]" * 1000),
        _wrap(fmt, name, '{"a": ' * 3000 + "1" + "}" * 3000)[:limit],
        _wrap(fmt, name, "[" * (limit - 100)),
        _wrap(fmt, name, json.dumps("[" * depth + "]" * depth)),  # deep JSON hidden in a string
        _wrap(fmt, name, "{" * 2000),
    ]
    if fmt == "mistral":
        texts.append(f"[TOOL_CALLS]{name}[ARGS]" + "[" * 5000)
    return texts


def _hostile_messages(name: str) -> list[dict]:
    def msg(arguments, **extra):
        call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}, **extra}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    depth = sys.getrecursionlimit() + 10
    return [
        msg(_deep_dict(100_000)),
        msg({"x": _deep_list(100_000)}),
        msg(_deep_dict(65)),
        msg("[" * depth + "]" * depth),
        msg({"x": {1, 2}}),  # not JSON at all
        msg({"x": "y" * 100_000}),  # over the reply's size limit
        msg({}, id=_deep_list(5000)),  # an id whose repr would recurse
        msg({}, id=10**5000),  # an id too large for str()
        {"role": _deep_list(5000), "content": ""},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name}}] * 100_000},
    ]


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_deep_nesting_in_every_format_never_raises(env_id):
    env = envs.make(env_id, max_turns=10_000)
    if not env.unwrapped.tools:  # tool calls are only parsed where there are tools: give it one
        env = envs.make(env_id, max_turns=10_000, tools=["calculator"])
    env.reset(seed=0)
    tried = 0
    for fmt in FORMATS:
        env.unwrapped.tool_call_format = fmt
        name = env.unwrapped.tools[0].name
        for text in _hostile_texts(fmt, name):
            messages, reward, terminated, truncated, info = env.step(text)
            tried += 1
            assert env.observation_space.contains(messages) and messages, (fmt, text[:80])
            assert not terminated and not truncated
            shown = " ".join(m["content"] for m in messages)
            assert "64" in shown or "limit" in shown, (fmt, text[:80], shown[:300])
    for action in _hostile_messages(env.unwrapped.tools[0].name):
        messages, reward, terminated, truncated, info = asyncio.run(env.astep(action))
        tried += 1
        assert env.observation_space.contains(messages) and messages
        assert not terminated and not truncated
    assert tried >= 28
    # The transcript holds every step and still renders.
    assert env.unwrapped.render() is None or isinstance(env.unwrapped.render(), str)
    env.close()


def test_deep_arguments_error_names_the_limit():
    env = envs.make("guess-number-v0")
    env.reset(seed=0)
    messages, *_, info = env.step(_wrap("hermes", "guess", "[" * 1000))
    assert "nested deeper than the limit of 64 levels" in messages[-1]["content"]
    messages, *_ = env.step(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "guess", "arguments": _deep_dict(100_000)}}],
        }
    )
    assert "64" in messages[-1]["content"] and "nested" in messages[-1]["content"]
    # The recorded assistant message renders: as_message never meets the deep dict.
    assert env.unwrapped.transcript[-2]["role"] == "assistant"


def _calls(name: str, arguments: list[dict]) -> dict:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": a}}
            for i, a in enumerate(arguments)
        ],
    }


def test_thousand_tool_calls_run_up_to_the_cap_and_each_gets_a_result():
    # 1000 calls are over the default 32768-character reply limit (a clear error, tested below).
    env = envs.make("guess-number-v0", tools=["calculator"], max_action_chars=100_000)
    env.reset(seed=0)
    action = _calls("calculator", [{"expression": f"{i} + 1"} for i in range(1000)])
    messages, reward, terminated, truncated, info = env.step(action)
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [f"c{i}" for i in range(1000)]
    assert [m["content"] for m in tool_messages[:8]] == [str(i + 1) for i in range(8)]
    assert all(m["content"].startswith("Not run: only the first 8 tool calls") for m in tool_messages[8:])
    assert info["tool_calls"] == 1000 and info["tool_calls_not_run"] == 992
    note = messages[-1]
    assert note["role"] == "user" and "1000 tool calls" in note["content"] and "9-1000" in note["content"]
    assert reward == 0.0 and not terminated and not truncated


def test_thousand_tool_calls_as_text_with_a_raised_reply_limit():
    env = envs.make(
        "guess-number-v0", tools=["calculator"], max_action_chars=200_000, max_tool_calls_per_turn=3
    )
    env.reset(seed=0)
    block = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2 * 3"}}\n</tool_call>'
    messages, *_, info = env.step("\n".join([block] * 1000))
    assert sum(m["role"] == "tool" for m in messages) == 1000
    assert info["tool_calls_not_run"] == 997


def test_calls_over_the_reply_limit_are_a_clear_error():
    env = envs.make("guess-number-v0", tools=["calculator"])
    env.reset(seed=0)
    block = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2 * 3"}}\n</tool_call>'
    messages, *_, info = env.step("\n".join([block] * 1000))
    assert "limit is 32768" in info["format_error"]
    action = _calls("calculator", [{"expression": f"{i} + 1"} for i in range(1000)])
    messages, *_, info = env.step(action)
    assert "over 32768 characters (the limit)" in info["format_error"]


def test_tool_time_budget_cuts_a_sandboxed_python_call_and_skips_the_rest():
    env = envs.make("code-sandbox-v0", max_tool_time_s=1.0)
    env.reset(seed=0)
    slow = {"code": "import time\ntime.sleep(8)\nprint('done')"}
    messages, reward, terminated, truncated, info = env.step(_calls("python", [slow, slow, slow]))
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert len(tool_messages) == 3
    assert (
        tool_messages[0]["content"].startswith("Cut: stopped after")
        and "done" not in tool_messages[0]["content"]
    )
    assert all(
        "Not run: this turn's tool time budget of 1 s ran out at call 1" in m["content"]
        for m in tool_messages[1:]
    )
    assert info["tool_call_cut"] == "python" and info["tool_calls_not_run"] == 2
    assert (
        "ran out during call 1 (`python`)" in messages[-1]["content"]
        and "calls 2-3 were not run" in messages[-1]["content"]
    )
    assert not terminated and not truncated


def test_tool_time_budget_also_holds_for_sync_function_tools_in_astep():
    from tools import tool

    @tool
    def nap(seconds: float) -> str:
        """Sleep.

        Args:
            seconds: how long.
        """
        import time

        time.sleep(seconds)
        return "awake"

    env = envs.make("guess-number-v0", tools=[nap], max_tool_time_s=0.3)
    env.reset(seed=0)
    messages, *_, info = asyncio.run(
        env.astep(_calls("nap", [{"seconds": 0}, {"seconds": 3}, {"seconds": 0}]))
    )
    contents = [m["content"] for m in messages if m["role"] == "tool"]
    assert contents[0] == "awake" and contents[1].startswith("Cut:") and contents[2].startswith("Not run:")


def test_step_after_max_turns_truncation_pays_nothing():
    env = envs.make("guess-number-v0", max_turns=1)
    env.reset(seed=5)
    secret = env.unwrapped.secret
    _, _, terminated, truncated, info = env.step("1" if secret != 1 else "2")
    assert truncated and info["truncated_reason"] == "max_turns"
    for move in [str(secret), _calls("guess", [{"number": secret}])]:
        messages, reward, terminated, truncated, info = env.step(move)
        assert reward == 0.0 and truncated and info["episode_ended"]
        assert "has ended" in messages[0]["content"] and "reset()" in messages[0]["content"]
    messages, reward, *_ = asyncio.run(env.astep(str(secret)))
    assert reward == 0.0
    # The env itself knows: stepping past the wrappers refuses too, and the secret was never guessed.
    _, reward, *_ = env.unwrapped.step(str(secret))
    assert reward == 0.0 and env.unwrapped.total_reward == 0.0
    env.reset(seed=5)
    assert env.step(str(secret))[1] == 1.0  # a new episode pays again


def test_step_after_termination_charges_no_penalty_or_turn_cost():
    from envs.wrappers import RewardShaping

    env = RewardShaping(envs.make("guess-number-v0"), turn_cost=0.5)
    env.reset(seed=5)
    _, reward, terminated, _, _ = env.step(str(env.unwrapped.secret))
    assert terminated and reward == 0.5
    for action in ["garbage", "50", None]:
        _, reward, terminated, _, info = env.step(action)
        assert reward == 0.0 and terminated and info["episode_ended"]


def test_step_after_format_error_truncation_pays_nothing():
    from envs.wrappers import ActionFormat

    env = ActionFormat(envs.make("guess-number-v0").unwrapped, penalty=0.5, max_consecutive=1)
    env.reset(seed=5)
    assert env.step("?")[3] is True
    _, reward, _, truncated, _ = env.step(str(env.unwrapped.secret))
    assert reward == 0.0 and truncated


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_step_before_reset_says_so(env_id):
    env = envs.make(env_id)
    for target in (env, env.unwrapped):
        with pytest.raises(ResetNeeded, match="reset"):
            target.step("hello")
        with pytest.raises(gymnasium.error.ResetNeeded):
            asyncio.run(target.astep("hello"))


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_bad_reset_options_name_the_valid_ones(env_id):
    env = envs.make(env_id)
    declared = type(env.unwrapped).reset_options
    assert declared is not None, f"{env_id} must declare its reset options"
    with pytest.raises(InvalidOptions, match="unknown reset option 'seed_offset'") as err:
        env.reset(seed=0, options={"seed_offset": 3})
    assert all(key in str(err.value) for key in declared)
    for options in (["difficulty"], "easy", 5):
        with pytest.raises(TypeError, match="must be a dict"):
            env.reset(seed=0, options=options)
    if "difficulty" in declared:
        with pytest.raises(ValueError, match="'difficulty' must be one of .*got 'nightmare'"):
            env.reset(seed=0, options={"difficulty": "nightmare"})
        for good in declared["difficulty"]:
            assert env.reset(seed=0, options={"difficulty": good})[1]["difficulty"] == good
    # A failed reset leaves the env usable.
    env.reset(seed=0)
    assert env.step(env.expert_action())[0]


def test_reset_option_types_are_checked():
    env = envs.make("code-sandbox-v0")
    with pytest.raises(ValueError, match="'index' must be int, got str"):
        env.reset(options={"index": "3"})
    with pytest.raises(ValueError, match="'index' must be int, got bool"):
        env.reset(options={"index": True})
    assert env.reset(options={"index": 3})[1]["problem_id"]


def test_builtin_tool_names_are_accepted():
    env = envs.make("guess-number-v0", tools=["python", "calculator"])
    assert [s["function"]["name"] for s in env.tool_schemas] == ["guess", "python", "calculator"]
    env = envs.make("guess-number-v0", tools="python")
    assert [t.name for t in env.tools] == ["guess", "python"]
    env.reset(seed=0)
    messages, *_ = env.step(_calls("python", [{"code": "print(6 * 7)"}]))
    assert "42" in messages[0]["content"]


@pytest.mark.parametrize(
    ("tools", "error", "match"),
    [
        (["pythn"], ValueError, "neither a built-in tool .*calculator.*python"),
        ("nope", ValueError, "neither a built-in tool"),
        ([42], TypeError, "built-in tool names .*calculator.*got int"),
        ([print], TypeError, "@tools.tool"),
        ({"python": True}, TypeError, "got dict"),
        (["missing.yaml"], ValueError, "cannot read"),
        (["python", "python"], ValueError, "duplicate tool name .python."),
    ],
)
def test_bad_tools_fail_at_make(tools, error, match):
    with pytest.raises(error, match=match):
        env = envs.make("guess-number-v0", tools=tools)
        _ = env.tools  # duplicates are found when the own and extra tools meet


def test_turn_limits_are_checked_at_make():
    for bad in [
        {"max_tool_calls_per_turn": 0},
        {"max_tool_time_s": -1},
        {"max_tool_time_s": "30"},
        {"max_action_chars": 0},
    ]:
        with pytest.raises(ValueError):
            envs.make("guess-number-v0", **bad)
    env = envs.make("guess-number-v0", max_tool_calls_per_turn=None, max_tool_time_s=None)
    assert env.unwrapped.max_tool_calls_per_turn is None and env.unwrapped.max_tool_time_s is None


def test_play_strips_terminal_escapes(capsys):
    from envs.__main__ import play_episode, terminal_safe
    from tools import tool

    @tool
    def echo(text: str) -> str:
        """Repeat the text.

        Args:
            text: what to repeat.
        """
        return text

    hostile = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\rbell\x07\x9b31m\u202eok\tdone\nline2"
    assert terminal_safe(hostile) == "linkbellok\tdone\nline2"
    env = envs.make("guess-number-v0", tools=[echo])
    replies = iter(
        ['<tool_call>{"name": "echo", "arguments": {"text": ' + json.dumps(hostile) + "}}</tool_call>"]
    )
    play_episode(env, 0, lambda: next(replies, None))
    out = capsys.readouterr().out
    assert "linkbellok\tdone\nline2" in out
    assert not any(c in out for c in "\x1b\x07\r\x9b\u202e")
