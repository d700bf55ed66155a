"""Issue 45, item 5: the `--workers` front puts a deadline on the request head and caps connections per
peer. Before, a connection that sent its request line was handed to a worker at once, and uvicorn has no
deadline for the headers after it: 2400 connections trickling theirs held the workers' descriptors and
kept `/health` down for 40 s. A real `python -m envs serve --workers 2`, real sockets from distinct
loopback addresses (any 127.x.y.z reaches a loopback server).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import httpx
import pytest

from turngym.serving.loopback_server import spawn_server, stop_server

PER_PEER = 8
DEADLINE_S = 8


@pytest.fixture(scope="module")
def front():
    url, proc = spawn_server(
        ["-m", "envs", "serve", "--workers", "2", "--body-timeout", str(DEADLINE_S)]
        + ["--max-connections-per-client", str(PER_PEER)]
    )
    yield url
    stop_server(proc)


def _connect(url: str, source: str) -> socket.socket:
    host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=60, source_address=(source, 0))


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (TimeoutError if it never does)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_trickled_headers_are_closed_at_the_deadline_and_health_answers(front):
    attack = [_connect(front, "127.0.0.2") for _ in range(3 * PER_PEER)]
    stop = threading.Event()

    def trickle():
        # The request line at once (what got a connection handed over before), then a header line
        # every half second, never the blank line that ends the head.
        for sock in attack:
            with contextlib.suppress(OSError):
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        while not stop.wait(0.5):
            for sock in attack:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X-Slow: 1\r\n")

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        for _ in range(3):  # everyone else is served meanwhile
            health = httpx.get(f"{front}/health", timeout=30)
            assert health.status_code == 200, health.text
        answers = [_until_closed(sock) for sock in attack]
    finally:
        stop.set()
        trickler.join()
        for sock in attack:
            sock.close()
    # Over the peer's share: closed at once; the rest: closed at the head's deadline. None reached a
    # worker, so none was answered.
    assert answers == [b""] * len(attack)


def test_one_peer_cannot_hold_every_descriptor_of_a_worker(front):
    # Whole heads of requests whose bodies never come: each is handed over and held by a worker until
    # its body deadline (408). Three times a peer's share over two workers is more than each may hold.
    held = [_connect(front, "127.0.0.3") for _ in range(3 * PER_PEER)]
    try:
        for sock in held:
            sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            time.sleep(0.01)  # in order, so that the front hands them out in turn
        other = httpx.get(f"{front}/health", timeout=30)  # another peer still gets a worker
        answers = [_until_closed(sock) for sock in held]
    finally:
        for sock in held:
            sock.close()
    assert other.status_code == 200, other.text
    # Held by a worker until the body deadline: at most the peer's share on each of the two workers.
    # The rest were refused: by a worker (429 too_many_connections), or closed by the front when a burst
    # had more than the share waiting there at once (timing decides which).
    held_to_the_end = [a for a in answers if a.startswith(b"HTTP/1.1 408")]
    refused = [a for a in answers if a.startswith(b"HTTP/1.1 429") or a == b""]
    assert len(held_to_the_end) <= 2 * PER_PEER, f"one peer held {len(held_to_the_end)} worker connections"
    assert len(held_to_the_end) + len(refused) == len(answers), [a[:12] for a in answers]
    assert all(b"too_many_connections" in a for a in refused if a)
