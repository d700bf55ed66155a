"""`render_deadline`: a chat template's render stops with `RenderTimeout` once it runs past its time.

A chat template is code from whoever published the tokenizer. Jinja's sandbox keeps it from touching
the process (no attributes of internals, `range` capped at 100000 items) but not from looping: two nested
`range(100000)` loops, a loop over a message's text inside another, or a macro that calls itself twice
run for hours. The block registers its thread and deadline with one watchdog thread per process; past
the deadline the watchdog raises an exception in that thread (`PyThreadState_SetAsyncExc`), which
Python delivers at the next bytecode boundary, a loop's back edge included, so the render unwinds.
Nothing is traced: a render that ends in time pays a lock and a notify (a few microseconds).

The exception is a BaseException while it unwinds, so a template's or library's `except Exception`
cannot swallow it, and it is sent again every 0.1 s until the block is left; the block turns it into
`RenderTimeout`. What this does not bound: one C operation that runs long by itself (a huge integer
power), which no exception interrupts; the template's text and its inputs are the limits there.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Seconds one render may take: a real template renders a long conversation in milliseconds.
RENDER_TIMEOUT_S = 5.0
_RESEND_S = 0.1


class RenderTimeout(RuntimeError):
    """A chat template ran past its time bound (its loops or recursion, not the conversation's size)."""

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__(
            f"the chat template was still rendering after {seconds:g} s and was stopped; it loops or "
            "recurses without end: use a tokenizer whose chat template renders a conversation in one pass"
        )
        self.seconds = seconds


class _Expired(BaseException):
    """Raised inside the late thread; BaseException so that no `except Exception` on the way keeps it."""


@dataclass(eq=False)
class _Render:
    thread_id: int
    deadline: float
    sent: bool = False


_cond = threading.Condition()
_active: set[_Render] = set()
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
            for render in _active:
                if render.deadline <= now:
                    render.sent = True
                    _set_async(render.thread_id, _Expired)
                    render.deadline = now + _RESEND_S
                wake = render.deadline if wake is None else min(wake, render.deadline)
            _cond.wait(None if wake is None else max(wake - now, 0.001))


def _start_watchdog() -> None:
    global _watchdog_pid
    # A forked child has no watchdog thread (and none of its parent's renders): start its own.
    if _watchdog_pid != os.getpid():
        _active.clear()
        threading.Thread(target=_watch, name="turngym-render-deadline", daemon=True).start()
        _watchdog_pid = os.getpid()


@contextmanager
def render_deadline(seconds: float | None = RENDER_TIMEOUT_S) -> Iterator[None]:
    """Stop Python code running on this thread inside the block after `seconds` (None: no bound).

    Args:
        seconds: The time bound for everything the block renders.

    Raises:
        RenderTimeout: the block was still running at the deadline.

    Example:
        >>> import jinja2.sandbox
        >>> loop = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
        >>> template = jinja2.sandbox.ImmutableSandboxedEnvironment().from_string(loop)
        >>> with render_deadline(0.2):
        ...     template.render()
        Traceback (most recent call last):
        ...
        tools.render_deadline.RenderTimeout: the chat template was still rendering after 0.2 s and was stopped; ...
    """
    if seconds is None:
        yield
        return
    render = _Render(threading.get_ident(), time.monotonic() + seconds)
    with _cond:
        _start_watchdog()
        _active.add(render)
        _cond.notify()
    try:
        try:
            yield
        finally:
            with _cond:
                _active.discard(render)
                sent = render.sent
            if sent:
                _clear_async(render.thread_id, None)
    except _Expired:
        raise RenderTimeout(seconds) from None
