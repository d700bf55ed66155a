"""Abuse of `python -m envs serve` on loopback, one process or `--workers N`: each attack and what it got.

The server runs with a token and a descriptor limit (`--fd-limit`). Attacks, each counted as attempts
and how many the server contained (answered with the right refusal, or outlived):

- one client opening every session it can (a per-client share: 429 `too_many_sessions`), while a client
  from another address still gets one;
- many clients' sessions left open to expire, refused kwargs, 17 MB bodies, JSON integers of 5000 digits;
- with workers, requests for another worker's session on a kept-alive connection (relayed): without the
  token and no body (401), a chunked body over the cap (413), a trickled body (408), none left waiting;
- trickled bodies and unfinished headers on fresh connections;
- idle connections past the server's descriptor limit (the `--workers` front must shed, not die).

An answer shown as 0 is a connection the server closed without answering. Then prints the open sessions, descriptors and RSS (front and workers summed) before, under load, after
the idle TTL and after the clients hung up, with the after/before ratios.

    .venv/bin/python bench/served_env_abuse.py [--workers 2] [--sessions 200] [--idle 1500] [--fd-limit 1024]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import select
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from turngym.serving.loopback_server import spawn_server, stop_server  # noqa: E402

# The TTL outlasts opening the sessions (about 0.2 s each on 2 busy cores), so all are open at once.
IDLE_S, BODY_S, MAX_BODY_MB = 60.0, 2.0, 16
TOKEN = "bench-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
# `python -m envs serve ...` with the descriptor limit set first (its workers inherit it).
LIMITED = (
    "import resource, runpy, sys; n = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "sys.argv[0] = 'envs'; runpy.run_module('envs', run_name='__main__', alter_sys=True)"
)


def pids_of(pid: int) -> list[int]:
    """The server process and its children (the workers of `--workers`)."""
    children = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listed:
            children += [int(p) for p in listed.read().split()]
    return [pid, *children]


def sessions_open(url: str, workers: int) -> int:
    """Open sessions summed over the workers (`/health` answers from one; fresh connections go in turn)."""
    seen: dict[int, int] = {}
    for _ in range(8 * workers):
        health = httpx.get(f"{url}/health", timeout=30).json()
        seen[health.get("worker", 0)] = health["sessions"]
        if len(seen) == workers:
            break
    return sum(seen.values())


def footprint(url: str, pid: int, workers: int) -> dict[str, float] | None:
    """Open sessions, descriptors and resident MB of the server's processes; None once the server died."""
    fds, rss = 0, 0.0
    try:
        for each in pids_of(pid):
            fds += len(os.listdir(f"/proc/{each}/fd"))
            with open(f"/proc/{each}/status") as status:
                rss += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
        return {"sessions": sessions_open(url, workers), "fds": fds, "rss_mb": rss}
    except (OSError, StopIteration, httpx.HTTPError):  # gone, or a zombie without memory
        return None


def client(url: str, address: str = "127.0.0.1", fresh: bool = False) -> httpx.Client:
    """A client with the token whose connections come from `address` (any 127.x.y.z reaches loopback).

    `fresh`: a new connection per request, so the `--workers` front hands each to the next worker.
    """
    limits = httpx.Limits(max_keepalive_connections=0) if fresh else httpx.Limits()
    transport = httpx.HTTPTransport(local_address=address, limits=limits)
    return httpx.Client(base_url=url, headers=AUTH, transport=transport, timeout=120)


def open_session(url: str, address: str) -> int:
    """One client's whole visit but the close: make, reset, one step; the session is left to expire."""
    with client(url, address) as http:
        try:
            made = http.post("/v1/sessions", json={"env_id": "guess-number-v0"})
            if made.status_code != 201:
                return made.status_code
            sid = made.json()["session_id"]
            http.post(f"/v1/sessions/{sid}/reset", json={"seed": 1})
            return http.post(f"/v1/sessions/{sid}/step", json={"action": "50"}).status_code
        except httpx.TransportError:
            return 0  # closed without an answer (shown as 0)


def hog(url: str, attempts: int) -> tuple[int, list[int], int]:
    """One address opening sessions until refused: (sessions held, refusal codes, another address's status).

    Its sessions are closed afterwards, so they do not count against the rest of the run.
    """
    held, refusals = [], []
    with client(url, fresh=True) as http:
        for _ in range(attempts):
            made = http.post("/v1/sessions", json={"env_id": "guess-number-v0"})
            if made.status_code == 201:
                held.append(made.json()["session_id"])
            else:
                refusals.append(made.status_code)
                if len(refusals) >= 8:  # refused on every worker: that is the share
                    break
        with client(url, "127.0.0.2") as other:
            made = other.post("/v1/sessions", json={"env_id": "guess-number-v0"})
            if made.status_code == 201:
                other.delete(f"/v1/sessions/{made.json()['session_id']}")
        for sid in held:
            http.delete(f"/v1/sessions/{sid}")
    return len(held), refusals, made.status_code


