"""FusionSandbox against the real `python -m tools.sandbox.serve` server on loopback."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from tools.sandbox import FusionSandbox

pytestmark = pytest.mark.slow


def test_health_and_ping(sandbox_server):
    health = httpx.get(f"{sandbox_server}/health").json()
    assert health["status"] == "ok" and health["max_concurrency"] == 4
    assert httpx.get(f"{sandbox_server}/v1/ping").json() == "pong"


def test_run_ok_error_timeout_and_files(sandbox_server):
    fs = FusionSandbox(sandbox_server)
    assert fs.run("print(2 + 2)").stdout == "4\n"
    err = fs.run("import sys; sys.exit(5)")
    assert (err.status, err.exit_code) == ("error", 5)
    slow = fs.run("import time; time.sleep(10)", timeout_s=1)
    assert slow.status == "timeout"
    files = fs.run(
        "print(open('a.txt').read()); open('b.txt','w').write('B')",
        files={"a.txt": "A"},
        fetch_files=["b.txt"],
    )
    assert files.stdout == "A\n" and files.files == {"b.txt": b"B"}


def test_memory_limit_reaches_server(sandbox_server):
    fs = FusionSandbox(sandbox_server)
    code = "a = bytearray(300 * 2**20); print('allocated')"
    assert fs.run(code, memory_mb=1024).stdout == "allocated\n"
    low = fs.run(code, memory_mb=128)
    assert low.status == "error" and "MemoryError" in low.stderr


def test_protocol_matches_sandbox_fusion_client(sandbox_server):
    from sandbox_fusion import RunCodeRequest, run_code

    resp = run_code(RunCodeRequest(code="print('hi')", language="python"), endpoint=sandbox_server)
    assert resp.status.value == "Success" and resp.run_result.stdout == "hi\n"


def test_bad_requests_get_json_errors(sandbox_server):
    r = httpx.post(f"{sandbox_server}/run_code", json={"language": "python"})
    assert r.status_code == 400 and r.json()["status"] == "SandboxError" and "code" in r.json()["message"]
    r = httpx.post(
        f"{sandbox_server}/run_code", content=b"not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["status"] == "SandboxError"
    r = httpx.post(f"{sandbox_server}/run_code", json={"code": "x", "files": {"a": "!!!"}})
    assert r.status_code == 400 and "base64" in r.json()["message"]
    res = FusionSandbox(sandbox_server).run("x", "cobol")
    assert res.status == "sandbox_error" and "language" in res.message


def test_transport_errors_retried_then_reported():
    res = FusionSandbox("http://127.0.0.1:9", max_attempts=2).run("print(1)")
    assert res.status == "sandbox_error" and "cannot reach" in res.message


def test_async_concurrency(sandbox_server):
    fs = FusionSandbox(sandbox_server)

    async def main():
        return await asyncio.gather(*(fs.arun(f"print({i})") for i in range(8)))

    assert [r.stdout for r in asyncio.run(main())] == [f"{i}\n" for i in range(8)]


def _wait_idle(url: str) -> dict:
    for _ in range(400):
        health = httpx.get(f"{url}/health").json()
        if health["running"] == 0 and health["waiting"] == 0:
            return health
        time.sleep(0.05)
    raise AssertionError(f"server never went idle: {health}")


def test_read_timeout_is_not_retried(sandbox_server):
    # The run may have happened: running it again would double its side effects (and its cost).
    before = _wait_idle(sandbox_server)["started"]
    for fs in (FusionSandbox(sandbox_server, client_timeout_s=0.5),):
        res = fs.run("import time; time.sleep(3)", timeout_s=5)
        assert res.status == "sandbox_error" and "not retried" in res.message
        ares = asyncio.run(fs.arun("import time; time.sleep(3)", timeout_s=5))
        assert ares.status == "sandbox_error" and "not retried" in ares.message
    assert _wait_idle(sandbox_server)["started"] - before == 2


def test_refused_connection_is_retried_until_the_server_is_up():
    from tools.sandbox.serve import spawn_server
    from turngym.serving.loopback_server import free_port, stop_server

    port = free_port()
    started: list = []
    # The server comes up while the client is already retrying (a refused connection ran nothing).
    starter = threading.Timer(0.3, lambda: started.append(spawn_server(port=port)))
    starter.start()
    try:
        res = FusionSandbox(f"http://127.0.0.1:{port}", max_attempts=20).run("print(7)")
        assert res.status == "ok" and res.stdout == "7\n"
    finally:
        starter.join()
        for _url, proc in started:
            stop_server(proc)


def test_per_call_compile_timeout(sandbox_server):
    fs = FusionSandbox(sandbox_server, compile_timeout_s=20)
    cpp = "int main() { return 0; }\n"  # SandboxFusion's protocol has no plain C
    assert fs.run(cpp, "cpp").status == "ok"
    res = fs.run(cpp, "cpp", compile_timeout_s=0.001)
    assert res.status == "compile_error" and "timed out" in res.message
