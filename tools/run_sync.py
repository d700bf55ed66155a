"""Run a coroutine to completion from synchronous code, inside or outside a running event loop."""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` from sync code; uses a worker thread when a loop is already running here."""
    import asyncio  # here, not at module level: asyncio costs ~15 ms and most envs never need it

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=target, name="turngym-run-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
