"""A client of `python -m envs serve` cannot weaken the env it is served: the attacks, replayed on loopback.

The chain this replays: `isolation="none"` on code-sandbox-v0 ran submissions unsandboxed (hidden tests
read, 13/13 scored); that code wrote a tool YAML (`entry: subprocess:getoutput`) which `tools=<yaml>`
made the server import (a root shell); `sandbox="fusion", sandbox_endpoint=<url>` sent hidden tests to
a URL the client named. Every such request is refused with 400 naming the key, before any env is made.
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

import envs
from turngym.serving.loopback_server import ROOT, free_port, spawn_server, stop_server, trickled_request

SHELL_YAML = "tools:\n  - entry: subprocess:getoutput\n"
# (env id, kwargs): what a client tried, each one a key only the operator may set.
OPERATOR_ONLY = [
    ("code-sandbox-v0", {"isolation": "none"}),
    ("code-sandbox-v0", {"sandbox": "fusion", "sandbox_endpoint": "http://127.0.0.1:9/steal"}),
    ("code-sandbox-v0", {"sandbox_endpoint": "http://127.0.0.1:9/steal"}),
    ("code-sandbox-v0", {"tools": "TOOL_YAML"}),
    ("code-sandbox-v0", {"tools": ["python"]}),
    ("code-sandbox-v0", {"problems": "/etc/passwd"}),
    ("code-sandbox-v0", {"memory_mb": 1 << 20}),
    ("code-sandbox-v0", {"run_timeout_s": 1e9}),
    ("code-sandbox-v0", {"max_runs": 10_000}),
    ("code-sandbox-v0", {"binary_reward": False}),
    ("repo-fix-v0", {"isolation": "none"}),
    ("repo-fix-v0", {"sandbox": "fusion"}),
    ("shop-assistant-v0", {"catalogue": "/etc/shadow"}),
    ("math-tutor-v0", {"interaction": "subprocess:getoutput"}),
    ("math-tutor-v0", {"interaction_config": {"entry": "subprocess:getoutput"}}),
    ("textarena/TicTacToe-v0", {"opponent": "self"}),
    ("textarena/TicTacToe-v0", {"opponent_attempts": 10**9}),
    ("textarena/TicTacToe-v0", {"game_id": "Snake-v0"}),
    ("guess-number-v0", {"reveal_range": True}),
    ("maze-v0", {"remote": "http://127.0.0.1:9"}),  # the server must not connect where clients say
    ("maze-v0", {"remote_token": "x"}),
    ("maze-v0", {"render_mode": "human"}),
    ("maze-v0", {"max_action_chars": 10**9}),
    ("maze-v0", {"max_tool_time_s": 1e9}),
    # Case, whitespace, NUL and dunder variants of operator keys are other keys: none is declared.
    ("code-sandbox-v0", {"Isolation": "none"}),
    ("code-sandbox-v0", {"ISOLATION": "none"}),
    ("code-sandbox-v0", {" isolation": "none"}),
    ("code-sandbox-v0", {"isolation\u0000": "none"}),
    ("code-sandbox-v0", {"__class__": "x"}),
    ("code-sandbox-v0", {"": "x"}),
]
# Declared keys carrying a config inside an odd type, and the make options a client may only tighten.
BAD_VALUES = [
    ("maze-v0", {"difficulty": {"isolation": "none"}}, "difficulty"),
    ("maze-v0", {"difficulty": ["easy", {"tools": "x.yaml"}]}, "difficulty"),
    ("code-sandbox-v0", {"tier": {"sandbox_endpoint": "http://127.0.0.1:9"}}, "tier"),
    ("maze-v0", {"max_turns": 10**9}, "max_turns"),
    ("maze-v0", {"max_turns": True}, "max_turns"),
    ("maze-v0", {"max_turns": "50"}, "max_turns"),
    ("maze-v0", {"max_turns": {"isolation": "none"}}, "max_turns"),
    ("maze-v0", {"format_penalty": -100.0}, "format_penalty"),
    ("maze-v0", {"format_penalty": "NaN"}, "format_penalty"),
]


def _spawn(*flags: str):
    return spawn_server(["-m", "envs", "serve", *flags])


@pytest.fixture(scope="module")
def server():
    url, proc = _spawn("--body-timeout", "1", "--env-kwargs", 'frozen-lake-v0:difficulty="easy"')
    yield url
    stop_server(proc)


def _created(url: str) -> int:
    return httpx.get(f"{url}/health", timeout=5).json()["sessions_created"]


def _open(url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{url}/v1/sessions", json=body, timeout=30)


def test_every_operator_key_is_refused_naming_it_and_nothing_is_made(server, tmp_path):
    shell = tmp_path / "shell.yaml"
    shell.write_text(SHELL_YAML)
    before = _created(server)
    for env_id, kwargs in OPERATOR_ONLY:
        kwargs = {k: (str(shell) if v == "TOOL_YAML" else v) for k, v in kwargs.items()}
        response = _open(server, {"env_id": env_id, "kwargs": kwargs})
        assert response.status_code == 400, (env_id, kwargs, response.text)
        error = response.json()["error"]
        assert error["code"] == "refused_kwarg" and error["key"] in kwargs, error
        assert "\n" not in error["message"] and repr(error["key"])[:20] in error["message"]
    assert _created(server) == before


@pytest.mark.parametrize(("env_id", "kwargs", "key"), BAD_VALUES)
def test_declared_keys_with_odd_values_and_looser_limits_are_refused(server, env_id, kwargs, key):
    before = _created(server)
    response = _open(server, {"env_id": env_id, "kwargs": kwargs})
    assert response.status_code == 400 and response.json()["error"]["key"] == key, response.text
    assert _created(server) == before


def test_kwargs_smuggled_through_other_fields_are_refused(server):
    before = _created(server)
    smuggled = [
        {"env_id": "code-sandbox-v0", "isolation": "none"},  # beside kwargs
        {"env_id": "code-sandbox-v0", "max_turns": {"isolation": "none"}},
        {"env_id": "code-sandbox-v0", "format_penalty": {"tools": "x.yaml"}},
        {"env_id": "maze-v0", "max_turns": 5, "kwargs": {"max_turns": 5}},  # given twice
        {"env_id": "maze-v0", "max_turns": 10**6},
        {"env_id": "maze-v0", "kwargs": [["isolation", "none"]]},
    ]
    for body in smuggled:
        response = _open(server, body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["code"] in ("bad_request", "refused_kwarg")
    # Through RemoteEnv too: the local type (ValueError), one line naming the key.
    with pytest.raises(ValueError, match="'isolation' is not a client option"):
        envs.make("code-sandbox-v0", remote=server, isolation="none")
    with pytest.raises(ValueError, match="max_turns=999"):
        envs.make("maze-v0", remote=server, max_turns=999)
    assert _created(server) == before


def test_reset_options_cannot_carry_constructor_keys(server):
    opened = _open(server, {"env_id": "code-sandbox-v0"}).json()
    sid = opened["session_id"]
    try:
        for options in (
            {"isolation": "none"},
            {"sandbox_endpoint": "http://127.0.0.1:9"},
            {"tools": "x.yaml"},
            {"tier": "easy", "sandbox": "fusion"},
        ):
            response = httpx.post(f"{server}/v1/sessions/{sid}/reset", json={"options": options}, timeout=30)
            assert response.status_code == 400 and response.json()["error"]["code"] == "bad_options", options
        extra = httpx.post(f"{server}/v1/sessions/{sid}/reset", json={"seed": 0, "kwargs": {}}, timeout=30)
        assert extra.status_code == 400 and extra.json()["error"]["key"] == "kwargs"
    finally:
        httpx.delete(f"{server}/v1/sessions/{sid}", timeout=30)


def test_clients_with_allowed_kwargs_still_play(server):
    env = envs.make("code-sandbox-v0", remote=server, tier="easy", max_turns=4, format_penalty=0.2)
    local = envs.make("code-sandbox-v0", tier="easy", max_turns=4, format_penalty=0.2)
    try:
        assert env.reset(seed=1) == local.reset(seed=1)
        move = local.unwrapped.expert_action()
        assert env.step(move) == local.step(move)
    finally:
        env.close()
        local.close()
    game = envs.make("tic-tac-toe-v0", remote=server, difficulty="easy", agent_mark="X", action_tool=False)
    try:
        messages, _ = game.reset(seed=0)
        assert messages
    finally:
        game.close()


def test_the_operators_kwargs_hold_and_clients_cannot_override_them(server):
    env = envs.make("frozen-lake-v0", remote=server)
    local = envs.make("frozen-lake-v0", difficulty="easy")
    try:
        assert env.reset(seed=3) == local.reset(seed=3)
    finally:
        env.close()
        local.close()
    response = _open(server, {"env_id": "frozen-lake-v0", "kwargs": {"difficulty": "hard"}})
    assert response.status_code == 400 and "set by the operator" in response.json()["error"]["message"]


def _serve_fails(*flags: str, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "envs", "serve", "--port", str(free_port()), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envs: "), done.stderr
    return lines[0]


def test_beyond_loopback_needs_a_token_and_bad_operator_settings_stop_the_start():
    import os

    plain = {k: v for k, v in os.environ.items() if k != "TURNGYM_ENV_TOKEN"}
    assert "--token" in _serve_fails("--host", "0.0.0.0", env=plain)
    assert "--token" in _serve_fails("--host", "example.invalid", env=plain)
    assert "ID:KEY=VALUE" in _serve_fails("--env-kwargs", "isolation=none", env=plain)
    assert "no-such-v0" in _serve_fails("--env-kwargs", "no-such-v0:isolation=none", env=plain)
    assert "cannot be built" in _serve_fails("--env-kwargs", 'maze-v0:difficulty="insane"', env=plain)
    url, proc = spawn_server(["-m", "envs", "serve", "--host", "0.0.0.0", "--token", "s3cret"])
    try:
        assert httpx.get(f"{url}/v1/envs", timeout=5).status_code == 401
        ok = httpx.get(f"{url}/v1/envs", headers={"authorization": "Bearer s3cret"}, timeout=5)
        assert ok.status_code == 200
    finally:
        stop_server(proc)


def test_a_trickled_body_times_out_and_an_oversized_one_is_refused(server):
    reply = trickled_request(server, "/v1/sessions")
    assert b" 408 " in reply.split(b"\r\n", 1)[0] and b"body_timeout" in reply
    big = httpx.post(f"{server}/v1/sessions", content=b"x" * (17 << 20), timeout=30)
    assert big.status_code == 413 and big.json()["error"]["code"] == "body_too_large"
