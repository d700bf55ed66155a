"""`watched`: a tool's `async def run`, measured step by step on the event loop and stopped at its timeout.

Each stretch of an `async def` between two awaits runs on the event loop's thread, and while it runs
nothing else does: no other episode, no `/health`. A tool that computes there (a CPU-bound loop, a
blocking call) freezes the process, and `asyncio.wait_for` cannot fire its timeout until the stretch
ends. `watched(tool, coroutine)` drives the coroutine itself, timing every stretch:

- a stretch that computes longer than `WARN_STEP_S` (or blocks longer than `WARN_WALL_S`) is logged
  once per tool (what to do instead: a plain `def run`, which runs in a worker thread, or `await
  asyncio.to_thread(...)`), counted in `blocking_report()` and put in the result's metrics as
  `loop_blocked_s` by the caller;
- a stretch still running when the call's `timeout_s` is up is stopped (`turngym.common.thread_deadline` raises
  in the loop's thread at the next bytecode) and the call ends as a timeout. A single C call that blocks
  (`time.sleep`, a blocking read) cannot be interrupted this way; it is still measured and reported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Coroutine, Generator
from typing import Any

from turngym.common.thread_deadline import DeadlineExceeded, call_with_deadline

log = logging.getLogger(__name__)

#: A stretch of an async tool that computes longer than this (CPU time of the loop's thread, so that a
#: busy machine's preemption does not count against an innocent tool) holds every other episode up:
#: warned about and counted, as is any stretch over `WARN_WALL_S` (a blocking call such as time.sleep).
WARN_STEP_S = 0.1
WARN_WALL_S = 1.0

_lock = threading.Lock()
_report: dict[str, dict[str, float]] = {}
_warned: set[str] = set()


def blocking_report() -> dict[str, dict[str, float]]:
    """Per tool name: `calls` that held the loop past `WARN_STEP_S`, their `max_s` and `total_s`.

    Returns:
        A copy of the counts since the process started (or `reset_report`).

    Example:
        >>> blocking_report().get("some-tool-that-never-ran") is None
        True
    """
    with _lock:
        return {name: dict(stats) for name, stats in _report.items()}


def reset_report() -> None:
    """Forget the counts (and the warnings given)."""
    with _lock:
        _report.clear()
        _warned.clear()


def _record(name: str, seconds: float) -> None:
    with _lock:
        stats = _report.setdefault(name, {"calls": 0, "max_s": 0.0, "total_s": 0.0})
        stats["calls"] += 1
        stats["max_s"] = max(stats["max_s"], seconds)
        stats["total_s"] += seconds
        first = name not in _warned
        _warned.add(name)
    if first:
        log.warning(
            "tool `%s` held the event loop for %.2f s in one stretch of its async run, and every other "
            "episode waited; make run a plain def (it then runs in a worker thread) or await "
            "asyncio.to_thread(...) for the CPU-bound or blocking part",
            name,
            seconds,
        )


class Watched:
    """Awaitable: the coroutine, stepped with each step timed and bounded by the call's deadline."""

    def __init__(self, name: str, coroutine: Coroutine[Any, Any, Any], timeout_s: float | None) -> None:
        self.name = name
        self.coroutine = coroutine
        self.timeout_s = timeout_s
        #: The longest stretch the run held the loop, in seconds.
        self.longest_s = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        send: Any = None
        throw: BaseException | None = None
        try:
            while True:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
                started, cpu = time.monotonic(), time.thread_time()
                try:
                    if throw is not None:
                        yielded = call_with_deadline(left, self.coroutine.throw, throw)
                    else:
                        yielded = call_with_deadline(left, self.coroutine.send, send)
                except StopIteration as stop:
                    self._timed(time.monotonic() - started, time.thread_time() - cpu)
                    return stop.value
                except DeadlineExceeded:
                    self._timed(time.monotonic() - started, None)
                    raise TimeoutError(f"tool `{self.name}` held the event loop past its timeout") from None
                self._timed(time.monotonic() - started, time.thread_time() - cpu)
                try:
                    send, throw = (yield yielded), None
                except BaseException as exc:  # cancellation and the like go to the tool's coroutine
                    send, throw = None, exc
        finally:
            self.coroutine.close()

    def _timed(self, seconds: float, cpu_s: float | None) -> None:
        # cpu_s None: the stretch was stopped at the call's timeout, which is blocking by definition.
        if cpu_s is None or cpu_s > WARN_STEP_S or seconds > WARN_WALL_S:
            self.longest_s = max(self.longest_s, seconds)
            _record(self.name, seconds)


def watched(name: str, coroutine: Coroutine[Any, Any, Any], timeout_s: float | None) -> Watched:
    """`coroutine` as an awaitable whose every step is timed and stopped at `timeout_s` from now.

    Args:
        name: The tool's name, for the warning and `blocking_report`.
        coroutine: The tool's `run(...)` coroutine.
        timeout_s: The call's time bound (None: measured only).

    Returns:
        An awaitable with the coroutine's result; `longest_s` holds its longest stretch on the loop.
    """
    return Watched(name, coroutine, timeout_s)
