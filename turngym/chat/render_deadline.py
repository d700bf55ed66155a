"""`bounded_render`: a chat template's render stops with `RenderTimeout` once it runs past its time.

A chat template is code from whoever published the tokenizer. Jinja's sandbox keeps it from touching
the process (no attributes of internals, `range` capped at 100000 items) but not from looping: two nested
`range(100000)` loops, a loop over a message's text inside another, or a macro that calls itself twice
run for hours. The render runs under `turngym.common.thread_deadline.call_with_deadline`: past the deadline an exception is raised
in the rendering thread at the next bytecode, a loop's back edge included, and the render unwinds. A
render that ends in time pays a few microseconds. What this does not bound: one C operation that runs
long by itself (a huge integer power); the template's text and its inputs are the limits there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from turngym.common.thread_deadline import DeadlineExceeded, call_with_deadline

T = TypeVar("T")

#: Seconds one render may take: a real template renders a long conversation in milliseconds.
RENDER_TIMEOUT_S = 5.0


class RenderTimeout(RuntimeError):
    """A chat template ran past its time bound (its loops or recursion, not the conversation's size)."""

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__(
            f"the chat template was still rendering after {seconds:g} s and was stopped; it loops or "
            "recurses without end: use a tokenizer whose chat template renders a conversation in one pass"
        )
        self.seconds = seconds


def bounded_render(seconds: float | None, render: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`render(*args, **kwargs)` (e.g. `tokenizer.apply_chat_template`), stopped after `seconds`.

    Args:
        seconds: The time bound (None: none).
        render: The rendering call.
        *args: Its positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        What `render` returns.

    Raises:
        RenderTimeout: the render was still running at the deadline.

    Example:
        >>> import jinja2.sandbox
        >>> loop = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
        >>> template = jinja2.sandbox.ImmutableSandboxedEnvironment().from_string(loop)
        >>> bounded_render(0.2, template.render)
        Traceback (most recent call last):
        ...
        turngym.chat.render_deadline.RenderTimeout: the chat template was still rendering after 0.2 s and was stopped; ...
    """
    try:
        return call_with_deadline(seconds, render, *args, **kwargs)
    except DeadlineExceeded:
        raise RenderTimeout(seconds or 0.0) from None
