"""Tool calls are parsed once, in the rollout, and the env gets that parse as an `AssistantTurn` (issue 35).

A real episode (guess-number-v0 and its `guess` tool, the embedded model's tokenizer, scripted turns) is
played in-process and over a `RemoteEnv` whose server runs on loopback in this process, so every parse,
the rollout's and the env's, goes through the one wrapped `turngym.chat.calls.parse_tool_calls`.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

import envs
from envs.core.assistant_turn import AssistantTurn
from rollout.episode import EpisodeConfig, run_episode
from rollout.scripted_engine import ScriptedEngine
from turngym.chat.calls import write_calls

VALID = write_calls([("guess", {"number": 50})])
UNREADABLE = '<tool_call>\n{"name": "guess", "arguments": {number: 5}\n</tool_call>'  # not JSON
TURNS = [VALID, UNREADABLE]


@pytest.fixture(scope="module")
def server_url():
    """`python -m envs serve`'s app on a loopback port, in this process (its parses are counted too)."""
    uvicorn = pytest.importorskip("uvicorn")
    from envs.server.app import create_app
    from turngym.serving.loopback_server import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the env server did not start"
        time.sleep(0.05)
    yield url
    server.should_exit = True
    thread.join(10)


def _play(env, tokenizer):
    engine = ScriptedEngine(tokenizer, lambda turn, rng: TURNS[turn])
    config = EpisodeConfig(max_new_tokens=None, max_turns=len(TURNS))
    return asyncio.run(run_episode(env, engine, tokenizer, seed=3, config=config))


def _check_episode(traj, parses):
    assert not traj.failed, traj.error
    assert len(traj.turns) == len(TURNS)
    # One parse per assistant turn, of the turn's own text, for the valid call and the unreadable one.
    assert parses == TURNS
    assistant = [m for m in traj.messages if m["role"] == "assistant"]
    # The recorded messages are as before: the calls when all were readable, the text as written when not.
    assert assistant[0]["tool_calls"][0]["function"] == {"name": "guess", "arguments": {"number": 50}}
    assert assistant[1] == {"role": "assistant", "content": UNREADABLE}
    assert [t.tool_calls for t in traj.turns] == [1, 0] and [t.parse_errors for t in traj.turns] == [0, 1]
    # The env ran the call and named what was wrong with the unreadable one, from the rollout's parse.
    first_reply = traj.messages[traj.messages.index(assistant[0]) + 1]
    assert first_reply["role"] == "tool" and first_reply["tool_call_id"] == "call_0"
    notes = traj.messages[traj.messages.index(assistant[1]) + 1 :]
    note = next(m["content"] for m in notes if "could not be read" in m["content"])
    assert "tool call block 1" in note and "number: 5" in note
    assert traj.turns[1].tool_errors == 1 and traj.turns[1].format_error is None


def test_one_parse_per_turn_in_process(tokenizer, parses):
    _check_episode(_play(envs.make("guess-number-v0"), tokenizer), parses)


def test_one_parse_per_turn_over_a_remote_env(tokenizer, parses, server_url):
    env = envs.make("guess-number-v0", remote=server_url)
    try:
        assert type(env).__name__ == "RemoteEnv"
        _check_episode(_play(env, tokenizer), parses)
    finally:
        env.close()


def test_the_env_gets_the_rollouts_turn(tokenizer, parses):
    """What `astep` receives is the rollout's `AssistantTurn` itself, think block stripped from its text."""
    env = envs.make("guess-number-v0")
    seen = []
    real_astep = env.astep

    async def astep(action):
        seen.append(action)
        return await real_astep(action)

    env.astep = astep
    engine = ScriptedEngine(tokenizer, lambda turn, rng: "<think>hmm</think>\n" + VALID)
    config = EpisodeConfig(max_new_tokens=None, max_turns=1, strip_think_from_action=True)
    traj = asyncio.run(run_episode(env, engine, tokenizer, seed=3, config=config))
    assert not traj.failed and len(parses) == 1
    (turn,) = seen
    assert isinstance(turn, AssistantTurn) and turn.content == "" and turn.call_errors == ()
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [("call_0", "guess", {"number": 50})]
