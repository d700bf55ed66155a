"""The admission gate: a bounded number of requests running, a bounded number waiting, the rest refused."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator

from turngym.serving.errors import RequestError


class AdmissionGate:
    """At most `concurrency` requests run at once and `queue` more wait; beyond that, 429 at once.

    A refused request costs nothing: no body is buffered and nothing waits, so a flood cannot pile up
    memory or handlers. The refusal carries `Retry-After`, estimated from how long recent runs took and
    how many wait. Counting in (`admit`) and running (`slot`) are separate steps, so a server can count
    a request from its first byte and give it a running slot later; `gate.admitted_slot()` does both.

    Args:
        concurrency: requests running at once (at least 1).
        queue: requests admitted to wait beyond those (0: none wait).
        what: what the server calls one request in its messages (``"runs"``, ``"env calls"``).

    Example:
        >>> gate = AdmissionGate(concurrency=1, queue=0, what="runs")
        >>> gate.admit()
        >>> try:
        ...     gate.admit()
        ... except RequestError as exc:
        ...     print(exc.status, exc.code, exc.headers)
        429 overloaded {'Retry-After': '2'}
        >>> gate.leave()
    """

    def __init__(self, concurrency: int, queue: int, what: str = "requests") -> None:
        if concurrency < 1 or queue < 0:
            raise ValueError(f"concurrency must be >= 1 and queue >= 0, got {concurrency} and {queue}")
        self.concurrency, self.queue, self.what = concurrency, queue, what
        self.admitted = 0  # running + waiting
        self.running = 0
        self.mean_run_s = 1.0  # moving average of run times, for Retry-After
        # Made on first use: a Semaphore belongs to the event loop that serves, not to the one (if any)
        # that was running when the app was built.
        self._sem: asyncio.Semaphore | None = None

    @property
    def waiting(self) -> int:
        """Requests admitted and not yet running."""
        return self.admitted - self.running

    def admit(self) -> None:
        """Count a request in, or raise 429 `overloaded` with Retry-After when all slots are taken."""
        if self.admitted >= self.concurrency + self.queue:
            retry = min(60, max(1, math.ceil(self.mean_run_s * (self.waiting + 1) / self.concurrency)))
            raise RequestError(
                429,
                "overloaded",
                f"server busy: {self.running} {self.what} running and {self.waiting} waiting (limits "
                f"{self.concurrency} and {self.queue}); retry after {retry}s",
                retry_after=retry,
            )
        self.admitted += 1

    def leave(self) -> None:
        """Count a request out (after `admit`, whether it ran or not)."""
        self.admitted -= 1

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for a running slot (the request must be admitted), hold it for the block, time the run."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        async with self._sem:
            self.running += 1
            begin = time.perf_counter()
            try:
                yield
            finally:
                self.running -= 1
                self.mean_run_s = 0.8 * self.mean_run_s + 0.2 * (time.perf_counter() - begin)

    @contextlib.asynccontextmanager
    async def admitted_slot(self) -> AsyncIterator[None]:
        """`admit`, then `slot`, for the block; `leave` when it ends (also when refused while waiting)."""
        self.admit()
        try:
            async with self.slot():
                yield
        finally:
            self.leave()
