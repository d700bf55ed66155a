"""`python -m envs serve` holds its limits against a hostile client: the attacks, replayed on loopback.

Each request is authenticated and capped by the first process that reads it (a worker relaying to
another included); a `--workers` front out of descriptors sheds connections instead of dying; malformed
JSON is a 400, never a 500; one client cannot hold every session.
"""

from __future__ import annotations

import httpx
import pytest

from tools.loopback_server import spawn_server, stop_server


@pytest.fixture(scope="module")
def server():
    url, proc = spawn_server(["-m", "envs", "serve", "--body-timeout", "2"])
    yield url
    stop_server(proc)


def test_a_json_integer_too_long_to_read_is_a_400(server):
    # Python refuses int strings over 4300 digits with a ValueError that is not a JSONDecodeError.
    digits = b"9" * 5000
    for path, body in (
        ("/v1/sessions", b'{"env_id": "guess-number-v0", "max_turns": ' + digits + b"}"),
        ("/v1/sessions/nope/reset", b'{"seed": ' + digits + b"}"),
        ("/v1/sessions", b'{"env_id": "guess-number-v0", "kwargs": {"a": [[-' + digits + b"]]}}"),
    ):
        response = httpx.post(f"{server}{path}", content=body, timeout=30)
        assert response.status_code == 400, (path, response.status_code, response.text[:300])
        error = response.json()["error"]
        assert error["code"] == "bad_request" and "\n" not in error["message"], error
        assert "set_int_max_str_digits" not in error["message"], error
