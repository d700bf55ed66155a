"""Envs as services: a real `python -m envs serve` on loopback, driven by `envs.make(id, remote=url)`.

The remote env must answer exactly as the local one (every registered env, expert play and bad actions),
and every fault must come back as a clear JSON error.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import gymnasium
import httpx
import pytest

import envs
from envs.core.errors import InvalidOptions, ResetNeeded, UnknownEnvError
from envs.remote import RemoteEnvError
from turngym.serving.loopback_server import free_port, spawn_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
ALL_IDS = [s.id for s in envs.list_envs()]
# Parity is played by each env's scripted expert; TextArena's games have none (test_textarena.py covers them).
PLAYED_IDS = [i for i in ALL_IDS if not envs.spec(i).category.startswith("textarena")]
BAD_ACTIONS = [
    "",
    "x" * (1 << 20),
    "\x00\x01\x1b[31m",
    None,
    42,
    3.5,
    b"bytes",
    object(),
    ["list"],
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": 5},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "no_such_tool", "arguments": "{}"}}],
    },
    "<tool_call>\n{not json}\n</tool_call>",
]
SLOW_CALL = '<tool_call>{"name": "python", "arguments": {"code": "import time\\ntime.sleep(2)"}}</tool_call>'


def _spawn(*flags: str):
    return spawn_server(["-m", "envs", "serve", *flags])


@pytest.fixture(scope="module")
def server():
    url, proc = _spawn()
    yield url
    stop_server(proc)


@pytest.fixture(scope="module")
def small_server():
    """One session slot too few: 2 sessions, 1 env call at a time, none waiting, sessions idle 5 s expire.

    The operator gives guess-number-v0 the python tool (a client cannot ask for tools).
    """
    url, proc = _spawn(
        "--max-sessions",
        "2",
        "--max-sessions-per-client",  # both to this test's one client, so the third meets the full table
        "2",
        "--max-concurrency",
        "1",
        "--max-queue",
        "0",
        "--idle-timeout",
        "5",
        "--env-kwargs",
        'guess-number-v0:tools=["python"]',
    )
    yield url
    stop_server(proc)


def _health(url: str) -> dict:
    return httpx.get(f"{url}/health", timeout=5).json()


# ----- parity --------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", PLAYED_IDS)
def test_remote_env_plays_exactly_like_the_local_one(server, env_id):
    local, remote = envs.make(env_id), envs.make(env_id, remote=server)
    try:
        assert remote.tool_schemas == local.unwrapped.tool_schemas
        assert remote.unwrapped.tool_schemas == local.unwrapped.tool_schemas
        for seed in (0, 5):
            assert remote.reset(seed=seed) == local.reset(seed=seed)
            for _ in range(200):
                action = local.unwrapped.expert_action()
                assert remote.unwrapped.expert_action() == action
                expected = local.step(action)
                assert remote.step(action) == expected
                if expected[2] or expected[3]:
                    break
            # After the end both refuse the same way.
            assert remote.step("anything") == local.step("anything")
        assert remote.render() == local.unwrapped.render()
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("env_id", PLAYED_IDS)
def test_bad_actions_get_the_same_answers_remotely(server, env_id):
    local, remote = envs.make(env_id), envs.make(env_id, remote=server)
    try:
        assert remote.reset(seed=1) == local.reset(seed=1)
        for action in BAD_ACTIONS:
            expected = local.step(action)
            assert remote.step(action) == expected, action if not isinstance(action, str) else action[:40]
            if expected[2] or expected[3]:
                break
    finally:
        remote.close()
        local.close()


def test_astep_and_kwargs_go_through(server):
    local = envs.make("maze-v0", difficulty="hard", max_turns=3, format_penalty=0.5)
    remote = envs.make("maze-v0", difficulty="hard", max_turns=3, format_penalty=0.5, remote=server)

    async def play(env):
        out = [env.reset(seed=2)]
        for action in ("", "up", "left", "down"):
            out.append(await env.astep(action))
        return out

    try:
        assert asyncio.run(play(remote)) == asyncio.run(play(local))
    finally:
        remote.close()
        local.close()


# One `guess` call written in each format the rollout may choose for an episode.
CALL_IN = {
    "hermes": '<tool_call>{"name": "guess", "arguments": {"number": 50}}</tool_call>',
    "llama3": '<|python_tag|>{"name": "guess", "parameters": {"number": 50}}',
    "mistral": '[TOOL_CALLS][{"name": "guess", "arguments": {"number": 50}}]',
}


@pytest.mark.parametrize("call_format", ["hermes", "llama3", "mistral", None])
def test_the_episode_tool_call_format_is_honoured_remotely(server, call_format):
    """The rollout picks the call format per episode (`set_tool_call_format`); the server's env reads it."""
    local, remote = envs.make("guess-number-v0"), envs.make("guess-number-v0", remote=server)
    try:
        assert remote.reset(seed=0) == local.reset(seed=0)
        local.set_tool_call_format(call_format)
        remote.set_tool_call_format(call_format)
        assert remote.unwrapped.tool_call_format == call_format
        for written_in, text in CALL_IN.items():
            expected = local.step(text)
            assert remote.step(text) == expected
            # Only a call in the chosen format runs the tool; the others are read as plain replies.
            assert (expected[0][0]["role"] == "tool") == (written_in == call_format)
    finally:
        remote.close()
        local.close()


