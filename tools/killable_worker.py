"""`WorkerPool`: CPU-bound requests answered by worker processes that are killed at their deadline.

A thread cannot be stopped in the middle of a C-level operation (a big-integer power, a huge `round`)
and an `async def` runs on the event loop, so a tool's CPU-bound work goes to a process: a worker is
`python -I -S <script>` (standard library only) that reads one JSON request per line on stdin and
writes one JSON answer per line on stdout. A request that is not answered by its deadline, or whose
caller is cancelled, gets its worker SIGKILLed; the next request starts a fresh one. Idle workers are
kept for reuse (a request then costs a pipe round trip, not an interpreter start), at most `max_idle`.

`arun` waits on the event loop without blocking it (the worker's stdout is watched with `add_reader`);
`run` is the blocking form for code that is already off the loop (an env's reset in a worker thread).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any


class WorkerTimeout(TimeoutError):
    """The worker did not answer by its deadline and was killed."""


class WorkerFailed(RuntimeError):
    """The worker died or wrote something that is not an answer."""


class _Worker:
    def __init__(self, script: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            start_new_session=True,  # a Ctrl-C to the terminal's group is the parent's to handle
        )
        self.fd = self.proc.stdout.fileno()
        self.buffer = b""

    def send(self, request: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        except OSError as exc:  # BrokenPipeError: it died since it was last used
            raise WorkerFailed(f"the worker process died ({exc})") from None

    def take_line(self) -> bytes | None:
        """A complete answer line from what has been read, or None."""
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def read_some(self) -> bool:
        """Read what is there; False at end of file (the worker died)."""
        chunk = os.read(self.fd, 1 << 16)
        self.buffer += chunk
        return bool(chunk)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class WorkerPool:
    """Worker processes of one script; each request is answered by one of them or times out."""

    def __init__(self, script: str, max_idle: int = 4) -> None:
        self.script = script
        self.max_idle = max_idle
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        atexit.register(self.close)

    def _take(self) -> _Worker:
        with self._lock:
            if self._pid != os.getpid():  # a forked child must not share its parent's pipes
                self._idle, self._pid = [], os.getpid()
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                worker.kill()
        return _Worker(self.script)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if worker.proc.poll() is None and len(self._idle) < self.max_idle:
                self._idle.append(worker)
                return
        worker.kill()

    def run(self, request: dict, timeout_s: float) -> dict:
        """The worker's answer to `request`, waiting at most `timeout_s` (blocking: off the event loop).

        Raises:
            WorkerTimeout: no answer in time; the worker was killed.
            WorkerFailed: the worker died (e.g. past its memory limit) or answered nonsense.
        """
        worker = self._take()
        deadline = time.monotonic() + timeout_s
        try:
            worker.send(request)
            while (line := worker.take_line()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerTimeout(f"no answer after {timeout_s:g} s")
                ready, _, _ = select.select([worker.fd], [], [], left)
                if ready and not worker.read_some():
                    raise WorkerFailed("the worker process died")
        except BaseException:
            worker.kill()
            raise
        self._give_back(worker)
        return _answer(line)

    async def arun(self, request: dict, timeout_s: float) -> dict:
        """As `run`, awaited on the event loop without blocking it; cancelling kills the worker."""
        loop = asyncio.get_running_loop()
        worker = self._take()
        try:
            worker.send(request)
            async with asyncio.timeout(timeout_s):
                while (line := worker.take_line()) is None:
                    ready: asyncio.Future[None] = loop.create_future()
                    loop.add_reader(worker.fd, lambda f=ready: f.done() or f.set_result(None))
                    try:
                        await ready
                    finally:
                        loop.remove_reader(worker.fd)
                    if not worker.read_some():
                        raise WorkerFailed("the worker process died")
        except TimeoutError:
            worker.kill()
            raise WorkerTimeout(f"no answer after {timeout_s:g} s") from None
        except BaseException:
            worker.kill()
            raise
        self._give_back(worker)
        return _answer(line)

    def close(self) -> None:
        """Kill the idle workers (at exit; a later request starts new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def _answer(line: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(line)
    except ValueError:
        raise WorkerFailed(f"the worker wrote {line[:80]!r}, not a JSON answer") from None
    if not isinstance(answer, dict):
        raise WorkerFailed(f"the worker wrote {line[:80]!r}, not a JSON object")
    return answer
