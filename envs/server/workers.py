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
"""

from __future__ import annotations

import argparse
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

from envs.server.worker import worker_of
from turngym.common.cli_errors import UsageError

_REQUEST_LINE = re.compile(rb"^[A-Z]{3,8} (\S+) HTTP/1\.[01]\r?\n")
_PEEK_BYTES = 4096


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
    """The worker a connection goes to, from its first bytes; None while the request line is incomplete.

    Example:
        >>> route(b"POST /v1/sessions/w2-ab/step HTTP/1.1\\r\\n", 4, 0), route(b"GET /health HTTP/1.1\\r\\n", 4, 5)
        (2, 1)
    """
    match = _REQUEST_LINE.match(head)
    if match is None:
        return None if b"\n" not in head and len(head) < _PEEK_BYTES else turn % workers
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

    def shed(self, listener: socket.socket, waiting: dict[socket.socket, float], partial: set) -> bool:
        """Free a descriptor by shedding one connection; False when none could be freed (try later)."""
        if waiting:
            oldest = next(iter(waiting))
            del waiting[oldest]
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


def _front(
    listener: socket.socket, workers: list[_Worker], settings: dict, wait_s: float, stopping: list
) -> None:
    """Accept, peek, hand over; restart a worker that exited. Returns when `stopping` is set."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    shedder = _Shedder(selector)
    waiting: dict[socket.socket, float] = {}  # accepted, request line not in yet: since when
    partial: set[socket.socket] = set()  # some bytes in but not a whole request line: peeked again soon
    turn = 0
    while not stopping:
        ready = [key.fileobj for key, _ in selector.select(timeout=0.01 if partial else 0.5)]
        # A peek leaves the bytes in place, so a socket holding half a line stays readable: those are
        # taken out of the selector and peeked again every 10 ms instead of in a busy loop.
        for sock in [*ready, *[s for s in partial if s not in ready]]:
            if sock.fileno() == -1:  # shed while accepting, earlier in this turn
                continue
            if sock is listener:
                while True:
                    try:
                        conn, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as exc:
                        if exc.errno not in _OUT_OF_DESCRIPTORS or not shedder.shed(
                            listener, waiting, partial
                        ):
                            break
                        continue
                    conn.setblocking(False)
                    waiting[conn] = time.monotonic()
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
            waiting.pop(sock, None)
            if head:  # else: closed before a request
                turn += 1
                sock.setblocking(True)
                workers[target].hand(sock)
            sock.close()  # the worker holds its own copy now
        now = time.monotonic()
        for sock in [s for s, since in waiting.items() if now - since > wait_s]:
            if sock in partial:
                partial.discard(sock)
            else:
                selector.unregister(sock)
            del waiting[sock]
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
