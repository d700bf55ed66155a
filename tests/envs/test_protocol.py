"""The env contract (envs.core.protocol): TextEnv implements it, wrappers forward it, callers use only it."""

import asyncio

import gymnasium
import pytest

import envs
from envs.core.errors import InvalidOptions
from envs.core.protocol import PROTOCOL_MEMBERS, EnvProtocol, conforms, missing_members
from envs.wrappers import EpisodeLimits, RewardShaping, TextWrapper
from tools import Tool, ToolResult

SOME_IDS = ["guess-number-v0", "tic-tac-toe-v0", "calculator-qa-v0", "code-sandbox-v0", "math-tutor-v0"]


class Countdown(gymnasium.Env):
    """A plain Gymnasium env: reset and step only."""

    def reset(self, *, seed=None, options=None):
        return [{"role": "user", "content": "go"}], {}

    def step(self, action):
        return [], 0.0, True, False, {}


def test_protocol_members_are_the_protocols():
    declared = {n for n in vars(EnvProtocol) if not n.startswith("_")} | set(EnvProtocol.__annotations__)
    assert declared == set(PROTOCOL_MEMBERS)


@pytest.mark.parametrize("env_id", SOME_IDS)
def test_made_envs_and_their_base_conform(env_id):
    env = envs.make(env_id)
    for candidate in (env, env.unwrapped):
        assert conforms(candidate) and isinstance(candidate, EnvProtocol) and missing_members(candidate) == []


def test_a_plain_gymnasium_env_does_not_and_says_what_it_lacks():
    env = Countdown()
    assert not conforms(env) and not isinstance(env, EnvProtocol)
    assert missing_members(env) == [
        "max_action_chars",
        "tool_call_format",
        "tool_schemas",
        "areset",
        "astep",
        "set_tool_call_format",
        "set_turn_limits",
    ]


def test_wrappers_forward_the_contract_to_the_env():
    base = envs.make("guess-number-v0").unwrapped
    stack = RewardShaping(EpisodeLimits(base, max_turns=3), scale=2.0)
    stack.set_tool_call_format("llama3")
    assert base.tool_call_format == "llama3" == stack.tool_call_format
    stack.tool_call_format = None  # the attribute too: a stack reads calls one way
    assert base.tool_call_format is None
    stack.set_turn_limits(max_action_chars=100, max_tool_time_s=2)
    assert base.max_action_chars == 100 == stack.max_action_chars and base.max_tool_time_s == 2.0
    assert stack.tool_schemas == base.tool_schemas


def test_areset_is_reset_and_runs_every_wrappers_hook():
    seen = []

    class Records(TextWrapper):
        def on_reset(self, messages, info):
            seen.append(len(messages))
            return messages, {**info, "recorded": True}

    for env_id in SOME_IDS:
        for seed in (0, 7):
            sync, asyn = Records(envs.make(env_id)), Records(envs.make(env_id))
            expected = sync.reset(seed=seed, options=None)
            assert asyncio.run(asyn.areset(seed=seed)) == expected and expected[1]["recorded"]
            assert asyn.unwrapped.turn == 0 and asyn.unwrapped.transcript == expected[0]
    assert len(seen) == 2 * 2 * len(SOME_IDS)


def test_areset_checks_options_and_releases_the_last_episodes_tools_on_the_callers_loop():
    closed_on = []

    class Session(Tool):
        name = "session"
        description = "Keep something for one episode."
        stateful = True

        async def run(self, args, context):
            return ToolResult("kept")

        async def aclose(self):
            closed_on.append(asyncio.get_running_loop())

    env = envs.make("guess-number-v0", tools=[Session()])

    async def play():
        await env.areset(seed=0)
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "s", "name": "session", "arguments": {}}],
        }
        assert (await env.astep(call))[0][0]["content"] == "kept"
        await env.areset(seed=1)
        return asyncio.get_running_loop()

    assert closed_on == [asyncio.run(play())]  # awaited on this loop: no thread, no second loop
    with pytest.raises(InvalidOptions, match="unknown reset option 'nope'"):
        asyncio.run(env.areset(seed=0, options={"nope": 1}))


def test_the_contract_holds_no_opponent_member():
    # An opponent comes in through the env's make kwargs (`opponent=...`); the contract is what every env has.
    assert not [name for name in PROTOCOL_MEMBERS if "opponent" in name]
    assert not hasattr(envs.make("guess-number-v0"), "attach_policy_opponent")


def test_the_rollout_refuses_an_env_without_the_contract_in_one_line():
    pytest.importorskip("rollout")
    from rollout.episode import run_episode

    traj = asyncio.run(run_episode(Countdown(), engine=None, tokenizer=None, seed=0))
    assert traj.failed and traj.error.startswith("Countdown lacks the env contract")
    assert "missing: max_action_chars, tool_call_format" in traj.error and "\n" not in traj.error
