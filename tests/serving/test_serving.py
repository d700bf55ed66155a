"""The shared serving layer on a real uvicorn on loopback: gate, body limits, token and the error shape."""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

import httpx
import pytest

from turngym.common.cli_errors import UsageError
from turngym.serving import (
    AdmissionGate,
    RequestError,
    add_server_args,
    make_app,
    parse_json_object,
    read_body,
    server_settings,
)
from turngym.serving.loopback_server import free_port, trickled_request

RELEASE = threading.Event()


def _app(gate: AdmissionGate):
    async def hold(_request):
        async with gate.admitted_slot():
            while not RELEASE.is_set():
                await asyncio.sleep(0.01)
        return {"held": True}

    async def echo(request):
        return parse_json_object(await read_body(request, 256 * 1024, 1.0), fields=("a", "b"))

    async def broken(_request):
        raise KeyError("a bug")

    async def health(_request):
        return {"running": gate.running, "waiting": gate.waiting}

    routes = [("GET", "/health", health), ("POST", "/hold", hold), ("POST", "/echo", echo)]
    return make_app([*routes, ("GET", "/broken", broken)], token="s3cret")


@pytest.fixture(scope="module")
def served():
    """(url, gate): the app on a free loopback port, uvicorn in a thread of this process."""
    import uvicorn

    gate = AdmissionGate(concurrency=1, queue=1, what="holds")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_app(gate), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(f"{url}/health", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    yield url, gate
    server.should_exit = True
    thread.join(10)


AUTH = {"authorization": "Bearer s3cret"}


def _error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "\n" not in error["message"], error
    return error


def test_the_gate_runs_one_queues_one_and_refuses_the_rest_with_retry_after(served):
    url, gate = served
    RELEASE.clear()

    async def main():
        async with httpx.AsyncClient(headers=AUTH, timeout=30) as client:
            first = [asyncio.ensure_future(client.post(f"{url}/hold")) for _ in range(2)]
            while gate.admitted < 2:
                await asyncio.sleep(0.01)
            assert (gate.running, gate.waiting) == (1, 1)
            refused = await client.post(f"{url}/hold")
            RELEASE.set()
            return refused, await asyncio.gather(*first)

    refused, held = asyncio.run(main())
    assert "1 holds running and 1 waiting" in _error(refused, 429, "overloaded")["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert [r.json() for r in held] == [{"held": True}] * 2
    assert (gate.admitted, gate.running) == (0, 0)


def test_bodies_over_the_cap_are_413_by_header_and_by_stream(served):
    url, _ = served
    _error(httpx.post(f"{url}/echo", content=b"x" * 300_000, headers=AUTH), 413, "body_too_large")

    def chunks():  # no Content-Length: the cap holds while streaming
        for _ in range(10):
            yield b" " * 30_000

    _error(httpx.post(f"{url}/echo", content=chunks(), headers=AUTH), 413, "body_too_large")
    assert httpx.post(f"{url}/echo", json={"a": 1}, headers=AUTH).json() == {"a": 1}


def test_a_trickled_body_gets_408(served):
    url, _ = served
    reply = trickled_request(url, "/echo", AUTH)
    assert b" 408 " in reply.split(b"\r\n", 1)[0] and b'"body_timeout"' in reply


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "JSON object, got list"),
        (b'{"a": 1, "c": 2}', "unknown field 'c'"),
        (b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
    ],
)
def test_bad_bodies_are_400_bad_request_saying_why(served, body, needle):
    url, _ = served
    response = httpx.post(f"{url}/echo", content=body, headers=AUTH)
    assert needle in _error(response, 400, "bad_request")["message"]


def test_token_unknown_routes_methods_and_bugs_all_answer_in_the_one_shape(served):
    url, _ = served
    assert httpx.get(f"{url}/health").status_code == 200  # open without the token
    _error(httpx.post(f"{url}/echo", json={}), 401, "unauthorized")
    _error(httpx.post(f"{url}/echo", json={}, headers={"authorization": "Bearer wrong"}), 401, "unauthorized")
    _error(httpx.get(f"{url}/nowhere", headers=AUTH), 404, "not_found")
    _error(httpx.get(f"{url}/echo", headers=AUTH), 405, "method_not_allowed")
    assert "KeyError" in _error(httpx.get(f"{url}/broken", headers=AUTH), 500, "internal_error")["message"]


def _settings(*argv: str, env: dict[str, str] | None = None) -> dict:
    parser = argparse.ArgumentParser()
    add_server_args(parser, port=free_port(), token_env="TURNGYM_TEST_TOKEN", max_concurrency=8)
    return server_settings(parser.parse_args(list(argv)), token_env="TURNGYM_TEST_TOKEN")


def test_server_settings_are_checked_before_anything_starts(monkeypatch):
    monkeypatch.delenv("TURNGYM_TEST_TOKEN", raising=False)
    settings = _settings()
    assert (settings["max_concurrency"], settings["max_queue"], settings["token"]) == (8, 32, None)
    assert settings["max_body_bytes"] == 16 << 20
    for argv, needle in [
        (("--host", "0.0.0.0"), "--token TOKEN (or TURNGYM_TEST_TOKEN)"),
        (("--max-concurrency", "0"), "--max-concurrency must be at least 1"),
        (("--max-queue", "-1"), "--max-queue must be 0 or more"),
        (("--max-body-mb", "0"), "--max-body-mb must be > 0"),
        (("--body-timeout", "nan"), "--body-timeout must be"),
    ]:
        with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            _settings(*argv)
    monkeypatch.setenv("TURNGYM_TEST_TOKEN", "t")
    assert _settings("--host", "0.0.0.0")["token"] == "t"


def test_gate_refuses_bad_limits():
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        AdmissionGate(0, 1)
    assert RequestError(429, "overloaded", "x", retry_after=0.2).headers == {"Retry-After": "1"}
