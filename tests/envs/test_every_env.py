"""Contracts every registered env keeps: check_env, determinism, expert success, robustness to bad actions."""

import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import envs

# TextArena's games have no scripted expert; tests/envs/test_textarena.py runs their contracts.
ALL_IDS = [s.id for s in envs.list_envs() if not s.category.startswith("textarena")]
BAD_ACTIONS = [
    "",
    "   ",
    "x" * (1 << 20),
    "\x00\x01\x02\x1b[31m\x7f",
    None,
    42,
    3.5,
    b"bytes",
    ["list"],
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": 5},
    {"role": "assistant", "content": "", "tool_calls": "nope"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "no_such_tool", "arguments": "{}"}}],
    },
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": "{}"}}]},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "x", "arguments": 7}}]},
    {"role": "assistant", "content": "", "tool_calls": [5]},
    "<tool_call>\n{not json}\n</tool_call>",
    "<tool_call>\n" + '{"name": "no_such_tool", "arguments": {}}' + "\n</tool_call>",
]


def _expert_episode(env_id: str, seed: int, max_steps: int = 200):
    env = envs.make(env_id)
    messages, _ = env.reset(seed=seed)
    transcript = [messages]
    total, info = 0.0, {}
    for _ in range(max_steps):
        messages, reward, terminated, truncated, info = env.step(env.expert_action())
        transcript.append(messages)
        total += reward
        if terminated or truncated:
            break
    env.close()
    return transcript, total, info


@pytest.mark.parametrize("env_id", ALL_IDS)
@pytest.mark.filterwarnings(
    "ignore:.*different from the unwrapped version"
)  # checking the wrapped env is the point
def test_check_env(env_id):
    env = envs.make(env_id)
    check_env(env.unwrapped, skip_render_check=False)
    check_env(env)
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_same_seed_same_episode(env_id):
    a, ra, _ = _expert_episode(env_id, seed=7)
    b, rb, _ = _expert_episode(env_id, seed=7)
    assert a == b and ra == rb
    c, _, _ = _expert_episode(env_id, seed=8)
    assert a[0] != c[0] or a != c


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_expert_succeeds(env_id):
    _, total, info = _expert_episode(env_id, seed=3)
    assert info.get("success") is True, (env_id, info)
    assert total > 0


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_bad_actions_never_raise_and_keep_the_episode(env_id):
    env = envs.make(env_id, max_turns=10_000)
    opening, _ = env.reset(seed=0)
    for action in BAD_ACTIONS:
        messages, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(messages), (action, messages)
        assert messages, f"{action!r} got no explanation"
        assert not terminated and not truncated, action
        assert isinstance(reward, float)
    # The episode is still playable after all that, and the expert fares as it does on a clean episode.
    for _ in range(200):
        _, _, terminated, truncated, info = env.step(env.expert_action())
        if terminated or truncated:
            break
    _, _, clean_info = _expert_episode(env_id, seed=0)
    assert info.get("success") == clean_info.get("success")
    env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
# Non-ASCII digits: '²'.isdigit() is True but int('²') raises; Arabic-Indic digits; a fullwidth digit.
@example(text="²")
@example(text="٣٤")
@example(text="guess ５")
def test_random_text_never_raises(env_id, text):
    env = envs.make(env_id, max_turns=10_000)
    env.reset(seed=1)
    messages, reward, terminated, truncated, info = env.step(text)
    assert env.observation_space.contains(messages)
    assert messages
    env.close()
