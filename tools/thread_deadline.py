"""`thread_deadline`: Python code running on this thread inside the block stops once it runs past its time.

For code that must run where it is (an event loop's thread, a worker thread) and cannot be moved into a
process: a chat template's render, one step of a tool's `async def run`, a plain `def run` in its
worker thread. The block registers its thread and deadline with one watchdog thread per process; past
the deadline the watchdog raises an exception in that thread (`PyThreadState_SetAsyncExc`), which
Python delivers at the next bytecode boundary, a loop's back edge included, so the code unwinds.
Nothing is traced: a block that ends in time pays a lock and a notify (a few microseconds).

The exception is a BaseException while it unwinds, so an `except Exception` on the way cannot swallow
it, and it is sent again every 0.1 s until the block is left; the block turns it into `DeadlineExceeded`.
What this does not stop: one C call that runs long by itself (a huge integer power, a blocking read);
such work belongs in a process that can be killed (`tools.killable_worker`).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_RESEND_S = 0.1


class DeadlineExceeded(RuntimeError):
    """The block was still running at its deadline and was stopped."""

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__(f"still running after {seconds:g} s and stopped")
        self.seconds = seconds


class _Expired(BaseException):
    """Raised inside the late thread; BaseException so that no `except Exception` on the way keeps it."""


@dataclass(eq=False)
class _Block:
    thread_id: int
    deadline: float
    sent: bool = False


_cond = threading.Condition()
_active: set[_Block] = set()
_watchdog_pid: int | None = None
# Prototypes of our own (not ctypes.pythonapi's shared function object, whose argtypes others may set).
_set_async = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
# The same C function with NULL for the exception: drops one that is pending and not yet delivered.
_clear_async = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


def _watch() -> None:
    with _cond:
        while True:
            now = time.monotonic()
            wake = None
            for block in _active:
                if block.deadline <= now:
                    block.sent = True
                    _set_async(block.thread_id, _Expired)
                    block.deadline = now + _RESEND_S
                wake = block.deadline if wake is None else min(wake, block.deadline)
            _cond.wait(None if wake is None else max(wake - now, 0.001))


def _start_watchdog() -> None:
    global _watchdog_pid
    # A forked child has no watchdog thread (and none of its parent's blocks): start its own.
    if _watchdog_pid != os.getpid():
        _active.clear()
        threading.Thread(target=_watch, name="turngym-thread-deadline", daemon=True).start()
        _watchdog_pid = os.getpid()


@contextmanager
def thread_deadline(seconds: float | None) -> Iterator[None]:
    """Stop Python code running on this thread inside the block after `seconds` (None: no bound).

    Args:
        seconds: The time bound for the block.

    Raises:
        DeadlineExceeded: the block was still running at the deadline.

    Example:
        >>> with thread_deadline(0.2):
        ...     while True:
        ...         pass
        Traceback (most recent call last):
        ...
        tools.thread_deadline.DeadlineExceeded: still running after 0.2 s and stopped
    """
    if seconds is None:
        yield
        return
    block = _Block(threading.get_ident(), time.monotonic() + seconds)
    with _cond:
        _start_watchdog()
        _active.add(block)
        _cond.notify()
    try:
        try:
            yield
        finally:
            with _cond:
                _active.discard(block)
                sent = block.sent
            if sent:
                _clear_async(block.thread_id, None)
    except _Expired:
        raise DeadlineExceeded(seconds) from None
