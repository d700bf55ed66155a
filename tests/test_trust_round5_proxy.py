"""Issue 45, item 4: the per-client session cap keys on the socket's peer; `X-Forwarded-For` counts only
from a proxy the operator names (`--trusted-proxy`). Before, uvicorn believed the header from 127.0.0.1
(or whatever `$FORWARDED_ALLOW_IPS` said): one host sending `X-Forwarded-For: not-an-ip-<i>` took every
session, cap or not, and 127.0.0.1 itself then got 503. Real servers in child processes, real sockets.
"""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from turngym.serving.loopback_server import ROOT, spawn_server, stop_server

SESSION = {"env_id": "guess-number-v0"}


def _open_sessions(url: str, address: str, forwarded: list[str]) -> list[int]:
    """One POST /v1/sessions per forwarded name, each on a new connection from `address` (so that a
    `--workers` front hands them out in turn); their statuses."""
    statuses = []
    for name in forwarded:
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(base_url=url, transport=transport, timeout=30) as client:
            made = client.post("/v1/sessions", json=SESSION, headers={"x-forwarded-for": name})
            statuses.append(made.status_code)
    return statuses


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["one-process", "workers-2"])
def test_forwarded_headers_do_not_make_new_clients(workers):
    # 8 sessions in all, 4 per client (with two workers: 4 each, 2 per client on each).
    sessions = ["--max-sessions", "4" if workers else "8"]
    # `$FORWARDED_ALLOW_IPS=*` would make uvicorn believe the header from anyone: it must not matter.
    url, proc = spawn_server(["-m", "envs", "serve", *sessions, *workers], env={"FORWARDED_ALLOW_IPS": "*"})
    try:
        hog = _open_sessions(
            url, "127.0.0.1", [f"not-an-ip-{i}" for i in range(4)] + [f"10.9.0.{i}" for i in range(4)]
        )
        other = _open_sessions(url, "127.0.0.2", ["whatever"])
    finally:
        stop_server(proc)
    assert hog.count(201) == 4, f"one host opened {hog.count(201)} of 8 sessions: {hog}"
    assert set(hog) == {201, 429}
    assert other == [201], "another client found no session left"


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["one-process", "workers-2"])
def test_behind_a_trusted_proxy_the_forwarded_client_counts(workers):
    sessions = ["--max-sessions", "4" if workers else "8"]
    url, proc = spawn_server(["-m", "envs", "serve", *sessions, *workers, "--trusted-proxy", "127.0.0.1"])
    try:
        # The proxy (127.0.0.1) relays eight clients; each of them is one client.
        relayed = _open_sessions(url, "127.0.0.1", [f"10.9.0.{i}" for i in range(8)])
        # A peer that is not the named proxy is still known by its own address, whatever it claims.
        direct = _open_sessions(url, "127.0.0.2", ["10.9.0.100"])
    finally:
        stop_server(proc)
    assert relayed == [201] * 8
    assert direct == [503]  # the table is full: the claim did not buy it a fresh share either way


def _refusal(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", [["-m", "envs", "serve"], ["-m", "turngym.engines.serve"]])
def test_a_trusted_proxy_must_be_an_address(module):
    done = _refusal([*module, "--trusted-proxy", "*", "--port", "1"])
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "--trusted-proxy '*'" in line and "\n" not in line
