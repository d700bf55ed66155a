"""The env core of issue 35: the tool layer (`envs.tool_layer.env_tools.EnvTools`) uses an env only through public
members, one respond hook serves `step` and `astep` (sync or `async def`), and the end of an episode is
recorded once, by the base env, for the whole wrapper stack."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

import envs
from envs.core.assistant_turn import AssistantTurn
from envs.core.errors import ResetNeeded
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from envs.tool_layer.env_tools import EnvTools
from envs.wrappers import MaxTurns
from tools import tool
from turngym.chat.calls import ToolCall
from turngym.chat.message import user

ROOT = Path(__file__).resolve().parents[2]


@tool
def shout(text: str) -> str:
    """Say `text` louder."""
    return text.upper()


class PublicOnly:
    """Not a TextEnv: only the members EnvTools may use (own_tools, after_tool_call)."""

    def __init__(self):
        self.seen: list[str] = []

    def own_tools(self):
        return [shout]

    def after_tool_call(self, call, result, turn_info):
        self.seen.append(result.content)
        return StepResult([user("done")], 1.0, terminated=True) if result.content == "STOP" else None


def _turn(*texts: str) -> AssistantTurn:
    calls = tuple(ToolCall(f"c{i}", "shout", {"text": t}) for i, t in enumerate(texts))
    return AssistantTurn("", calls)


def test_the_tool_layer_runs_a_turn_on_any_object_with_the_public_members():
    owner = PublicOnly()
    layer = EnvTools(owner, max_tool_calls_per_turn=2)
    messages, reward, terminated, _, info = asyncio.run(layer.run_turn(_turn("hi", "stop", "never")))
    assert [m["content"] for m in messages[:2]] == ["HI", "STOP"]
    assert owner.seen == ["HI", "STOP"]  # the hook, in call order; the third call was not run
    assert (reward, terminated, info["tool_calls_not_run"]) == (1.0, True, 1)


def test_the_layer_holds_its_env_weakly_so_an_env_is_freed_by_reference_counting():
    import gc

    env = envs.make("guess-number-v0", tools=[shout]).unwrapped
    layer = env.env_tools
    assert layer.env is env
    gc.disable()
    try:
        del env
        assert layer.env is None  # no cycle: freed at once, not by the cyclic collector
    finally:
        gc.enable()


def test_the_text_env_and_the_tool_modules_do_not_import_each_other():
    def imported(path: str) -> set[str]:
        tree = ast.parse((ROOT / path).read_text())
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}

    assert "envs.core.text_env" not in imported("envs/tool_layer/tool_turn.py") | imported(
        "envs/tool_layer/env_tools.py"
    )
    assert "envs.tool_layer.env_tools" not in imported("envs/tool_layer/tool_turn.py")


class Echo(TextEnv):
    """One hook, `async def`: `step` runs it to completion, `astep` awaits it."""

    def _reset(self, options):
        return [user("Say something.")], {}

    async def _respond(self, turn):
        await asyncio.sleep(0)
        return StepResult(
            [user(turn.content[::-1])], float(len(turn.content)), terminated=turn.content == "bye"
        )

    def own_tools(self):
        return [shout]


def _play(env, actions, use_astep):
    env.reset(seed=0)
    return [asyncio.run(env.astep(a)) if use_astep else env.step(a) for a in actions]


def test_one_async_hook_serves_step_and_astep_alike():
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "a", "function": {"name": "shout", "arguments": {"text": "x"}}}],
    }
    actions = ["hello", call, "bye", "after the end"]
    by_step, by_astep = _play(Echo(), actions, False), _play(Echo(), actions, True)
    assert by_step == by_astep
    assert by_step[0][:3] == ([user("olleh")], 5.0, False)
    assert by_step[1][0][0]["content"] == "X"
    assert by_step[3][1:4] == (0.0, True, False) and by_step[3][4]["episode_ended"]


def test_an_async_hook_under_a_running_loop_still_steps_synchronously():
    async def inside():
        env = Echo()
        env.reset(seed=0)
        return env.step("abc")  # a sync step inside a running loop: run in a worker thread

    assert asyncio.run(inside())[0] == [user("cba")]


class OldTwins(TextEnv):
    """An env written before one hook: `_respond` for step, `_arespond` for astep, `_after_tool_call`."""

    def _reset(self, options):
        return [user("go")], {}

    def _respond(self, turn):
        return StepResult([user("sync")])

    async def _arespond(self, turn):
        return StepResult([user("async")])

    def own_tools(self):
        return [shout]

    def _after_tool_call(self, call, result, turn_info):
        return StepResult([user("hooked")], 2.0, terminated=True)


def test_old_twins_and_the_old_hook_name_keep_working():
    env = OldTwins()
    env.reset(seed=0)
    assert env.step("x")[0] == [user("sync")]
    assert asyncio.run(env.astep("x"))[0] == [user("async")]
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "a", "function": {"name": "shout", "arguments": {"text": "y"}}}],
    }
    messages, reward, terminated, _, _ = env.step(call)
    assert [m["content"] for m in messages] == ["Y", "hooked"] and (reward, terminated) == (2.0, True)


def test_the_end_a_wrapper_decides_is_recorded_once_by_the_base_env():
    stack = MaxTurns(MaxTurns(envs.make("guess-number-v0").unwrapped, 5), 1)
    stack.reset(seed=0)
    assert stack.step("1")[3]  # the outer limit truncates
    base = stack.unwrapped
    assert base.episode_over and base._ended_as == (False, True)
    assert stack._ended is None and stack.env._ended is None  # no layer keeps its own record
    for stepped in (stack, stack.env, base):  # every layer refuses, through the base env
        messages, reward, terminated, truncated, info = stepped.step("50")
        assert (reward, terminated, truncated, info["episode_ended"]) == (0.0, False, True, True)
    assert base.guesses == [1]
    stack.reset(seed=0)
    assert not base.episode_over and stack.step("50")[4]["format_error"] is None


def test_step_before_reset_raises_at_every_layer():
    with pytest.raises(ResetNeeded):
        envs.make("guess-number-v0").step("50")
    with pytest.raises(ResetNeeded):
        asyncio.run(Echo().astep("50"))
