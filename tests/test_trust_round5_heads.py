"""Issue 45 leftovers of items 5 and 7: a deadline on every request head, on every server.

Before, the `--workers` front bounded only a connection's first head: on a kept-alive connection the
second request's headers could trickle forever (uvicorn stops its keep-alive timer at the first byte),
and the single-process server (no `--workers`) had no head deadline at all. Real servers on loopback,
real sockets; the trickle never sends the blank line that ends a head.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest

from turngym.serving.loopback_server import spawn_server, stop_server

DEADLINE_S = 3
NEVER_S = 90  # far past the deadline: a connection still open then was never going to be closed


@pytest.fixture(scope="module", params=["workers", "one process"])
def server(request):
    workers = ["--workers", "2"] if request.param == "workers" else []
    url, proc = spawn_server(["-m", "envs", "serve", *workers, "--body-timeout", str(DEADLINE_S)])
    yield url
    stop_server(proc)


def _connect(url: str) -> socket.socket:
    host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=NEVER_S)


def _closed_while_trickling(sock: socket.socket) -> bool:
    """Send a header line every half second; True once the server closes the connection."""
    stop = threading.Event()

    def trickle() -> None:
        n = 0
        while not stop.wait(0.5):
            n += 1
            with contextlib.suppress(OSError):
                sock.sendall(b"X-Slow-%d: 1\r\n" % n)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        while True:
            chunk = sock.recv(65536)  # TimeoutError after NEVER_S: never closed
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    finally:
        stop.set()
        thread.join()
        sock.close()


def test_a_first_head_that_trickles_is_closed(server):
    sock = _connect(server)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    assert _closed_while_trickling(sock)


def test_a_second_head_on_a_kept_alive_connection_is_closed(server):
    sock = _connect(server)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first:
        first += sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first[:80]
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    assert _closed_while_trickling(sock)


def test_a_whole_head_is_still_served_after_the_deadline_passed_on_another(server):
    import httpx

    assert httpx.get(f"{server}/health", timeout=30).status_code == 200
