"""`python -m envs serve` holds its limits against a hostile client: the attacks, replayed on loopback.

Each request is authenticated and capped by the first process that reads it (a worker relaying to
another included); a `--workers` front out of descriptors sheds connections instead of dying; malformed
JSON is a 400, never a 500; one client cannot hold every session.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

import envs
from turngym.serving.loopback_server import spawn_server, stop_server


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


# ----- --workers: a request relayed to another worker is checked where it is first read ---------------

TOKEN = "s3cret"


@pytest.fixture(scope="module")
def workers_server():
    url, proc = spawn_server(
        ["-m", "envs", "serve", "--workers", "2", "--max-body-mb", "1", "--body-timeout", "2"],
        env={"TURNGYM_ENV_TOKEN": TOKEN},
    )
    yield url
    stop_server(proc)


def _answer(sock: socket.socket) -> bytes:
    """One whole HTTP answer (status line, headers, Content-Length body) read from `sock`."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _connection_on_a_worker(url: str) -> tuple[socket.socket, int]:
    """A kept-alive connection the front gave to some worker, and that worker's index (from /health)."""
    host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=15)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    return sock, json.loads(answer.partition(b"\r\n\r\n")[2])["worker"]


def _relayed(url: str, head: str, body: bytes) -> bytes:
    """Send `head` and the start of a body for the *other* worker's session, then stall; the answer."""
    sock, index = _connection_on_a_worker(url)
    with sock:
        path = f"/v1/sessions/w{1 - index}-attacker/step"
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode() + body)
        try:
            return _answer(sock)
        except TimeoutError:
            return b"(no answer within 15 s: the relay is still reading the body)"


def test_a_relayed_request_without_the_token_is_refused_before_its_body(workers_server):
    # Headers of a chunked body and no body at all: the answer must not wait for it.
    answer = _relayed(workers_server, "Transfer-Encoding: chunked\r\n", b"")
    assert answer.startswith(b"HTTP/1.1 401") and b"unauthorized" in answer, answer[:300]


def test_a_relayed_body_over_the_cap_is_refused_while_it_streams(workers_server):
    # 1.25 MB of a chunked body against a 1 MB cap, and the rest never comes.
    chunk = b"x" * (5 << 18)
    head = f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n"
    answer = _relayed(workers_server, head, f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and b"body_too_large" in answer, answer[:300]
    too_big = f"Authorization: Bearer {TOKEN}\r\nContent-Length: {2 << 20}\r\n"
    answer = _relayed(workers_server, too_big, b"")
    assert answer.startswith(b"HTTP/1.1 413") and b"body_too_large" in answer, answer[:300]


def test_a_relayed_body_that_trickles_gets_408(workers_server):
    head = f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
    answer = _relayed(workers_server, head, b'{"action": ')
    assert answer.startswith(b"HTTP/1.1 408") and b"body_timeout" in answer, answer[:300]


def test_relayed_requests_with_the_token_still_reach_their_session(workers_server):
    made = [envs.make("guess-number-v0", remote=workers_server, remote_token=TOKEN) for _ in range(2)]
    try:
        assert sorted(env.session_id[:2] for env in made) == ["w0", "w1"]
        auth = {"authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=workers_server, headers=auth, timeout=30) as shared:
            for env in made + made[::-1]:
                reset = shared.post(f"/v1/sessions/{env.session_id}/reset", json={"seed": 1})
                assert reset.status_code == 200, reset.text
                state = shared.get(f"/v1/sessions/{env.session_id}/state").json()
                assert state["episode_id"] == env.session_id
            # The token is checked on the relay and again by the worker holding the session.
            for env in made:
                assert httpx.get(f"{workers_server}/v1/sessions/{env.session_id}/state").status_code == 401
    finally:
        for env in made:
            env.close()


# ----- --workers: a front out of file descriptors sheds connections and keeps serving ------------------

FRONT_FDS = 128
# Run `python -m envs serve` with a low descriptor limit (its workers inherit it).
_LOW_FDS = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_NOFILE, ({FRONT_FDS}, {FRONT_FDS})); "
    "sys.argv[0] = 'envs'; runpy.run_module('envs', run_name='__main__', alter_sys=True)"
)


def test_a_front_out_of_descriptors_sheds_idle_connections_instead_of_dying():
    url, proc = spawn_server(["-c", _LOW_FDS, "serve", "--workers", "2"])
    host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
    idle: list[socket.socket] = []
    try:
        # Twice the front's descriptors in connections that never send a byte (the kernel completes
        # them from the backlog whether or not the front accepts them).
        for _ in range(2 * FRONT_FDS):
            idle.append(socket.create_connection((host, int(port)), timeout=15))
        for _ in range(4):
            health = httpx.get(f"{url}/health", timeout=30)
            assert health.status_code == 200 and health.json()["workers"] == 2, health.text
        assert proc.poll() is None, "the front exited"
        env = envs.make("guess-number-v0", remote=url)
        try:
            assert env.reset(seed=1)[0]
        finally:
            env.close()
        # Shed, not served: the oldest idle connections were closed by the front.
        idle[0].settimeout(15)
        assert idle[0].recv(1) == b""
    finally:
        for sock in idle:
            sock.close()
        stop_server(proc)


# ----- one client cannot hold every session ----------------------------------------------------------


def _client_from(address: str, url: str) -> httpx.Client:
    """A client whose connections come from `address` (any 127.x.y.z reaches a loopback server)."""
    return httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address=address), timeout=30)


def test_one_client_cannot_hold_every_session():
    url, proc = spawn_server(["-m", "envs", "serve", "--max-sessions", "8"])
    try:
        with _client_from("127.0.0.1", url) as hog, _client_from("127.0.0.2", url) as other:
            # The attack: open sessions until refused, and keep them.
            held, refusal = [], None
            for _ in range(8):
                opened = hog.post("/v1/sessions", json={"env_id": "guess-number-v0"})
                if opened.status_code != 201:
                    refusal = opened
                    break
                held.append(opened.json()["session_id"])
            assert len(held) == 4, f"one client opened {len(held)} of 8 sessions"
            assert refusal is not None and refusal.status_code == 429, refusal
            assert refusal.json()["error"]["code"] == "too_many_sessions" and refusal.headers["retry-after"]
            assert "\n" not in refusal.json()["error"]["message"]
            # Everyone else still gets a session, and the hog gets one back once it closes one.
            mine = other.post("/v1/sessions", json={"env_id": "guess-number-v0"})
            assert mine.status_code == 201, mine.text
            assert hog.delete(f"/v1/sessions/{held.pop()}").status_code == 200
            again = hog.post("/v1/sessions", json={"env_id": "guess-number-v0"})
            assert again.status_code == 201, again.text
            assert hog.post("/v1/sessions", json={"env_id": "guess-number-v0"}).status_code == 429
    finally:
        stop_server(proc)
    # The operator sets the share (here every session to one client).
    url, proc = spawn_server(["-m", "envs", "serve", "--max-sessions", "3", "--max-sessions-per-client", "3"])
    try:
        made = [
            httpx.post(f"{url}/v1/sessions", json={"env_id": "guess-number-v0"}, timeout=30) for _ in range(4)
        ]
        assert [r.status_code for r in made] == [201, 201, 201, 503]
    finally:
        stop_server(proc)
