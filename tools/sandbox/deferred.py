"""Sandbox housekeeping off a run's critical path: one background thread for work whose result the caller
does not wait for (removing an emptied run's cgroup and work dir, making spare runs).

`flush()` waits for everything handed over so far; at interpreter exit the queue is run to its end
(concurrent.futures joins its workers), so nothing handed over is lost on a normal exit.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

_executor: concurrent.futures.ThreadPoolExecutor | None = None
_pending: set[concurrent.futures.Future] = set()
_lock = threading.Lock()
MAX_PENDING = 64  # past this many queued jobs the caller does its own (the thread has fallen behind)


def _forget_after_fork() -> None:
    # A forked child has no copy of the worker thread; it starts its own on first use.
    global _executor, _lock
    _executor, _lock = None, threading.Lock()
    _pending.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def defer(job: Callable[[], object]) -> None:
    """Run `job` on the housekeeping thread (here and now when the interpreter is shutting down or the
    thread is MAX_PENDING jobs behind)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sandbox-housekeeping")
        try:
            # Bounded: each queued teardown holds a mounted work dir and a uid.
            future = _executor.submit(_logged, job) if len(_pending) < MAX_PENDING else None
        except RuntimeError:  # interpreter shutdown: no new threads, so do it now
            future = None
        if future is not None:
            _pending.add(future)
            future.add_done_callback(_pending.discard)
    if future is None:
        _logged(job)


def _logged(job: Callable[[], object]) -> None:
    try:
        job()
    except Exception:  # housekeeping must never take the thread down with it
        log.exception("sandbox housekeeping failed")


def flush(timeout_s: float | None = None) -> None:
    """Wait until every job handed over so far has run."""
    with _lock:
        waiting = list(_pending)
    concurrent.futures.wait(waiting, timeout=timeout_s)
