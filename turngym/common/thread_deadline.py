"""`call_with_deadline`: a call on this thread whose Python code is stopped once it runs past its time.

For code that must run where it is (an event loop's thread, a worker thread) and cannot be moved into a
process: a chat template's render, one step of a tool's `async def run`, a plain `def run` in its
worker thread. The call registers its thread and deadline with one watchdog thread per process; past
the deadline the watchdog raises an exception in that thread (`PyThreadState_SetAsyncExc`), which
Python delivers at the next bytecode boundary, a loop's back edge included, so the code unwinds.
Nothing is traced: a call that ends in time pays two lock round trips (a few microseconds).

Where the exception lands is what makes this safe, so the rules are strict:
- it is sent once per call, and only while the call is registered; registering, calling and
  unregistering happen inside one `try` of one frame, so wherever it lands, that `try` catches it;
  one still pending when the call unregisters is dropped, so none ever reaches code after the call;
- it is a BaseException while it unwinds, so an `except Exception` in the code it stops cannot keep it;
  the call then raises `DeadlineExceeded`;
- the bookkeeping uses C-level locks only (`threading.Lock`), so an exception landing there cannot
  leave a lock held.
There is no context-manager form on purpose: a `with` block's `__exit__` is a call of its own, and an
exception landing at its first instruction would escape the block. What this does not stop: one C call
that runs long by itself (a huge integer power, a blocking read); such work belongs in a process that
can be killed (`tools.killable_worker`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(RuntimeError):
    """The call was still running at its deadline and was stopped."""

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__(f"still running after {seconds:g} s and stopped")
        self.seconds = seconds


class _Expired(BaseException):
    """Raised inside the late thread; BaseException so that no `except Exception` on the way keeps it."""


@dataclass(eq=False)
class _Call:
    thread_id: int
    deadline: float
    sent: bool = False


_lock = threading.Lock()
_wake = threading.Lock()  # held by the watchdog; released to wake it early
_active: set[_Call] = set()
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
    while True:
        now = time.monotonic()
        wake = None
        with _lock:
            for call in _active:
                if call.sent:
                    continue
                if call.deadline <= now:
                    call.sent = True
                    _set_async(call.thread_id, _Expired)
                    continue
                wake = call.deadline if wake is None else min(wake, call.deadline)
        _wake.acquire(timeout=-1 if wake is None else max(wake - now, 0.001))


def _start_watchdog() -> None:
    global _watchdog_pid
    # A forked child has no watchdog thread (and none of its parent's calls): start its own.
    if _watchdog_pid != os.getpid():
        _active.clear()
        threading.Thread(target=_watch, name="turngym-thread-deadline", daemon=True).start()
        _watchdog_pid = os.getpid()


def _poke() -> None:
    with contextlib.suppress(RuntimeError):  # already released: the watchdog is awake
        _wake.release()


def _leave(call: _Call) -> bool:
    """Unregister `call`; True when its exception arrived while leaving."""
    arrived = False
    while True:
        try:
            with _lock:
                _active.discard(call)
                sent = call.sent
            if sent:
                _clear_async(call.thread_id, None)  # sent but not delivered yet: never delivered now
            return arrived
        except _Expired:
            arrived = True


def call_with_deadline(seconds: float | None, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`, its Python code stopped after `seconds` (None: no bound).

    Args:
        seconds: The time bound for the call.
        fn: What to call, on this thread.
        *args: Its positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        What `fn` returns.

    Raises:
        DeadlineExceeded: the call was still running at the deadline.

    Example:
        >>> def spin():
        ...     while True:
        ...         pass
        >>> call_with_deadline(0.2, spin)
        Traceback (most recent call last):
        ...
        turngym.common.thread_deadline.DeadlineExceeded: still running after 0.2 s and stopped
    """
    if seconds is None:
        return fn(*args, **kwargs)
    call = _Call(threading.get_ident(), time.monotonic() + seconds)
    try:
        try:
            with _lock:
                if _watchdog_pid != os.getpid():
                    _start_watchdog()
                _active.add(call)
            _poke()
            out = fn(*args, **kwargs)
        finally:
            expired = _leave(call)
    except _Expired:
        _leave(call)  # the exception may have landed in the `finally` before it unregistered
        raise DeadlineExceeded(seconds) from None
    if expired:
        raise DeadlineExceeded(seconds)
    return out
