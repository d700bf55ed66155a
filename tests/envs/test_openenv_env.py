"""OpenEnv servers as turngym envs: `envs.make("openenv", base_url=...)` against a real server on loopback.

The server (tests/envs/openenv_server.py) speaks openenv-core 0.3.0's protocol: `/schema` and the `/ws`
session messages, pydantic action models, OpenEnv's error codes and capacity refusal.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import httpx
import pytest

import envs
from envs.remote import RemoteEnvError
from turngym.serving.loopback_server import free_port, spawn_server, stop_server

pytest.importorskip("websockets")
pytest.importorskip("uvicorn")

SERVER = Path(__file__).with_name("openenv_server.py")


def _spawn(*flags: str):
    return spawn_server([str(SERVER), *flags], ready_path="/guess/health")


@pytest.fixture(scope="module")
def server():
    url, proc = _spawn("--max-sessions", "8")
    yield url
    stop_server(proc)


def _sessions_open(url: str) -> int:
    # The server notices a closed socket a moment after close() returns.
    deadline = time.monotonic() + 10
    while True:
        count = httpx.get(f"{url}/sessions", timeout=5).json()["sessions"]
        if count == 0 or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


# ----- playing ---------------------------------------------------------------------------------------
def test_a_text_action_env_plays_to_the_end(server):
    env = envs.make("openenv", base_url=f"{server}/guess")
    try:
        assert env.unwrapped.action_target == "guess"  # the action's one free-text field
        messages, info = env.reset(seed=7)
        assert messages == [{"role": "user", "content": "Guess my number from 1 to 20. You have 5 guesses."}]
        assert info["openenv_observation"] == {"prompt": messages[0]["content"]}
        target = random.Random(7).randint(1, 20)  # the server's game, seeded by reset's seed
        wrong = 1 if target != 1 else 2
        messages, reward, terminated, truncated, info = env.step(str(wrong))
        hint = "higher" if target > wrong else "lower"
        assert messages == [{"role": "user", "content": f"{wrong} is wrong, go {hint}."}]
        assert (reward, terminated, truncated, info["format_error"], info["turn"]) == (
            0.0,
            False,
            False,
            None,
            1,
        )
        assert env.step("not a number")[1] == -0.5  # the server's own reward for a reply it could read
        assert env.unwrapped.state() == {"episode_id": "guess", "step_count": 2}
        messages, reward, terminated, truncated, info = env.step(str(target))
        assert (messages[0]["content"], reward, terminated, truncated) == ("Correct!", 1.0, True, False)
        # After `done`, nothing is sent and nothing is paid, as for every turngym env.
        assert env.step("3")[1:4] == (0.0, True, False)
        assert env.unwrapped.state()["step_count"] == 3
        assert "[assistant]\nnot a number" in env.unwrapped.render()
        # A second episode on the same session.
        assert env.reset(seed=8)[0][0]["content"].startswith("Guess my number")
        assert env.unwrapped.state()["step_count"] == 0
    finally:
        env.close()
    env.close()  # closing twice is harmless
    assert _sessions_open(server) == 0


def test_a_structured_action_env_takes_json_replies(server):
    env = envs.make(
        "openenv", base_url=f"{server}/grid", system_prompt="Walk to the goal.", format_penalty=0.25
    )
    try:
        assert env.unwrapped.action_target is None  # no single free-text field: the reply is the action
        assert "direction (one of up, down, left, right, required)" in env.unwrapped.action_help
        messages, _ = env.reset()
        assert messages == [
            {"role": "system", "content": "Walk to the goal."},
            {"role": "user", "content": "position: [0, 0]\ngoal: [2, 1]"},
        ]
        # Not JSON: told what to send, penalised by the ActionFormat wrapper, nothing sent.
        messages, reward, terminated, _, info = env.step("go up")
        assert "one JSON object" in info["format_error"] and "direction (one of up" in messages[0]["content"]
        assert (reward, terminated) == (-0.25, False)
        # JSON the action model refuses: the server's pydantic message comes back as the format error.
        _, reward, _, _, info = env.step('{"direction": "north"}')
        assert "VALIDATION_ERROR" in info["format_error"] and "direction" in info["format_error"]
        assert reward == -0.25
        _, _, _, _, info = env.step('{"direction": "up", "speed": 9}')
        assert "speed" in info["format_error"]  # extra="forbid", as OpenEnv's Action
        assert env.unwrapped.state()["step_count"] == 0
        messages, reward, terminated, _, _ = env.step('{"direction": "right", "steps": 2}')
        assert messages[0]["content"] == "position: [2, 0]\ngoal: [2, 1]" and reward == 0.0  # reward None
        messages, reward, terminated, truncated, _ = env.step('```json\n{"direction": "up"}\n```')
        assert (reward, terminated, truncated) == (1.0, True, False)
    finally:
        env.close()


def test_action_and_observation_fields_can_be_named(server):
    env = envs.make("openenv", base_url=f"{server}/guess", action_field="json", observation_field="prompt")
    try:
        env.reset(seed=7)
        target = random.Random(7).randint(1, 20)
        assert env.step(f'{{"guess": "{target}"}}')[1] == 1.0
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"action_field='answer' is not a field .*\(guess\)"):
        envs.make("openenv", base_url=f"{server}/guess", action_field="answer")
    with pytest.raises(ValueError, match=r"observation_field='text' is not a field .*\(prompt\)"):
        envs.make("openenv", base_url=f"{server}/guess", observation_field="text")


def test_astep_local_tools_and_the_call_format(server):
    """Tool calls run locally, in the format the rollout chose; only plain replies reach the server."""
    env = envs.make("openenv", base_url=f"{server}/guess", tools=["calculator"])
    hermes = '<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>'
    llama3 = '<|python_tag|>{"name": "calculator", "parameters": {"expression": "6*7"}}'

    async def play():
        env.reset(seed=7)
        env.set_tool_call_format("llama3")
        as_call = await env.astep(llama3)
        as_text = await env.astep(hermes)  # not a call in llama3's format: sent as the guess
        return as_call, as_text

    try:
        assert env.tool_schemas[0]["function"]["name"] == "calculator"
        as_call, as_text = asyncio.run(play())
        assert as_call[0][0]["role"] == "tool" and "42" in as_call[0][0]["content"]
        assert as_text[0][0]["content"] == f"{hermes!r} is not a number."  # the server's answer
        assert env.unwrapped.state()["step_count"] == 1
    finally:
        env.close()


# ----- faults ----------------------------------------------------------------------------------------
def test_bad_arguments_and_unreachable_servers():
    with pytest.raises(ValueError, match="base_url= must be"):
        envs.make("openenv", base_url="localhost:8000")
    with pytest.raises(ValueError, match="pass base_url=, not remote="):
        envs.make("openenv", remote="http://127.0.0.1:1", base_url="http://127.0.0.1:1")
    with pytest.raises(RemoteEnvError, match="unreachable .*start it or fix base_url=") as unreachable:
        envs.make("openenv", base_url=f"http://127.0.0.1:{free_port()}")
    assert unreachable.value.code == "unreachable"
    with pytest.raises(envs.UnknownEnvError):
        envs.spec("openenv")  # not in the registry, so `python -m envs serve` never connects anywhere


def test_a_server_that_is_not_openenv_is_named(server):
    with pytest.raises(RemoteEnvError, match=r"/nothing/schema answered HTTP 404 .*OpenEnv server") as no:
        envs.make("openenv", base_url=f"{server}/nothing")
    assert no.value.code == "not_openenv"


@pytest.mark.parametrize("fault", ["nonjson", "noobs", "badreward", "baddone", "wrongtype"])
def test_malformed_answers_are_one_line_errors_and_reset_recovers(server, fault):
    env = envs.make("openenv", base_url=f"{server}/faulty")
    try:
        env.reset()
        with pytest.raises(RemoteEnvError, match="the session is closed, reset\\(\\) opens a new one") as bad:
            env.step(fault)
        assert bad.value.code == "bad_response" and "\n" not in str(bad.value)
        env.reset()
        assert env.step("hello")[0] == [{"role": "user", "content": "hello"}]
    finally:
        env.close()
    assert _sessions_open(server) == 0


def test_an_env_raising_on_a_reply_is_a_format_error(server):
    env = envs.make("openenv", base_url=f"{server}/faulty")
    try:
        env.reset()
        _, reward, terminated, _, info = env.step("raise")
        assert "the env fell over (EXECUTION_ERROR)" in info["format_error"] and not terminated
        assert env.step("still here")[1] == 0.5  # the session went on
    finally:
        env.close()


def test_a_dropped_session_and_a_silent_server(server):
    env = envs.make("openenv", base_url=f"{server}/faulty", message_timeout_s=0.5)
    try:
        env.reset()
        with pytest.raises(RemoteEnvError, match="closed the session during step") as dropped:
            env.step("drop")
        assert dropped.value.code == "disconnected"
        env.reset()
        with pytest.raises(RemoteEnvError, match="did not answer step within 0.5 s") as silent:
            env.step("hang")
        assert silent.value.code == "timeout"
        env.reset()  # a new session: the late answer of the old one cannot be mistaken for this one's
        assert env.step("ok")[0][0]["content"] == "ok"
    finally:
        env.close()


def test_a_full_server_says_so():
    url, proc = _spawn("--max-sessions", "1")
    first = envs.make("openenv", base_url=f"{url}/guess")
    second = envs.make("openenv", base_url=f"{url}/guess")
    try:
        first.reset(seed=0)
        with pytest.raises(RemoteEnvError, match="is full .*CAPACITY_REACHED") as full:
            second.reset(seed=0)
        assert full.value.code == "capacity_reached" and full.value.status == 503
        first.close()
        assert _sessions_open(url) == 0
        assert second.reset(seed=0)[0]  # the slot is free again
    finally:
        first.close()
        second.close()
        stop_server(proc)


def test_unreadable_actions_never_reach_the_server(server):
    env = envs.make("openenv", base_url=f"{server}/guess")
    try:
        env.reset()
        for action in (None, 42, b"bytes", {"role": "user", "content": "x"}, "x" * 100_000):
            _, _, terminated, _, info = env.step(action)
            assert info["format_error"] and not terminated
        assert env.unwrapped.state()["step_count"] == 0
    finally:
        env.close()


def test_the_rollout_collects_episodes_from_an_openenv_server(server):
    """`collect` plays fresh copies of a made env (one server session each) with a scripted engine."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from rollout.collection import collect
    from rollout.scripted_engine import ScriptedEngine
    from turngym.engines.embedded_model import build_embedded_model

    tokenizer = AutoTokenizer.from_pretrained(build_embedded_model())
    engine = ScriptedEngine(tokenizer, lambda turn, rng: str(rng.randint(1, 20)))
    made = envs.make("openenv", base_url=f"{server}/guess", max_turns=5)
    trajectories = collect(made, engine, tokenizer, 4, group_size=2, concurrency=2)
    made.close()
    assert len(trajectories) == 4 and not trajectories.failed, [t.error for t in trajectories.failed]
    for trajectory in trajectories:
        assert trajectory.messages[0]["content"].startswith("Guess my number")
        assert 1 <= len(trajectory.turns) <= 5 and trajectory.termination in ("terminated", "truncated")
    assert _sessions_open(server) == 0


def test_a_turngym_server_is_not_mistaken_for_openenv():
    """`python -m envs serve` answers OpenEnv's /schema but has no /ws sessions: said at the first reset."""
    url, proc = spawn_server(["-m", "envs", "serve"])
    try:
        env = envs.make("openenv", base_url=url)
        with pytest.raises(
            RemoteEnvError, match="refused the WebSocket .*does not serve OpenEnv's /ws"
        ) as no:
            env.reset()
        assert no.value.code == "no_session"
        env.close()
    finally:
        stop_server(proc)