def test_tool_call_format_faults_match_the_local_env(server):
    local = envs.make("guess-number-v0")
    remote = envs.make("guess-number-v0", remote=server, tool_call_format="llama3")
    try:
        assert remote.tool_call_format == "llama3"  # chosen at make, reported by the server
        with pytest.raises(ValueError) as local_error:
            local.unwrapped.set_tool_call_format("yaml")
        with pytest.raises(ValueError) as remote_error:
            remote.set_tool_call_format("yaml")
        assert str(remote_error.value) == str(local_error.value)
        assert remote.tool_call_format == "llama3"  # a refused format changes nothing
        sid = remote.session_id
        response = httpx.put(f"{server}/v1/sessions/{sid}/tool_call_format", json={}, timeout=10)
        assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"
    finally:
        remote.close()
        local.close()


def test_remote_none_means_local():
    env = envs.make("guess-number-v0", remote=None)
    assert type(env.unwrapped).__name__ == "GuessNumberEnv"
    env.close()


# ----- errors ---------------------------------------------------------------------------------------
def test_local_errors_are_raised_with_the_same_types(server):
    with pytest.raises(UnknownEnvError, match="guess-number-v0"):
        envs.make("guess-numbr-v0", remote=server)
    with pytest.raises(ValueError, match="unknown difficulty"):
        envs.make("maze-v0", difficulty="impossible", remote=server)
    env = envs.make("maze-v0", remote=server)
    try:
        with pytest.raises(ResetNeeded):
            env.step("up")
        with pytest.raises(InvalidOptions, match="difficulty"):
            env.reset(seed=0, options={"level": 3})
        with pytest.raises(gymnasium.error.Error, match="Seed"):  # as Gymnasium's local reset raises
            env.reset(seed=-1)
    finally:
        env.close()
    with pytest.raises(ValueError, match="remote="):
        envs.make("maze-v0", remote="localhost:1")
    with pytest.raises(RemoteEnvError, match="unreachable"):
        envs.make("maze-v0", remote=f"http://127.0.0.1:{free_port()}")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/v1/sessions/nope/step", b'{"action": "up"}', 404, "unknown_session"),
        ("POST", "/v1/sessions", b"{not json", 400, "bad_request"),
        ("POST", "/v1/sessions", b"[1, 2]", 400, "bad_request"),
        ("POST", "/v1/sessions", b'{"kwargs": {}}', 400, "bad_request"),
        ("POST", "/v1/sessions", b'{"env_id": "maze-v0", "kwargs": 3}', 400, "bad_request"),
        (
            "POST",
            "/v1/sessions",
            b'{"env_id": "maze-v0", "kwargs": {"render_mode": "human"}}',
            400,
            "refused_kwarg",
        ),
        ("POST", "/v1/sessions", b'{"env_id": "maze-v0", "kwargs": {"no_such": 1}}', 400, "refused_kwarg"),
        ("POST", "/v1/sessions", b"[" * 100_000 + b"]" * 100_000, 400, "bad_request"),
        ("GET", "/v1/nothing", None, 404, "not_found"),
        ("DELETE", "/v1/envs", None, 405, "method_not_allowed"),
    ],
)
def test_every_fault_is_a_json_error(server, method, path, body, status, code):
    response = httpx.request(method, f"{server}{path}", content=body, timeout=10)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"]


def test_step_body_faults(server):
    opened = httpx.post(f"{server}/v1/sessions", json={"env_id": "maze-v0"}, timeout=10).json()
    sid = opened["session_id"]
    try:
        for body, code in [({}, "bad_request"), ({"action": None, "action_type": "no such"}, "bad_request")]:
            response = httpx.post(f"{server}/v1/sessions/{sid}/step", json=body, timeout=10)
            assert response.status_code == 400 and response.json()["error"]["code"] == code
        response = httpx.post(f"{server}/v1/sessions/{sid}/step", json={"action": "up"}, timeout=10)
        assert response.status_code == 409 and response.json()["error"]["code"] == "reset_needed"
    finally:
        assert httpx.delete(f"{server}/v1/sessions/{sid}", timeout=10).json()["closed"] is True
    response = httpx.post(f"{server}/v1/sessions/{sid}/reset", json={}, timeout=10)
    assert response.status_code == 410 and response.json()["error"]["code"] == "session_closed"


