"""`python -m envs serve --workers N`: N server processes behind one port, each session on one of them.

Sessions are state in one process, so every request of a session must reach the process holding it. The
front (this process) accepts each TCP connection, peeks at its first request line without reading it,
and hands the connection itself (its file descriptor, over a Unix socket pair) to a worker: the worker
named in the session id (`/v1/sessions/w<i>-...`), or the next worker in turn for a new session and other
routes. From then on the client talks to that worker directly, so the front costs one accept, one peek
and one descriptor pass per connection and nothing per request on a kept-alive connection. A worker that
receives a request for another worker's session on the same connection passes it on over that worker's
Unix socket (`envs.server.worker`). A worker that exits is started again; its sessions are lost (404).
Limits (`--max-sessions`, `--max-sessions-per-client`, `--max-concurrency`, ...) apply to each worker.

A connection is handed over only once its whole request head (request line and headers) is in, within
`--body-timeout`; until then the front holds it, and closes it at that deadline. Before, a connection
was handed over as soon as its request line arrived, and uvicorn has no deadline for the headers that
follow: 2400 connections trickling theirs held every worker's descriptors and kept `/health` down for
40 s. One peer may have at most `--max-connections-per-client` connections waiting at the front, and as
many on each worker (`envs.server.worker`); more are closed at once.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from envs.server.peer import peer_key
from envs.server.worker import worker_of
from turngym.common.cli_errors import UsageError

_REQUEST_LINE = re.compile(rb"^[A-Z]{3,8} (\S+) HTTP/1\.[01]\r?\n")
#: Connections one peer may have waiting (and on each worker) when the settings do not say: a trainer
#: that has the server to itself opens about one per session, so the default is `--max-sessions`'s.
DEFAULT_CONNECTIONS_PER_PEER = 256
_HEAD_END = re.compile(rb"\r?\n\r?\n")
# h11 (uvicorn's parser) refuses a head past 16 KB: one that long is handed over for it to refuse.
_PEEK_BYTES = 16 * 1024 + 1
# How often a connection holding part of its head is looked at again (a peek leaves the bytes readable).
_PARTIAL_POLL_S = 0.05


def worker_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings every worker builds its app from, checked as `python -m envs serve` checks them.

    Also checks that the port is free, before any worker starts.

    Raises:
        UsageError: a bad setting or a port in use (one line).
    """
    from envs.server.app import sessions_per_client
    from envs.server.operator_config import OperatorConfigError, operator_kwargs
    from turngym.serving import server_settings

    if not 1 <= args.workers <= 256:
        raise UsageError(f"--workers {args.workers}: give a number of processes from 1 to 256")
    shared = server_settings(args, token_env="TURNGYM_ENV_TOKEN")
    if not args.idle_timeout > 0:
        raise UsageError(f"--idle-timeout must be a number of seconds > 0, got {args.idle_timeout}")
    per_client = sessions_per_client(args)
    per_peer = getattr(args, "max_connections_per_client", None)
    per_peer = args.max_sessions if per_peer is None else per_peer
    if per_peer < 1:
        raise UsageError(f"--max-connections-per-client must be at least 1, got {per_peer}")
    try:
        operator = operator_kwargs(args.env_config, args.env_kwargs)
    except OperatorConfigError as exc:
        raise UsageError(str(exc)) from None
    return {
        "max_sessions": args.max_sessions,
        "max_sessions_per_client": per_client,
        "max_concurrency": shared["max_concurrency"],
        "max_queue": shared["max_queue"],
        "idle_timeout_s": args.idle_timeout,
        "token": shared["token"],
        "max_body_mb": args.max_body_mb,
        "body_timeout_s": shared["body_timeout_s"],
        "operator_kwargs": operator,
        "log_level": args.log_level,
        "trusted_proxies": shared["trusted_proxies"],
        "max_connections_per_client": per_peer,
        "imports": list(getattr(args, "imports", []) or []),
    }


