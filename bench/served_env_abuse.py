"""Abuse of `python -m envs serve` on loopback: many sessions, slow clients, oversized bodies, refused kwargs.

Prints the server's open sessions, file descriptors and RSS before, under load and after the idle-session
TTL and body timeout have passed, with the after/before ratios. Nothing should be left: sessions back to
0, descriptors and memory back near the baseline.

    .venv/bin/python bench/served_env_abuse.py [--sessions 200] [--slow 50] [--oversized 20]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.loopback_server import spawn_server, stop_server  # noqa: E402

# The TTL outlasts opening the sessions (about 0.2 s each on 2 busy cores), so all are open at once.
IDLE_S, BODY_S = 60.0, 2.0


def footprint(url: str, pid: int) -> dict[str, float]:
    """Open sessions (from /health), descriptors and resident MB of the server process."""
    sessions = httpx.get(f"{url}/health", timeout=30).json()["sessions"]
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
    return {"sessions": sessions, "fds": fds, "rss_mb": rss}


def open_session(url: str) -> int:
    """One client's whole visit but the close: make, reset, one step; the session is left to expire."""
    with httpx.Client(base_url=url, timeout=120) as client:
        sid = client.post("/v1/sessions", json={"env_id": "guess-number-v0"}).json()["session_id"]
        client.post(f"/v1/sessions/{sid}/reset", json={"seed": 1})
        return client.post(f"/v1/sessions/{sid}/step", json={"action": "50"}).status_code


def refused(url: str) -> int:
    body = {"env_id": "code-sandbox-v0", "kwargs": {"isolation": "none", "tools": "/tmp/x.yaml"}}
    return httpx.post(f"{url}/v1/sessions", json=body, timeout=60).status_code


def oversized(url: str) -> int:
    return httpx.post(f"{url}/v1/sessions", content=b"x" * (17 << 20), timeout=120).status_code


def slow_body(port: int) -> socket.socket:
    """A client that sends headers and a few bytes of a 1000-byte body, then nothing (slowloris)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b'POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"env_id"')
    return sock


def slow_headers(port: int) -> socket.socket:
    """A client that never finishes its request line and headers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n")
    return sock


def main() -> int:
    """Run the abuse and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--oversized", type=int, default=20)
    parser.add_argument("--refused", type=int, default=300)
    args = parser.parse_args()
    url, proc = spawn_server(
        ["-m", "envs", "serve", "--max-sessions", str(args.sessions + 10), "--idle-timeout", str(IDLE_S)]
        + ["--body-timeout", str(BODY_S)]
    )
    port = int(url.rsplit(":", 1)[1])
    try:
        # Warm up: one session made and expired, so imports and caches count in the baseline.
        sid = httpx.post(f"{url}/v1/sessions", json={"env_id": "guess-number-v0"}, timeout=60).json()
        httpx.delete(f"{url}/v1/sessions/{sid['session_id']}", timeout=60)
        before = footprint(url, proc.pid)
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            stepped = list(pool.map(lambda _: open_session(url), range(args.sessions)))
            codes = list(pool.map(lambda _: refused(url), range(args.refused)))
            big = list(pool.map(lambda _: oversized(url), range(args.oversized)))
        bodies = [slow_body(port) for _ in range(args.slow)]
        headers = [slow_headers(port) for _ in range(args.slow)]
        load = footprint(url, proc.pid)
        elapsed = time.monotonic() - started
        time.sleep(max(IDLE_S, BODY_S) + 3)
        after_ttl = footprint(url, proc.pid)
        answered = sum(1 for s in bodies if b" 408 " in s.recv(4096))
        for sock in bodies + headers:
            sock.close()
        time.sleep(1)
        after = footprint(url, proc.pid)
        health = httpx.get(f"{url}/health", timeout=30).json()
    finally:
        stop_server(proc)
    print(
        f"load: {args.sessions} sessions (step codes {sorted(set(stepped))}), {args.refused} refused "
        f"creates (codes {sorted(set(codes))}), {args.oversized} x 17 MB bodies (codes {sorted(set(big))}), "
        f"{args.slow} trickled bodies, {args.slow} unfinished headers; {elapsed:.1f}s"
    )
    print(f"{'':>28} {'sessions':>9} {'fds':>6} {'rss MB':>8}")
    for name, row in (
        ("before", before),
        ("under load", load),
        (f"after TTL ({IDLE_S:g}s idle)", after_ttl),
        ("after clients hung up", after),
    ):
        print(f"{name:>28} {row['sessions']:>9} {row['fds']:>6} {row['rss_mb']:>8.1f}")
    print(
        f"after/before: fds {after['fds'] / before['fds']:.2f}x, rss {after['rss_mb'] / before['rss_mb']:.2f}x; "
        f"sessions expired {health['sessions_expired']}, trickled bodies answered 408: {answered}/{args.slow}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