def test_openenv_routes(server):
    assert _health(server)["status"] == "healthy"
    schema = httpx.get(f"{server}/schema", timeout=5).json()
    assert set(schema) == {"action", "observation", "state"}
    assert httpx.get(f"{server}/metadata", timeout=5).json()["name"] == "turngym"
    listed = {e["id"] for e in httpx.get(f"{server}/v1/envs", timeout=5).json()["envs"]}
    assert listed == set(ALL_IDS)
    env = envs.make("guess-number-v0", remote=server)
    env.reset(seed=0)
    env.step("50")
    state = env.state()
    assert state["episode_id"] == env.session_id and state["step_count"] == 1 and state["turn"] == 1
    env.close()
    env.close()  # closing twice is harmless


def test_token_is_required_when_set():
    url, proc = _spawn("--token", "s3cret")
    try:
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        response = httpx.get(f"{url}/v1/envs", timeout=5)
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
        with pytest.raises(RemoteEnvError, match="token"):
            envs.make("maze-v0", remote=url)
        env = envs.make("maze-v0", remote=url, remote_token="s3cret")
        assert env.reset(seed=0)[0]
        env.close()
    finally:
        stop_server(proc)


# ----- limits ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_limits_sessions_calls_and_idle_expiry(small_server):
    a = envs.make("guess-number-v0", remote=small_server, retry_s=0)
    b = envs.make("guess-number-v0", remote=small_server, retry_s=0)
    # Sessions: a third is refused with 503 and a Retry-After while two are open.
    with pytest.raises(RemoteEnvError) as full:
        envs.make("guess-number-v0", remote=small_server, retry_s=0)
    assert full.value.status == 503 and full.value.code == "sessions_full" and full.value.retry_after
    a.reset(seed=0)
    b.reset(seed=0)

    # Env calls: while a's slow tool call runs (the only slot), b's call is refused with 429 and a second
    # call on a itself with 409.
    done = threading.Event()
    result: dict = {}

    def slow() -> None:
        result["step"] = a.step(SLOW_CALL)
        done.set()

    worker = threading.Thread(target=slow)
    worker.start()
    deadline = time.monotonic() + 30
    while _health(small_server)["running"] < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(RemoteEnvError) as busy:
        b.step("50")
    assert busy.value.status == 429 and busy.value.code == "overloaded"
    response = httpx.get(f"{small_server}/v1/sessions/{a.session_id}/tools", timeout=5)
    assert response.status_code == 409 and response.json()["error"]["code"] == "session_busy"
    worker.join()
    assert done.is_set() and result["step"][4]["tool_calls"] == 1
    b.step("50")  # the slot is free again

    # Idle expiry: left alone, both sessions are closed by the server and say so.
    deadline = time.monotonic() + 30
    while _health(small_server)["sessions"] > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _health(small_server)["sessions_expired"] >= 2
    with pytest.raises(RemoteEnvError) as expired:
        a.step("50")
    assert expired.value.status == 410 and expired.value.code == "session_expired"
    a.close()
    b.close()
    # Expired sessions free their slots.
    c = envs.make("guess-number-v0", remote=small_server, retry_s=0)
    c.close()


def test_rollout_episode_runs_on_a_remote_env(server):
    """The rollout's episode runner plays a remote env unchanged (scripted engine, tiny tokenizer)."""
    pytest.importorskip("rollout")
    from rollout.agent_loop import episode_spec

    env_id, seed, kwargs = episode_spec(
        {"extra_info": {"env_id": "sokoban-v0", "seed": 3, "env_kwargs": f'{{"remote": "{server}"}}'}}
    )
    env = envs.make(env_id, **kwargs)
    try:
        assert type(env).__name__ == "RemoteEnv"
        messages, _ = env.reset(seed=seed)
        assert messages == envs.make("sokoban-v0").reset(seed=3)[0]
    finally:
        env.close()


def test_remote_env_has_the_env_contract(server):
    """RemoteEnv implements envs.core.protocol.EnvProtocol: areset as reset, and a clear refusal of what is the operator's."""
    from envs.core.protocol import EnvProtocol, conforms

    local, remote = envs.make("guess-number-v0"), envs.make("guess-number-v0", remote=server)
    try:
        assert conforms(remote) and isinstance(remote, EnvProtocol)
        assert asyncio.run(remote.areset(seed=4)) == local.reset(seed=4)
        assert remote.step("50") == local.step("50")
        assert remote.max_action_chars == local.max_action_chars
        with pytest.raises(NotImplementedError, match="set by its operator where the server starts"):
            remote.set_turn_limits(max_tool_time_s=1000)
    finally:
        remote.close()