class _Worker:
    """One worker process and the front's end of its socket pair."""

    def __init__(self, index: int, settings: dict[str, Any]):
        self.index = index
        self.front, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The token goes over stdin, not argv, which `ps` shows to every user.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "envs.server.worker", str(child.fileno())],
            stdin=subprocess.PIPE,
            pass_fds=(child.fileno(),),
        )
        child.close()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({**settings, "index": index}).encode())
        self.proc.stdin.close()

    def hand(self, conn: socket.socket) -> bool:
        """Pass `conn` to the worker; False when the worker is gone."""
        try:
            socket.send_fds(self.front, [b"c"], [conn.fileno()])
            return True
        except OSError:
            return False

    def stop(self) -> None:
        """Close the socket pair (the worker stops on its own), then make sure it did."""
        with contextlib.suppress(OSError):
            self.front.close()
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def route(head: bytes, workers: int, turn: int) -> int | None:
    """The worker a connection goes to, from its first bytes; None while its head is incomplete.

    Example:
        >>> route(b"POST /v1/sessions/w2-ab/step HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n", 4, 0)
        2
        >>> route(b"GET /health HTTP/1.1\\r\\n\\r\\n", 4, 5), route(b"GET /health HTTP/1.1\\r\\nHost: x", 4, 5)
        (1, None)
    """
    if _HEAD_END.search(head) is None and len(head) < _PEEK_BYTES:
        return None  # headers still coming: held here, under the front's deadline
    match = _REQUEST_LINE.match(head)
    if match is None:
        return turn % workers  # not HTTP/1: a worker answers 400
    path = match[1].split(b"?", 1)[0].decode("latin-1")
    if path.startswith("/v1/sessions/"):
        owner = worker_of(path[len("/v1/sessions/") :].split("/", 1)[0])
        if owner is not None and owner[0] < workers:
            return owner[0]
    return turn % workers


# accept() errors that mean this process (or the system) has no descriptor or buffer to spare.
_OUT_OF_DESCRIPTORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class _Shedder:
    """What the front does when `accept` finds no descriptor free: shed a connection instead of dying.

    The oldest connection still waiting for its request line is closed first: a client that connects
    and sends nothing (idle, or an attack) gives its descriptor to the next one, while a client that
    sends its request at once is handed to a worker within one turn and rarely waits. With nothing
    waiting, a spare descriptor held for the purpose is closed to accept the next connection and close
    it at once, so the listener's backlog drains instead of staying readable in a busy loop.
    """

    def __init__(self, selector: selectors.BaseSelector):
        self.selector = selector
        self.spare: int | None = self._spare()
        self.shed_total = 0
        self._said = 0.0

    @staticmethod
    def _spare() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return None

    def shed(self, listener: socket.socket, waiting: _WaitingRoom, partial: set) -> bool:
        """Free a descriptor by shedding one connection; False when none could be freed (try later)."""
        if waiting:
            oldest = waiting.oldest()
            waiting.drop(oldest)
            if oldest in partial:
                partial.discard(oldest)
            else:
                self.selector.unregister(oldest)
            oldest.close()
        elif self.spare is not None:
            os.close(self.spare)
            with contextlib.suppress(OSError):
                listener.accept()[0].close()
            self.spare = self._spare()
        else:
            return False
        self.shed_total += 1
        now = time.monotonic()
        if now - self._said > 10:
            self._said = now
            print(
                f"envs serve: out of file descriptors; shedding the oldest idle connections "
                f"({self.shed_total} so far): raise `ulimit -n`, or put a proxy with connection limits in front",
                file=sys.stderr,
                flush=True,
            )
        return True


def _wait_ready(paths: list[str], workers: list[_Worker], ready_s: float = 120.0) -> None:
    import httpx

    deadline = time.monotonic() + ready_s
    for path, worker in zip(paths, workers, strict=True):
        with httpx.Client(transport=httpx.HTTPTransport(uds=path), timeout=2) as client:
            while True:
                if worker.proc.poll() is not None:
                    raise UsageError(
                        f"worker {worker.index} exited with status {worker.proc.returncode} at start"
                    )
                with contextlib.suppress(httpx.TransportError):
                    if client.get("http://worker/health").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise UsageError(f"worker {worker.index} did not start within {ready_s:g}s")
                time.sleep(0.05)


def serve_workers(args: argparse.Namespace) -> int:
    """Run the front and `args.workers` workers until interrupted (SIGINT/SIGTERM stop all of them).

    Args:
        args: the `serve` options plus `workers`.

    Returns:
        The exit status.
    """
    settings = worker_settings(args)
    family = socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    listener = socket.create_server((args.host, args.port), family=family, backlog=2048)
    listener.setblocking(False)
    folder = tempfile.mkdtemp(prefix="turngym-env-workers-")
    settings["sockets"] = [os.path.join(folder, f"w{i}.sock") for i in range(args.workers)]
    workers: list[_Worker] = []
    stopping = []
    previous = {sig: signal.signal(sig, lambda *_: stopping.append(1)) for sig in (signal.SIGTERM,)}
    try:
        workers = [_Worker(i, settings) for i in range(args.workers)]
        _wait_ready(settings["sockets"], workers)
        print(
            f"envs serve: {args.workers} workers on http://{args.host}:{args.port} (pids "
            f"{', '.join(str(w.proc.pid) for w in workers)})",
            file=sys.stderr,
            flush=True,
        )
        _front(listener, workers, settings, args.body_timeout, stopping)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
        for worker in workers:
            worker.stop()
        for path in settings["sockets"]:
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return 0


