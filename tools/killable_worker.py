"""`WorkerPool`: CPU-bound requests answered by worker processes that are killed at their deadline.

A thread cannot be stopped in the middle of a C-level operation (a big-integer power, a huge `round`)
and an `async def` runs on the event loop, so a tool's CPU-bound work goes to a process: a worker is
`python -I -S <script>` (standard library only) that reads one JSON request per line on stdin and
writes one JSON answer per line on stdout. A request that is not answered by its deadline, or whose
caller is cancelled, gets its worker SIGKILLed; the next request starts a fresh one. Idle workers are
kept for reuse (a request then costs a pipe round trip, not an interpreter start), at most `max_idle`.

A pool keeps at most `max_workers` workers alive, busy or idle, whatever the caller's own concurrency:
before, every request that found no idle worker started one, so 8 concurrent steps of 8 calculator
calls had 48 workers alive at once (589 MB), and a served env's `--max-concurrency 64` would have
allowed 512. A request beyond the cap waits for a worker, within its own deadline (`WorkerBusy` past it).
The default is `$TURNGYM_TOOL_WORKERS`, else the larger of 4 and the machine's CPU count.

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


class WorkerBusy(WorkerTimeout):
    """Every worker the pool may have was busy until the request's deadline; nothing was run."""


class WorkerFailed(RuntimeError):
    """The worker died or wrote something that is not an answer."""


def default_max_workers() -> int:
    """`$TURNGYM_TOOL_WORKERS`, else max(4, CPU count): workers one pool keeps alive at most.

    Raises:
        ValueError: the variable is not a whole number from 1 to 1024 (one line).
    """
    given = os.environ.get("TURNGYM_TOOL_WORKERS", "").strip()
    if not given:
        return max(4, os.cpu_count() or 1)
    if not given.isdigit() or not 1 <= int(given) <= 1024:
        raise ValueError(
            f"TURNGYM_TOOL_WORKERS={given!r}: give a whole number of worker processes from 1 to 1024"
        )
    return int(given)


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
    """Worker processes of one script; each request is answered by one of them or times out.

    Args:
        script: The worker's script (standard library only).
        max_idle: Idle workers kept for reuse.
        max_workers: Workers alive at most, busy or idle (default `default_max_workers()`, read at the
            first request so that a server's setting applies to a pool made at import).
    """

    def __init__(self, script: str, max_idle: int = 4, max_workers: int | None = None) -> None:
        self.script = script
        self.max_idle = max_idle
        self._max_workers = max_workers
        self._idle: list[_Worker] = []
        self._alive = 0  # workers started and not yet killed, busy or idle
        self._changed = threading.Condition()  # a worker came back or was killed: waiters look again
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._pid = os.getpid()
        atexit.register(self.close)

    @property
    def max_workers(self) -> int:
        """Workers this pool keeps alive at most."""
        if self._max_workers is None:
            self._max_workers = default_max_workers()
        return self._max_workers

    @property
    def alive(self) -> int:
        """Workers alive now, busy or idle."""
        return self._alive

    def _try_take(self) -> _Worker | None:
        """An idle worker, a new one within the cap, or None (the caller waits); under `_changed`."""
        if self._pid != os.getpid():  # a forked child must not share its parent's pipes
            self._idle, self._alive, self._pid = [], 0, os.getpid()
        while self._idle:
            worker = self._idle.pop()
            if worker.proc.poll() is None:
                return worker
            self._alive -= 1
            worker.kill()
        if self._alive >= self.max_workers:
            return None
        self._alive += 1
        try:
            return _Worker(self.script)
        except BaseException:
            self._alive -= 1
            raise

    def _take(self, timeout_s: float) -> _Worker:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while (worker := self._try_take()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._busy(timeout_s)
                self._changed.wait(left)
        return worker

    async def _atake(self, timeout_s: float) -> _Worker:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout_s):
            while True:
                with self._changed:
                    worker = self._try_take()
                    if worker is not None:
                        return worker
                    woken: asyncio.Future[None] = loop.create_future()
                    self._waiters.append((loop, woken))
                try:
                    await woken
                finally:
                    with self._changed, contextlib.suppress(ValueError):
                        self._waiters.remove((loop, woken))

    def _busy(self, timeout_s: float) -> WorkerBusy:
        return WorkerBusy(f"all {self.max_workers} worker processes stayed busy for {timeout_s:g} s")

    def _tell(self) -> None:
        """Wake every waiter to look again (under `_changed`): a worker came back or a slot freed."""
        self._changed.notify_all()
        for loop, woken in self._waiters:
            loop.call_soon_threadsafe(lambda f=woken: f.done() or f.set_result(None))

    def _give_back(self, worker: _Worker) -> None:
        with self._changed:
            if worker.proc.poll() is None and len(self._idle) < self.max_idle:
                self._idle.append(worker)
                self._tell()
                return
        self._discard(worker)

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._changed:
            if self._pid == os.getpid():
                self._alive -= 1
            self._tell()

    def run(self, request: dict, timeout_s: float) -> dict:
        """The worker's answer to `request`, waiting at most `timeout_s` (blocking: off the event loop).

        Raises:
            WorkerTimeout: no answer in time; the worker was killed.
            WorkerFailed: the worker died (e.g. past its memory limit) or answered nonsense.
        """
        started = time.monotonic()
        worker = self._take(timeout_s)
        deadline = started + timeout_s  # the wait for a worker counts: the caller's deadline is one
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
            self._discard(worker)
            raise
        self._give_back(worker)
        return _answer(line)

    async def arun(self, request: dict, timeout_s: float) -> dict:
        """As `run`, awaited on the event loop without blocking it; cancelling kills the worker."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            worker = await self._atake(timeout_s)
        except TimeoutError:
            raise self._busy(timeout_s) from None
        try:
            worker.send(request)
            async with asyncio.timeout_at(deadline):
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
            self._discard(worker)
            raise WorkerTimeout(f"no answer after {timeout_s:g} s") from None
        except BaseException:
            self._discard(worker)
            raise
        self._give_back(worker)
        return _answer(line)

    def close(self) -> None:
        """Kill the idle workers (at exit; a later request starts new ones)."""
        with self._changed:
            idle, self._idle = self._idle, []
        for worker in idle:
            self._discard(worker)


def _answer(line: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(line)
    except ValueError:
        raise WorkerFailed(f"the worker wrote {line[:80]!r}, not a JSON answer") from None
    if not isinstance(answer, dict):
        raise WorkerFailed(f"the worker wrote {line[:80]!r}, not a JSON object")
    return answer
