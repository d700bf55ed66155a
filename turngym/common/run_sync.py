"""Run a coroutine to completion from synchronous code, inside or outside a running event loop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, wait_for_threads: bool = True) -> T:
    """Await `coro` from sync code; uses a worker thread when a loop is already running here.

    Args:
        coro: The coroutine to run on a fresh event loop.
        wait_for_threads: False returns as soon as `coro` is done, without waiting for the loop's
            worker threads (`asyncio.to_thread`, a sync tool's `run`). A call that a deadline cut
            off keeps its thread until it finishes; with True (as `asyncio.run`) the caller would
            wait for it too.

    Returns:
        What `coro` returns; what it raises is raised here, in the caller's thread.

    Example:
        >>> async def double(x):
        ...     return 2 * x
        >>> run_sync(double(21))
        42
    """
    import asyncio  # here, not at module level: asyncio costs ~15 ms and most envs never need it

    run: Callable[[Coroutine[Any, Any, T]], T] = asyncio.run if wait_for_threads else _run_without_joining
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = run(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name="turngym-run-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _run_without_joining(coro: Coroutine[Any, Any, T]) -> T:
    # `asyncio.run` without its last step, which joins the default executor's threads.
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # shuts the default executor down without joining its threads