class _WaitingRoom:
    """Connections accepted and not yet handed over (head not all in): since when, and per peer.

    Args:
        per_peer: Connections one peer may have waiting; `admit` refuses more.
    """

    def __init__(self, per_peer: int):
        self.per_peer = per_peer
        self.since: dict[socket.socket, float] = {}
        self._peer: dict[socket.socket, str] = {}
        self._count: collections.Counter[str] = collections.Counter()

    def __bool__(self) -> bool:
        return bool(self.since)

    def __contains__(self, sock: object) -> bool:
        return sock in self.since

    def admit(self, conn: socket.socket, address: Any) -> bool:
        """Count `conn` in for its peer; False (nothing counted) when the peer has its share waiting."""
        peer = peer_key(address)
        if self._count[peer] >= self.per_peer:
            return False
        self._count[peer] += 1
        self._peer[conn], self.since[conn] = peer, time.monotonic()
        return True

    def drop(self, conn: socket.socket) -> None:
        """`conn` no longer waits (handed over, shed or closed)."""
        if self.since.pop(conn, None) is None:
            return
        peer = self._peer.pop(conn)
        self._count[peer] -= 1
        if self._count[peer] <= 0:
            del self._count[peer]

    def oldest(self) -> socket.socket:
        """The connection waiting longest."""
        return next(iter(self.since))

    def older_than(self, seconds: float) -> list[socket.socket]:
        """Connections waiting longer than `seconds`."""
        now = time.monotonic()
        return [s for s, since in self.since.items() if now - since > seconds]


def _front(
    listener: socket.socket, workers: list[_Worker], settings: dict, wait_s: float, stopping: list
) -> None:
    """Accept, peek, hand over; restart a worker that exited. Returns when `stopping` is set."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    shedder = _Shedder(selector)
    waiting = _WaitingRoom(settings.get("max_connections_per_client", DEFAULT_CONNECTIONS_PER_PEER))
    partial: set[socket.socket] = set()  # some bytes in but not a whole head: peeked again soon
    turn, polled = 0, 0.0
    while not stopping:
        ready = [key.fileobj for key, _ in selector.select(timeout=_PARTIAL_POLL_S if partial else 0.5)]
        # A peek leaves the bytes in place, so a socket holding part of its head stays readable: those are
        # taken out of the selector and peeked again every 50 ms instead of in a busy loop.
        again = time.monotonic() - polled >= _PARTIAL_POLL_S
        if again:
            polled = time.monotonic()
        for sock in [*ready, *[s for s in partial if s not in ready and again]]:
            if sock.fileno() == -1:  # shed while accepting, earlier in this turn
                continue
            if sock is listener:
                while True:
                    try:
                        conn, address = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as exc:
                        if exc.errno not in _OUT_OF_DESCRIPTORS or not shedder.shed(
                            listener, waiting, partial
                        ):
                            break
                        continue
                    if not waiting.admit(conn, address):
                        conn.close()  # this peer already has its share of connections waiting
                        continue
                    conn.setblocking(False)
                    selector.register(conn, selectors.EVENT_READ)
                continue
            try:
                head = sock.recv(_PEEK_BYTES, socket.MSG_PEEK)
            except BlockingIOError:
                continue
            except OSError:
                head = b""
            target = route(head, len(workers), turn) if head else None
            if head and target is None:
                if sock not in partial:
                    selector.unregister(sock)
                    partial.add(sock)
                continue
            if sock in partial:
                partial.discard(sock)
            else:
                selector.unregister(sock)
            waiting.drop(sock)
            if head:  # else: closed before a request
                turn += 1
                sock.setblocking(True)
                workers[target].hand(sock)
            sock.close()  # the worker holds its own copy now
        for sock in waiting.older_than(wait_s):  # no whole head in time: closed, never handed over
            if sock in partial:
                partial.discard(sock)
            else:
                selector.unregister(sock)
            waiting.drop(sock)
            sock.close()
        for i, worker in enumerate(workers):
            if worker.proc.poll() is not None:
                print(
                    f"envs serve: worker {i} exited with status {worker.proc.returncode}; starting it again "
                    "(its sessions are lost)",
                    file=sys.stderr,
                    flush=True,
                )
                worker.stop()
                try:
                    workers[i] = _Worker(i, settings)
                except OSError as exc:  # out of descriptors or processes: the next turn tries again
                    print(f"envs serve: cannot start worker {i} again ({exc}); retrying", file=sys.stderr)
                    time.sleep(0.5)