def _post_status(url: str, timeout: float, **kwargs) -> int:
    """The answer's status, or 0 when the server closed the connection without one (under load its
    head deadline, --body-timeout, can pass before a starved process reads the head)."""
    try:
        return httpx.post(url, headers=AUTH, timeout=timeout, **kwargs).status_code
    except httpx.TransportError:
        return 0


def refused(url: str) -> int:
    body = {"env_id": "code-sandbox-v0", "kwargs": {"isolation": "none", "tools": "/tmp/x.yaml"}}
    return _post_status(f"{url}/v1/sessions", 60, json=body)


def oversized(url: str) -> int:
    return _post_status(f"{url}/v1/sessions", 120, content=b"x" * (17 << 20))


def long_integer(url: str) -> int:
    body = b'{"env_id": "guess-number-v0", "max_turns": ' + b"9" * 5000 + b"}"
    return _post_status(f"{url}/v1/sessions", 60, content=body)


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next((int(v.split(b":", 1)[1]) for v in lines if v.lower().startswith(b"content-length:")), 0)
    while len(body) < length and (chunk := sock.recv(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


def relayed(port: int, workers: int, kind: str) -> int:
    """A request for another worker's session on a kept-alive connection, then a stall; its status.

    `kind`: "no_token" (headers of a chunked body, no token, no body), "oversized" (a chunked body of
    17 MB, over the 16 MB cap, sent until the server answers), "trickle" (2 of 1000 bytes). 0: no answer
    within 20 s.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        index = json.loads(_answer(sock).partition(b"\r\n\r\n")[2])["worker"]
        path = f"/v1/sessions/w{(index + 1) % workers}-attacker/step"
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\n"
        if kind == "no_token":
            sock.sendall(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
        elif kind == "oversized":
            size = (MAX_BODY_MB + 1) << 20
            sock.sendall(
                f"{head}Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n{size:x}\r\n".encode()
            )
            piece = b"x" * (256 << 10)
            for _ in range(size // len(piece)):
                # Stop once an answer is in: a server that refused stops reading, and more bytes would
                # only make it reset the connection before the answer is read.
                if select.select([sock], [], [], 0)[0]:
                    break
                try:
                    sock.sendall(piece)
                except OSError:
                    break
        else:
            sock.sendall(f"{head}Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n{{}}".encode())
        try:
            status = _answer(sock).split(b" ", 2)[1]
            return int(status) if status.isdigit() else 0
        except (TimeoutError, IndexError, OSError):
            return 0


def slow_body(port: int) -> socket.socket:
    """A client that sends headers and a few bytes of a 1000-byte body, then nothing (slowloris)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(
        f"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n"
        '{"env_id"'.encode()
    )
    return sock


def slow_headers(port: int) -> socket.socket:
    """A client that never finishes its request line and headers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n")
    return sock


def idle_flood(url: str, port: int, count: int, workers: int) -> tuple[int, int, int]:
    """`count` connections that send nothing; (health checks answered of 4 during it, connects refused, sessions)."""
    socks, failed = [], 0
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        except OSError:
            failed += 1
    answered = 0
    for _ in range(4):
        with contextlib.suppress(httpx.HTTPError):
            answered += httpx.get(f"{url}/health", timeout=30).status_code == 200
    for sock in socks:
        sock.close()
    return answered, failed, len(socks)


def main() -> int:
    """Run the abuse and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--oversized", type=int, default=20)
    parser.add_argument("--refused", type=int, default=300)
    parser.add_argument("--integers", type=int, default=100)
    parser.add_argument("--relay", type=int, default=20, help="relayed attacks of each kind (--workers >= 2)")
    parser.add_argument("--idle", type=int, default=1500, help="idle connections, past --fd-limit")
    parser.add_argument("--fd-limit", type=int, default=1024, help="the server's RLIMIT_NOFILE")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.idle + 1024)), hard))
    # 8 addresses share the benign sessions; each stays within its share of the table.
    addresses = [f"127.0.1.{i + 1}" for i in range(8)]
    max_sessions = args.sessions + 10
    url, proc = spawn_server(
        ["-c", LIMITED, str(args.fd_limit), "serve", "--workers", str(args.workers)]
        + ["--max-sessions", str(max_sessions), "--idle-timeout", str(IDLE_S), "--body-timeout", str(BODY_S)],
        env={"TURNGYM_ENV_TOKEN": TOKEN},
    )
    port = int(url.rsplit(":", 1)[1])
    w = args.workers
    try:
        # Warm up: one session per worker made and closed, so imports and caches count in the baseline.
        with client(url) as http:
            for _ in range(w):
                sid = http.post("/v1/sessions", json={"env_id": "guess-number-v0"}).json()["session_id"]
                http.delete(f"/v1/sessions/{sid}")
        before = footprint(url, proc.pid, w)
        started = time.monotonic()
        held, hog_refusals, other = hog(url, max_sessions * w)
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(lambda _: refused(url), range(args.refused)))
            big = list(pool.map(lambda _: oversized(url), range(args.oversized)))
            ints = list(pool.map(lambda _: long_integer(url), range(args.integers)))
            relays = {
                kind: list(pool.map(lambda _, k=kind: relayed(port, w, k), range(args.relay if w > 1 else 0)))
                for kind in ("no_token", "oversized", "trickle")
            }
            # Last, so they are all still open (within the idle TTL) when the footprint is taken.
            stepped = list(pool.map(lambda i: open_session(url, addresses[i % 8]), range(args.sessions)))
        bodies = [slow_body(port) for _ in range(args.slow)]
        headers = [slow_headers(port) for _ in range(args.slow)]
        time.sleep(1)  # a busy server accepts them a moment later
        load = footprint(url, proc.pid, w)
        flood = idle_flood(url, port, args.idle, w)
        elapsed = time.monotonic() - started
        time.sleep(max(IDLE_S, BODY_S) + 3)
        alive = proc.poll() is None
        after_ttl = footprint(url, proc.pid, w) if alive else None
        answered = 0
        for sock in bodies:
            with contextlib.suppress(OSError):
                answered += b" 408 " in sock.recv(4096)
        for sock in bodies + headers:
            sock.close()
        time.sleep(1)
        after = footprint(url, proc.pid, w) if alive else None
        alive = alive and after is not None
    finally:
        stop_server(proc)
    share = max(1, max_sessions // 2)
    print(
        f"server: {'1 process' if w == 1 else f'--workers {w}'}, --max-sessions {max_sessions} (per client "
        f"{share}{' per worker' if w > 1 else ''}), fd limit {args.fd_limit}; {elapsed:.1f}s of attacks"
    )
    print("| attack | attempts | contained | answers |\n|---|---|---|---|")
    rows = [
        (
            "one client opens every session",
            held + len(hog_refusals),
            f"held {held} of {max_sessions * w}",
            f"refusals {sorted(set(hog_refusals))}, another address {other}",
        ),
        (
            "sessions left to expire (8 addresses)",
            args.sessions,
            sum(c == 200 for c in stepped),
            sorted(set(stepped)),
        ),
        ("refused kwargs", args.refused, sum(c == 400 for c in codes), sorted(set(codes))),
        ("17 MB bodies", args.oversized, sum(c == 413 for c in big), sorted(set(big))),
        ("5000-digit JSON integers", args.integers, sum(c == 400 for c in ints), sorted(set(ints))),
    ]
    for kind, want in (("no_token", 401), ("oversized", 413), ("trickle", 408)):
        if relays[kind]:
            got = relays[kind]
            rows.append((f"relayed, {kind}", len(got), sum(c == want for c in got), sorted(set(got))))
    rows.append(("trickled bodies (408)", args.slow, answered, ""))
    rows.append(
        (
            f"idle connections past {args.fd_limit} fds",
            flood[2],
            f"{'server alive' if alive else 'SERVER DIED'}, health {flood[0]}/4",
            f"connects refused {flood[1]}",
        )
    )
    for name, attempts, contained, answers in rows:
        print(f"| {name} | {attempts} | {contained} | {answers} |")
    print(f"\n{'':>28} {'sessions':>9} {'fds':>6} {'rss MB':>8}")
    for name, row in (
        ("before", before),
        ("under load", load),
        (f"after TTL ({IDLE_S:g}s idle)", after_ttl),
        ("after clients hung up", after),
    ):
        if row is None:
            print(f"{name:>28} {'(the server died)':>25}")
        else:
            print(f"{name:>28} {row['sessions']:>9} {row['fds']:>6} {row['rss_mb']:>8.1f}")
    if after is not None:
        print(
            f"after/before: fds {after['fds'] / before['fds']:.2f}x, rss {after['rss_mb'] / before['rss_mb']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
